// Called computations recognised by their structure, so that reduce, reduce-window and
// select-and-scatter can run them as typed loops instead of evaluating the computation once per
// element (region.cpp, compiled_loops.cpp). Not a public header.
//
// Two shapes are recognised, whatever the names:
// - one binary op of the two parameters (`add(p0, p1)`, `maximum(p1, p0)`, ...): a sum, product, max,
//   min, and, or, xor reducer (or the root is a parameter: take the first / the second);
// - a selection: every result is one of the parameters (or a constant), chosen by comparisons between
//   parameters and constants combined with pred logic (compare, and, or, xor, not, select, and maximum /
//   minimum of two parameters, which choose by their NaN rule and a compare). max-with-index reducers
//   of any spelling (PyTorch/XLA's, JAX's, opprobe's own argmax with NaN and tie rules) and
//   select-and-scatter's `GE` are selections. Their boolean logic is tabulated over the outcomes of the
//   comparisons ("atoms") once, so a step computes the atoms and looks up which input each result takes.
// Anything else (or anything a check of the generic path would reject) is kGeneric and stays on the
// generic path, which gives the same results.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hlo/evaluator/internal.h"

namespace opprobe::hlo::eval {

class Selection {
 public:
  // At most this many parameters and constants, and this many distinct comparisons.
  static constexpr int kMaxSlots = 16;
  static constexpr int kMaxAtoms = 8;
  // A table entry: a slot index (>= 0), or a computed pred result.
  static constexpr int8_t kFalse = -1;
  static constexpr int8_t kTrue = -2;

  // Compiles `comp` when it is a selection taking parameters of `param_types` (scalars, in order) and
  // returning `result_types` (a tuple of them; a single non-tuple result when there is one and
  // `tuple_root_ok` is false, either form when it is true). Returns false when it is not one.
  bool Compile(const Computation& comp, const std::vector<PrimitiveType>& param_types,
               const std::vector<PrimitiveType>& result_types, bool tuple_root_ok);

  int num_params() const { return num_params_; }
  int num_results() const { return num_results_; }
  // Sets slot pointers from num_params() on to the constants' bytes (once per loop).
  void BindConstants(const uint8_t** slot) const;
  // The atoms' outcomes for the values the slots point at, as bits of a table index.
  uint32_t Atoms(const uint8_t* const* slot) const {
    uint32_t bits = 0;
    for (size_t j = 0; j < atoms_.size(); ++j) {
      const Atom& a = atoms_[j];
      uint8_t r;
      if (a.cmp) a.cmp(slot[a.a], slot[a.b], &r, 1);
      else r = *slot[a.a] != 0;
      bits |= static_cast<uint32_t>(r != 0) << j;
    }
    return bits;
  }
  // What result `k` is for atom outcomes `bits`: a slot, kFalse or kTrue.
  int8_t Choice(int k, uint32_t bits) const { return table_[(static_cast<size_t>(k) << atoms_.size()) + bits]; }
  // Whether some result can take the value of another result's accumulator (parameter j < num_results()
  // for result k != j), so accumulators must be read before any is written.
  bool crosses() const { return crosses_; }

  // A comparison between two slots of `type` (cmp is its kernel), or, with cmp null, the pred in slot a.
  struct Atom {
    int a = 0, b = 0;
    CompareKernel cmp = nullptr;
    PrimitiveType type = PrimitiveType::PRED;
    ComparisonDirection dir = ComparisonDirection::kEq;
    bool total = false;
  };
  const std::vector<Atom>& atoms() const { return atoms_; }
  PrimitiveType slot_type(int s) const { return slot_types_[static_cast<size_t>(s)]; }

 private:
  int num_params_ = 0, num_results_ = 0;
  std::vector<std::vector<uint8_t>> constants_;  // slot num_params_ + i
  std::vector<PrimitiveType> slot_types_;
  std::vector<Atom> atoms_;
  std::vector<int8_t> table_;  // [result][atom bits]
  bool crosses_ = false;
};

struct RegionPlan {
  enum class Kind { kGeneric, kBinary, kTakeFirst, kTakeSecond, kSelection };
  Kind kind = Kind::kGeneric;
  Opcode op = Opcode::kAdd;  // kBinary: root is op(p0, p1), or op(p1, p0) when swap
  bool swap = false;
  Selection selection;
};

// The plan for a reducer computation taking (acc_0..acc_{n-1}, x_0..x_{n-1}) of `types` and returning
// the n new accumulators (reduce, reduce-window, select-and-scatter's scatter).
RegionPlan PlanReducer(const Computation* comp, const std::vector<PrimitiveType>& types);
// The plan for select-and-scatter's select: (a, b) of `type` -> pred (kSelection or kGeneric).
RegionPlan PlanSelect(const Computation* comp, PrimitiveType type);

}  // namespace opprobe::hlo::eval
