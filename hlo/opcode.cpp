#include "hlo/opcode.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace opprobe::hlo {
namespace {

struct OpcodeInfo {
  Opcode op;
  std::string_view name;
  int arity;
};

constexpr OpcodeInfo kOpcodes[] = {
#define OPPROBE_OPCODE_INFO(enum_name, text, arity) {Opcode::enum_name, text, arity},
    OPPROBE_HLO_OPCODE_LIST(OPPROBE_OPCODE_INFO)
#undef OPPROBE_OPCODE_INFO
};
constexpr int kNumOpcodes = static_cast<int>(sizeof(kOpcodes) / sizeof(kOpcodes[0]));

// The text names sorted for lookup (the enum list is sorted by enum name, as XLA's is).
struct NameIndex {
  std::array<int, kNumOpcodes> order{};
  constexpr NameIndex() {
    for (int i = 0; i < kNumOpcodes; ++i) order[i] = i;
    for (int i = 1; i < kNumOpcodes; ++i)  // insertion sort: constexpr-friendly and run once
      for (int j = i; j > 0 && kOpcodes[order[j]].name < kOpcodes[order[j - 1]].name; --j) {
        int t = order[j];
        order[j] = order[j - 1];
        order[j - 1] = t;
      }
  }
};
constexpr NameIndex kByName;

}  // namespace

std::string_view OpcodeName(Opcode op) { return kOpcodes[static_cast<int>(op)].name; }
int OpcodeArity(Opcode op) { return kOpcodes[static_cast<int>(op)].arity; }
int OpcodeCount() { return kNumOpcodes; }
Opcode OpcodeAt(int index) { return kOpcodes[index].op; }

std::optional<Opcode> OpcodeFromName(std::string_view name) {
  auto it = std::lower_bound(kByName.order.begin(), kByName.order.end(), name,
                             [](int idx, std::string_view n) { return kOpcodes[idx].name < n; });
  if (it == kByName.order.end() || kOpcodes[*it].name != name) return std::nullopt;
  return kOpcodes[*it].op;
}

bool IsElementwise(Opcode op) {
  switch (op) {
    case Opcode::kAbs: case Opcode::kAdd: case Opcode::kAnd: case Opcode::kAtan2: case Opcode::kCbrt:
    case Opcode::kCeil: case Opcode::kClamp: case Opcode::kClz: case Opcode::kCompare: case Opcode::kComplex:
    case Opcode::kConvert: case Opcode::kBitcastConvert: case Opcode::kCos: case Opcode::kDivide:
    case Opcode::kErf: case Opcode::kExp: case Opcode::kExpm1: case Opcode::kFloor: case Opcode::kImag:
    case Opcode::kIsFinite: case Opcode::kLog: case Opcode::kLog1p: case Opcode::kLogistic:
    case Opcode::kMaximum: case Opcode::kMinimum: case Opcode::kMultiply: case Opcode::kNegate:
    case Opcode::kNot: case Opcode::kOr: case Opcode::kPopulationCount: case Opcode::kPower:
    case Opcode::kReal: case Opcode::kReducePrecision: case Opcode::kRemainder:
    case Opcode::kRoundNearestAfz: case Opcode::kRoundNearestEven: case Opcode::kRsqrt:
    case Opcode::kSelect: case Opcode::kShiftLeft: case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical: case Opcode::kSign: case Opcode::kSin: case Opcode::kSqrt:
    case Opcode::kStochasticConvert: case Opcode::kSubtract: case Opcode::kTan: case Opcode::kTanh:
    case Opcode::kXor:
      return true;
    default:
      return false;
  }
}

}  // namespace opprobe::hlo
