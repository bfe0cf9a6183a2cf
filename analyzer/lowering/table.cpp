// The one lowering table: every family's list of lowerings (families.h) and the in-place forms derived from
// them, registered once. A name without an overload (`aten::add`) covers every overload not listed on its own
// (`aten::add.Tensor`, `aten::add.Scalar`, `aten::add.out`).
#include <fmt/format.h>

#include "analyzer/lowering/families.h"
#include "analyzer/lowering/lowering.h"

namespace opprobe::analyzer::lowering {

std::string FamilyOf(std::string_view path) {
  size_t slash = path.find_last_of("/\\");
  std::string_view file = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return std::string(file.substr(0, file.find('.')));
}

std::string InPlaceName(const std::string& name) {
  size_t dot = name.find('.');
  if (dot == std::string::npos) return name + "_";
  return name.substr(0, dot) + "_" + name.substr(dot);
}

std::vector<const LoweringFamily*> BuiltinFamilies() {
  return {&ActivationLowerings(),    &AttentionLowerings(), &ConvLowerings(),      &ElementwiseLowerings(),
          &FactorizationLowerings(), &FactoryLowerings(),   &FftLowerings(),       &HistogramLowerings(),
          &IndexingLowerings(),      &LinalgLowerings(),    &LossLowerings(),      &NormLowerings(),
          &OptimizerLowerings(),     &PoolingLowerings(),   &QuantizedLowerings(), &RandomLowerings(),
          &ReductionLowerings(),     &RnnLowerings(),       &SamplingLowerings(),  &ShapeLowerings(),
          &SpecialLowerings()};
}

}  // namespace opprobe::analyzer::lowering

namespace opprobe::analyzer {

namespace {

// The in-place form of a lowering: the functional lowering itself, or, for an op that changes self's shape, the
// functional lowering of the call with self as it was before the call when the capture recorded it afterwards
// (self's recorded sizes equal the output's).
LoweringFn InPlaceForm(const LoweringFn& fn, lowering::RestoreSelf restore) {
  if (!restore) return fn;
  return [fn, restore](const Node& n, hlo::Builder& b) -> Expected<LoweredOp> {
    if (n.args.empty() || !n.args[0].value.is_tensor() || n.outputs.empty() || !n.outputs[0].is_tensor() ||
        !(n.args[0].value.tensor.sizes == n.outputs[0].tensor.sizes))
      return fn(n, b);
    Node before = n;
    restore(n, before.args[0].value.tensor);
    return fn(before, b);
  };
}

}  // namespace

const LoweringTable& LoweringTable::Builtin() {
  static const LoweringTable* table = [] {
    auto* t = new LoweringTable();
    t->builtin_ = true;
    return t;
  }();
  return *table;
}

const std::vector<Status>& LoweringTable::rejected() const {
  Fill();
  return rejected_;
}

void LoweringTable::Fill() const {
  if (!builtin_) return;
  std::call_once(*filled_, [this] {
    auto* t = const_cast<LoweringTable*>(this);  // the one table Builtin() made, filled once under filled_
    auto add = [t](Entry e) {
      if (Status st = t->Register(std::move(e)); !st.ok()) t->rejected_.push_back(st);
    };
    for (const lowering::LoweringFamily* family : lowering::BuiltinFamilies()) {
      for (const lowering::Lowering& l : family->lowerings) {
        add(Entry{l.name, family->name, l.fn, ""});
        if (l.in_place.listed)
          add(Entry{lowering::InPlaceName(l.name), family->name, InPlaceForm(l.fn, l.in_place.restore), l.name});
      }
    }
  });
}

}  // namespace opprobe::analyzer
