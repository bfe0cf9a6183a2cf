#include "hlo/opcode.h"

#include <algorithm>
#include <array>
#include <cstdint>
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

// The text names hashed for the parser, which looks one up per instruction (a binary search compared 7 names):
// open addressing, twice as many slots as opcodes, built at compile time.
constexpr uint64_t NameHash(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h ^ (h >> 32);
}
constexpr size_t kNameSlots = [] {
  size_t n = 1;
  while (n < 2 * static_cast<size_t>(kNumOpcodes)) n *= 2;
  return n;
}();
struct NameTable {
  std::array<int, kNameSlots> slot{};  // index into kOpcodes, -1: empty
  constexpr NameTable() {
    for (auto& s : slot) s = -1;
    for (int i = 0; i < kNumOpcodes; ++i) {
      size_t h = NameHash(kOpcodes[i].name) & (kNameSlots - 1);
      while (slot[h] >= 0) h = (h + 1) & (kNameSlots - 1);
      slot[h] = i;
    }
  }
};
constexpr NameTable kNameTable;

}  // namespace

std::string_view OpcodeName(Opcode op) { return kOpcodes[static_cast<int>(op)].name; }
int OpcodeArity(Opcode op) { return kOpcodes[static_cast<int>(op)].arity; }
int OpcodeCount() { return kNumOpcodes; }
Opcode OpcodeAt(int index) { return kOpcodes[index].op; }

std::optional<Opcode> OpcodeFromName(std::string_view name) {
  for (size_t h = NameHash(name) & (kNameSlots - 1);; h = (h + 1) & (kNameSlots - 1)) {
    const int i = kNameTable.slot[h];
    if (i < 0) return std::nullopt;
    if (kOpcodes[i].name == name) return kOpcodes[i].op;
  }
}

bool IsElementwise(Opcode op) {
  switch (op) {
    case Opcode::kAbs:
    case Opcode::kAdd:
    case Opcode::kAnd:
    case Opcode::kAtan2:
    case Opcode::kCbrt:
    case Opcode::kCeil:
    case Opcode::kClamp:
    case Opcode::kClz:
    case Opcode::kCompare:
    case Opcode::kComplex:
    case Opcode::kConvert:
    case Opcode::kBitcastConvert:
    case Opcode::kCos:
    case Opcode::kDivide:
    case Opcode::kErf:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kFloor:
    case Opcode::kImag:
    case Opcode::kIsFinite:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kMultiply:
    case Opcode::kNegate:
    case Opcode::kNot:
    case Opcode::kOr:
    case Opcode::kPopulationCount:
    case Opcode::kPower:
    case Opcode::kReal:
    case Opcode::kReducePrecision:
    case Opcode::kRemainder:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kRsqrt:
    case Opcode::kSelect:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
    case Opcode::kSign:
    case Opcode::kSin:
    case Opcode::kSqrt:
    case Opcode::kStochasticConvert:
    case Opcode::kSubtract:
    case Opcode::kTan:
    case Opcode::kTanh:
    case Opcode::kXor: return true;
    default: return false;
  }
}

}  // namespace opprobe::hlo
