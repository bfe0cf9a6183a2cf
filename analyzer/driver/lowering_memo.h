// The lowering memo: what the driver keeps of one distinct call's lowering (the outcome, and per probe unit its
// fingerprint and what the report shows of it), stored in the probe cache beside the verdicts (ProbeCache::
// StoreMemos) under a key that hashes opprobe's build (BuildId) with the call's signature. A warm re-analysis then
// lowers nothing: every unit it needs is known by fingerprint, and a unit is lowered again only when it is needed
// itself (a cache miss to probe, a repro to write, a text to print).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opprobe::analyzer {

struct MemoUnit {
  uint64_t hash = 0;          // hlo::UnitHash
  std::string opcode;         // ProbeRecord::opcode
  std::string signature;      // hlo::InstructionSignature
  std::string name;           // the instruction's name in the lowered module
  std::string attributed_to;  // the aten op its metadata names when that is another op than the call's; else empty
};

struct LoweringOutcome {
  // kFailed: opprobe has no lowering for the call (its gap); kInternalError: the lowering failed by a bug of opprobe's
  // (it threw, or built HLO that is not valid or not what PyTorch returned: a kInternal error).
  enum class Kind : char { kCustomOp = 'c', kFailed = 'e', kInternalError = 'i', kOk = 'o' };
  Kind kind = Kind::kOk;
  std::string error;  // kFailed, kInternalError: the lowering's error message
  bool dynamic_shape = false;
  std::string note;
  std::vector<MemoUnit> units;  // kOk: the probe units in order
};

// The memo key of a call with Node::SignatureKey `signature_key`: 0 (nothing is memoized) when this build has no
// build ID.
uint64_t LoweringMemoKey(std::string_view signature_key);

std::string EncodeLoweringOutcome(const LoweringOutcome& outcome);
// nullopt for anything that is not exactly what EncodeLoweringOutcome writes (a memo from another format, cut short).
std::optional<LoweringOutcome> DecodeLoweringOutcome(std::string_view value);

// A memo as DecodeLoweringOutcomeView reads it: its strings are views into the memo, which must outlive them (a warm
// run copies out only what its records keep: a unit's opcode and signature only for a unit not seen before).
struct MemoUnitView {
  uint64_t hash = 0;
  std::string_view opcode, signature, name, attributed_to;
};
struct LoweringOutcomeView {
  LoweringOutcome::Kind kind = LoweringOutcome::Kind::kOk;
  std::string_view error;
  bool dynamic_shape = false;
  std::string_view note;
  std::vector<MemoUnitView> units;
};
// What DecodeLoweringOutcome reads, in place; nullopt for the same values.
std::optional<LoweringOutcomeView> DecodeLoweringOutcomeView(std::string_view value);

}  // namespace opprobe::analyzer
