// The probe unit: one instruction wrapped in a module (parameters -> instruction -> ROOT), as
// Neuron's analyze does, and its fingerprint.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hlo/instruction.h"

namespace opprobe::hlo {

// A module named `name` whose entry has one parameter per distinct operand of `instr`, a copy of
// `instr` (with its called computations and their callees) as ROOT, and canonical names
// (p0, p1, ..., the root named after its opcode), so that identical units print identically. The copy keeps
// every attribute, modelled or unknown to the schema (hlo/attributes.h); control predecessors are dropped, and so
// is the metadata of instructions in called computations.
std::unique_ptr<Module> MakeProbeModule(const Instruction& instr, const std::string& name = "probe");

// One module that holds every unit of `units` (probe units, or any module with an entry): each unit's entry inlined
// into one entry (its parameters numbered after the previous unit's, its names suffixed `.uK`), its other
// computations copied under suffixed names, and a ROOT tuple of the array leaves of every unit's root, one unit after
// the other (a tuple-shaped root taken apart with get-tuple-element, depth first: PJRT takes no nested tuple as a
// program's result), so that a run returns each unit's outputs in the order its own run flattens them. Every
// instruction of unit K carries op_name BatchUnitMarker(K) in its metadata (which no compile reads), so that what a
// compiler makes of it (a library call) can be told apart. A compiler that accepts the module has compiled every unit
// in one program (compiler_probe/batch.h); which unit it refused is found by splitting.
std::unique_ptr<Module> MakeBatchModule(const std::vector<const Module*>& units, const std::string& name = "batch");
// `opprobe.batch.unit.K`.
std::string BatchUnitMarker(size_t k);
// K of an op_name that is BatchUnitMarker(K); nullopt for any other.
std::optional<size_t> BatchUnitOf(std::string_view op_name);

// The fingerprint of a probe unit made by MakeProbeModule (or read back from a repro file): 16 hex digits, the
// structural fingerprint (hlo/fingerprint.h) of its entry's root, which is that of the instruction the unit was
// made from. Every modelled and unknown attribute is part of it, so units that differ in any attribute are
// different units; names and metadata are not. A module without an entry root gets the hash of nothing.
std::string Fingerprint(const Module& module);
// FNV-1a 64 of `text`, continuing from `hash` (the offset basis for a new one): stable across runs and builds, for
// cache keys, checksums and seeds.
inline constexpr uint64_t kFnv1a64Basis = 1469598103934665603ULL;
uint64_t Fnv1a64(std::string_view text, uint64_t hash = kFnv1a64Basis);
// 16 hex digits: FNV-1a 64 of `text` (cache keys and entry checksums).
std::string Fnv1a64Hex(std::string_view text);

}  // namespace opprobe::hlo
