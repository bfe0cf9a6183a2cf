// Structural fingerprints of probe units (issue #17.3): a hash over what a backend sees of one instruction wrapped
// as a probe unit (hlo/probe_unit.h), computed from the instruction's fields without building or printing a module.
//
// What is hashed: the opcode (and an unknown opcode's text), the result shape, each operand's shape and which
// operands are the same instruction (a unit has one parameter per distinct operand), every attribute the schema
// (hlo/attributes.h) gives the opcode and every generic one, walked from the schema (an attribute the printer leaves
// out because it is unset hashes as absent), the attributes unknown to the schema as written, and the called
// computations by structure: each computation's instructions in order with their opcode, shape, operands (by
// position), parameter number, literal and attributes, its root and execution thread, and its own callees. A
// computation met again within one unit hashes as a reference to the first meeting, so cycles end and a callee
// shared by two calls is told apart from two equal callees. Names (of instructions and computations), metadata,
// ids and control predecessors are not part of it: MakeProbeModule drops or renames them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hlo/instruction.h"

namespace opprobe::hlo {

// The scheme of the fingerprints below. Every probe cache key carries it (compiler_probe/remote/entry.h:
// BackendKeyHash), so that verdicts stored under another scheme's fingerprints are never read as this one's.
// Change it whenever what is hashed, or how, changes.
inline constexpr std::string_view kFingerprintScheme = "structural-2";

// The unit fingerprint of `instr` as a number, and as the 16 hex digits reports and caches show.
uint64_t UnitHash(const Instruction& instr);
std::string UnitFingerprint(const Instruction& instr);
std::string HashHex(uint64_t hash);

// A 64-bit hash of `bytes` after `seed`, 8 bytes a step with the unit fingerprint's mixing (a few instructions a word,
// where hlo::Fnv1a64 takes a few a byte). For keys and checksums that only the build that wrote them reads back (the
// lowering memos): what it gives may change between builds.
uint64_t HashBytes(std::string_view bytes, uint64_t seed = 0);

}  // namespace opprobe::hlo
