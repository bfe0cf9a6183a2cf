#include "hlo/attribute_types.h"

namespace opprobe::hlo {

namespace {
constexpr std::string_view kDirections[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
constexpr std::string_view kFftTypes[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
constexpr std::string_view kTransposeA[] = {"NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"};
constexpr std::pair<Sharding::Type, std::string_view> kShardingTypes[] = {
    {Sharding::Type::kReplicated, "replicated"}, {Sharding::Type::kManual, "manual"},
    {Sharding::Type::kUnknown, "unknown"},       {Sharding::Type::kUnreduced, "unreduced"},
    {Sharding::Type::kMaximal, "maximal"},       {Sharding::Type::kTiled, "other"},
    {Sharding::Type::kTuple, "tuple"},           {Sharding::Type::kNamed, "named"}};
}  // namespace

std::string_view ComparisonDirectionName(ComparisonDirection d) { return kDirections[static_cast<int>(d)]; }

std::optional<ComparisonDirection> ComparisonDirectionFromName(std::string_view name) {
  for (int i = 0; i < 6; ++i)
    if (kDirections[i] == name) return static_cast<ComparisonDirection>(i);
  return std::nullopt;
}

std::string_view FftTypeName(FftType t) { return kFftTypes[static_cast<int>(t)]; }

std::optional<FftType> FftTypeFromName(std::string_view name) {
  for (int i = 0; i < 4; ++i)
    if (kFftTypes[i] == name) return static_cast<FftType>(i);
  return std::nullopt;
}

std::string_view TransposeAName(TransposeA t) { return kTransposeA[static_cast<int>(t) - 1]; }

std::optional<TransposeA> TransposeAFromName(std::string_view name) {
  for (int i = 0; i < 3; ++i)
    if (kTransposeA[i] == name) return static_cast<TransposeA>(i + 1);
  return std::nullopt;
}

std::string_view ShardingTypeName(Sharding::Type t) {
  for (const auto& [type, name] : kShardingTypes)
    if (type == t) return name;
  return "other";
}

std::optional<Sharding::Type> ShardingTypeFromName(std::string_view name) {
  for (const auto& [type, n] : kShardingTypes)
    if (n == name) return type;
  return std::nullopt;
}

}  // namespace opprobe::hlo
