#include "analyzer/lowering/lowering.h"

#include <fmt/format.h>

#include <optional>

#include "analyzer/lowering/families.h"
#include "hlo/verifier.h"

namespace opprobe::analyzer {

Status LoweringTable::Register(Entry entry) {
  if (auto it = entries_.find(entry.name); it != entries_.end())
    return Internal(fmt::format("{} is listed twice: by the {} family and by the {} family", entry.name,
                                it->second.family, entry.family));
  std::string name = entry.name;
  entries_.emplace(std::move(name), std::move(entry));
  return Status::Ok();
}

Status LoweringTable::Register(std::string name, std::string family, LoweringFn fn) {
  return Register(Entry{std::move(name), std::move(family), std::move(fn), ""});
}

namespace {

// The functional overload an out= overload writes the result of: `out` -> the op's overload-less entry,
// `Tensor_out` -> `Tensor`; nullopt for an overload that is not an out= form.
std::optional<std::string> FunctionalOverload(const std::string& overload) {
  static const std::string kSuffix = "_out";
  if (overload == "out") return std::string();
  if (overload.size() > kSuffix.size() &&
      overload.compare(overload.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0)
    return overload.substr(0, overload.size() - kSuffix.size());
  return std::nullopt;
}

}  // namespace

const LoweringTable::Entry* LoweringTable::Find(const std::string& op, const std::string& overload) const {
  Fill();
  if (!overload.empty() && overload != "default") {
    if (auto it = entries_.find(op + "." + overload); it != entries_.end()) return &it->second;
    if (auto functional = FunctionalOverload(overload); functional && !functional->empty()) {
      if (auto it = entries_.find(op + "." + *functional); it != entries_.end()) return &it->second;
    }
  }
  if (auto it = entries_.find(op); it != entries_.end()) return &it->second;
  return nullptr;
}

std::vector<const LoweringTable::Entry*> LoweringTable::entries() const {
  Fill();
  std::vector<const Entry*> out;
  out.reserve(entries_.size());
  for (const auto& [k, e] : entries_) out.push_back(&e);
  return out;
}

// The outputs PyTorch recorded, flattened the way lowerings return them: one entry per tensor (a tensor list
// gives one per element), nullopt for a value that is not a tensor (None, a Scalar, an int list).
static std::vector<std::optional<TensorMeta>> RecordedTensorOutputs(const Node& node) {
  std::vector<std::optional<TensorMeta>> out;
  for (const Value& v : node.outputs) {
    if (v.kind == Value::Kind::kTensor) {
      out.emplace_back(v.tensor);
    } else if (v.kind == Value::Kind::kTensorList) {
      for (const auto& t : v.tensors) out.push_back(t);
    } else {
      out.emplace_back(std::nullopt);
    }
  }
  return out;
}

Status CheckLoweredOutputs(const Node& node, const std::vector<hlo::Instruction*>& outputs, bool dynamic_shape) {
  if (node.outputs.empty() || outputs.empty()) return Status::Ok();  // nothing recorded (hand-written graphs)
  std::vector<std::optional<TensorMeta>> want = RecordedTensorOutputs(node);
  if (want.size() != outputs.size()) {
    // Outputs an output_mask turned off (convolution_backward's grad_bias, ...) are None in PyTorch and absent
    // from the lowering.
    std::vector<std::optional<TensorMeta>> present;
    size_t k = 0;
    for (const Value& v : node.outputs) {
      if (v.kind == Value::Kind::kTensorList) {
        for (const auto& t : v.tensors) present.push_back(t);
        k += v.tensors.size();
        continue;
      }
      if (!v.is_none()) present.push_back(want[k]);
      ++k;
    }
    want = std::move(present);
  }
  // An op that returns nothing (the in-place `_foreach_*_` and fused optimizer ops) has its lowering return the
  // updated inputs instead: there is no recorded output to compare them with.
  if (want.empty()) return Status::Ok();
  if (want.size() != outputs.size()) {
    // A lowering returns its outputs in schema order; a different count would pair the wrong values.
    return Internal(fmt::format("lowering of {} produced {} output{} but PyTorch returned {}", node.qualified_name(),
                                outputs.size(), outputs.size() == 1 ? "" : "s", want.size()));
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (!want[i] || !outputs[i]) continue;
    const hlo::Shape& got = outputs[i]->shape;
    if (!got.IsArray()) continue;
    const TensorMeta& w = *want[i];
    bool same = got.element_type() == w.dtype && got.rank() == w.rank();
    // A data-dependent (bounded) result holds its bound, PyTorch's its actual size: only dtype and rank
    // compare there, and a symbolic size compares by no more than its hint's bound.
    for (int d = 0; same && d < w.rank(); ++d) {
      bool bounded = dynamic_shape || got.is_dynamic_dimension(d) ||
                     (static_cast<size_t>(d) < w.dynamic.size() && w.dynamic[static_cast<size_t>(d)]);
      if (bounded) continue;
      same = got.dimensions(d) == w.sizes[static_cast<size_t>(d)];
    }
    if (!same) {
      std::string which = want.size() == 1 ? "" : fmt::format(" (output {})", i);
      return Internal(fmt::format("lowering of {} produced {} but PyTorch returned {}{}", node.qualified_name(),
                                  got.ToString(false), w.ToString(), which));
    }
  }
  return Status::Ok();
}

bool IsSparseLayoutCall(const Node& node) {
  static const char* const kSparseOps[] = {"aten::to_sparse",
                                           "aten::to_sparse_csr",
                                           "aten::to_sparse_csc",
                                           "aten::to_sparse_bsr",
                                           "aten::to_sparse_bsc",
                                           "aten::_to_sparse",
                                           "aten::_to_sparse_csr",
                                           "aten::_to_sparse_csc",
                                           "aten::_to_sparse_bsr",
                                           "aten::_to_sparse_bsc",
                                           "aten::_to_dense",
                                           "aten::to_dense",
                                           "aten::is_coalesced",
                                           "aten::coalesce",
                                           "aten::_coalesce",
                                           "aten::_coalesced_",
                                           "aten::_indices",
                                           "aten::_values",
                                           "aten::indices",
                                           "aten::values",
                                           "aten::crow_indices",
                                           "aten::col_indices",
                                           "aten::ccol_indices",
                                           "aten::row_indices",
                                           "aten::_nnz",
                                           "aten::sparse_dim",
                                           "aten::dense_dim",
                                           "aten::_dimI",
                                           "aten::_dimV",
                                           "aten::sparse_mask",
                                           "aten::sparse_resize_",
                                           "aten::sparse_resize_and_clear_",
                                           "aten::_sparse_coo_tensor_with_dims",
                                           "aten::_sparse_coo_tensor_with_dims_and_tensors",
                                           "aten::_sparse_coo_tensor_unsafe",
                                           "aten::sparse_coo_tensor",
                                           "aten::_sparse_csr_tensor_unsafe",
                                           "aten::sparse_csr_tensor",
                                           "aten::_sparse_compressed_tensor_unsafe",
                                           "aten::sparse_compressed_tensor",
                                           "aten::_sparse_sum",
                                           "aten::_sparse_sum_backward",
                                           "aten::_sparse_addmm",
                                           "aten::_sparse_mm",
                                           "aten::_sparse_softmax",
                                           "aten::_sparse_log_softmax",
                                           "aten::_sparse_softmax_backward_data",
                                           "aten::_sparse_log_softmax_backward_data",
                                           "aten::_sparse_broadcast_to",
                                           "aten::_sparse_sparse_matmul",
                                           "aten::_sparse_mask_projection",
                                           "aten::_to_sparse_semi_structured",
                                           "aten::_validate_sparse_coo_tensor_args",
                                           "aten::_validate_sparse_csr_tensor_args",
                                           "aten::_validate_sparse_compressed_tensor_args",
                                           "aten::_sparse_csr_sum",
                                           "aten::_sparse_csr_prod",
                                           "aten::smm",
                                           "aten::hspmm",
                                           "aten::sspaddmm"};
  for (const char* op : kSparseOps)
    if (node.op == op) return true;
  for (const Argument& a : node.args)
    if (a.value.kind == Value::Kind::kLayout && a.value.s.find("sparse") != std::string::npos) return true;
  return false;
}

Expected<LoweredModule> Lower(const Node& node, const LoweringTable& table) {
  if (std::string reason = lowering::NoXlaTypeReason(node); !reason.empty()) return Unimplemented(reason);
  if (IsSparseLayoutCall(node))
    return Unimplemented(
        fmt::format("{} works on sparse tensors: sparse layouts are not supported by XLA "
                    "(keep tensors dense on the device)",
                    node.qualified_name()));
  const LoweringTable::Entry* entry = table.Find(node.op, node.overload);
  if (!entry) return Unimplemented(fmt::format("no lowering for {}", node.qualified_name()));
  std::string name = node.op.substr(node.op.find("::") == std::string::npos ? 0 : node.op.find("::") + 2);
  hlo::Builder b(name);
  hlo::OpMetadata md;
  md.op_type = node.op;
  for (auto& ch : md.op_type)
    if (ch == ':') ch = '_';
  md.op_name = md.op_type;
  md.source_file = node.loc.file;
  md.source_line = node.loc.line;
  b.SetMetadata(md);
  Expected<LoweredOp> lowered = [&]() -> Expected<LoweredOp> {
    try {
      return entry->fn(node, b);
    } catch (const std::exception& e) {  // a lowering bug must not take the analysis down
      return Internal(fmt::format("lowering {} threw: {}", node.qualified_name(), e.what()));
    }
  }();
  if (!lowered.ok()) return lowered.status();
  if (!b.ok()) return b.status().WithContext("lowering " + node.qualified_name());
  if (Status st = CheckLoweredOutputs(node, lowered->outputs, lowered->dynamic_shape); !st.ok()) return st;
  if (lowered->outputs.empty()) {
    // Pure metadata ops (detach, alias) lower to nothing; give the module its input as ROOT.
    LoweredModule out;
    hlo::Instruction* root = nullptr;
    out.module = b.Build(root);
    out.dynamic_shape = lowered->dynamic_shape;
    out.note = lowered->note;
    return out;
  }
  hlo::Instruction* synthetic = nullptr;
  hlo::Instruction* root = lowered->outputs[0];
  if (lowered->outputs.size() > 1) root = synthetic = b.Tuple(lowered->outputs);
  LoweredModule out;
  out.module = b.Build(root);
  out.dynamic_shape = lowered->dynamic_shape;
  out.note = lowered->note;
  // Every lowering result passes XLA's structural checks (hlo/verifier.h, mixed precision not allowed): a
  // violation is a bug in the lowering, reported as this call's internal lowering error.
  if (auto v = hlo::FindViolation(*out.module, hlo::VerifyOptions{hlo::ShapeCheckOptions{false}}))
    return Internal(
        fmt::format("lowering of {} produced invalid HLO: {}", node.qualified_name(), hlo::DescribeViolation(*v)));
  for (const auto& i : out.module->entry()->instructions()) {
    // Parameters are inputs; constants stand for the scalars and literals PyTorch/XLA passes as device
    // data (parameters), so neither is a probe unit, as in Neuron's analyze.
    if (i->opcode == hlo::Opcode::kParameter || i->opcode == hlo::Opcode::kConstant || i.get() == synthetic) continue;
    out.units.push_back(i.get());
  }
  return out;
}

}  // namespace opprobe::analyzer
