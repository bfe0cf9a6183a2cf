#include "analyzer/lowering/context.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace opprobe::analyzer::lowering {

hlo::Shape ShapeOf(const TensorMeta& m) { return Shape::Array(m.dtype, m.sizes); }

LoweringContext::LoweringContext(const Node& n, Builder& b) : node(n), builder(b) {
  params_.resize(n.args.size(), nullptr);
  lists_.resize(n.args.size());
  for (size_t i = 0; i < n.args.size(); ++i) {
    const Value& v = n.args[i].value;
    if (v.kind == Value::Kind::kTensor) {
      params_[i] = b.NextParameter(ShapeOf(v.tensor));
    } else if (v.kind == Value::Kind::kTensorList) {
      for (const auto& t : v.tensors) lists_[i].push_back(t ? b.NextParameter(ShapeOf(*t)) : nullptr);
    }
  }
}

size_t LoweringContext::Index(const std::string& name, size_t pos) const {
  for (size_t i = 0; i < node.args.size(); ++i)
    if (!node.args[i].name.empty() && node.args[i].name == name) return i;
  if (pos < node.args.size() && (node.args[pos].name.empty() || node.args[pos].name == name)) return pos;
  return node.args.size();
}

Instruction* LoweringContext::Tensor(const std::string& name, size_t pos) const {
  size_t i = Index(name, pos);
  return i < params_.size() ? params_[i] : nullptr;
}

std::vector<Instruction*> LoweringContext::TensorList(const std::string& name, size_t pos) const {
  size_t i = Index(name, pos);
  return i < lists_.size() ? lists_[i] : std::vector<Instruction*>{};
}

const TensorMeta* LoweringContext::ArgMeta(const std::string& name, size_t pos) const {
  const Value* v = Arg(name, pos);
  return v && v->is_tensor() ? &v->tensor : nullptr;
}

int64_t LoweringContext::Int(const std::string& name, size_t pos, int64_t def) const {
  const Value* v = Arg(name, pos);
  if (!v) return def;
  switch (v->kind) {
    case Value::Kind::kInt: return v->i;
    case Value::Kind::kBool: return v->b ? 1 : 0;
    case Value::Kind::kFloat: return static_cast<int64_t>(v->f);
    case Value::Kind::kIntList: return v->ints.size() == 1 ? v->ints[0] : def;
    default: return def;
  }
}

std::optional<int64_t> LoweringContext::OptInt(const std::string& name, size_t pos) const {
  const Value* v = Arg(name, pos);
  if (!v || v->is_none()) return std::nullopt;
  if (v->kind == Value::Kind::kInt) return v->i;
  if (v->kind == Value::Kind::kBool) return v->b ? 1 : 0;
  if (v->kind == Value::Kind::kIntList && v->ints.size() == 1) return v->ints[0];
  return std::nullopt;
}

double LoweringContext::Double(const std::string& name, size_t pos, double def) const {
  const Value* v = Arg(name, pos);
  if (!v) return def;
  switch (v->kind) {
    case Value::Kind::kInt:
    case Value::Kind::kBool:
    case Value::Kind::kFloat: return v->AsDouble();
    case Value::Kind::kComplex: return v->c.real();
    default: return def;
  }
}

bool LoweringContext::Bool(const std::string& name, size_t pos, bool def) const {
  const Value* v = Arg(name, pos);
  if (!v) return def;
  if (v->kind == Value::Kind::kBool) return v->b;
  if (v->kind == Value::Kind::kInt) return v->i != 0;
  return def;
}

std::vector<int64_t> LoweringContext::Ints(const std::string& name, size_t pos, const std::vector<int64_t>& def) const {
  auto v = OptInts(name, pos);
  return v ? *v : def;
}

std::optional<std::vector<int64_t>> LoweringContext::OptInts(const std::string& name, size_t pos) const {
  const Value* v = Arg(name, pos);
  if (!v || v->is_none()) return std::nullopt;
  if (v->kind == Value::Kind::kIntList) return v->ints;
  if (v->kind == Value::Kind::kInt) return std::vector<int64_t>{v->i};
  return std::nullopt;
}

std::vector<bool> LoweringContext::Bools(const std::string& name, size_t pos, std::vector<bool> def) const {
  const Value* v = Arg(name, pos);
  if (!v || v->kind != Value::Kind::kBoolList) return def;
  return v->bools;
}

std::optional<PrimitiveType> LoweringContext::Dtype(const std::string& name, size_t pos) const {
  const Value* v = Arg(name, pos);
  if (!v || v->kind != Value::Kind::kDtype) return std::nullopt;
  return v->dtype;
}

std::string LoweringContext::String(const std::string& name, size_t pos, std::string def) const {
  const Value* v = Arg(name, pos);
  if (!v || v->kind != Value::Kind::kString) return def;
  return v->s;
}

const TensorMeta* LoweringContext::OutputMeta(size_t i) const {
  size_t k = 0;
  for (const auto& o : node.outputs) {
    if (o.is_none()) continue;
    if (o.kind == Value::Kind::kTensor) {
      if (k == i) return &o.tensor;
      ++k;
    } else if (o.kind == Value::Kind::kTensorList) {
      for (const auto& t : o.tensors) {
        if (!t) continue;
        if (k == i) return &*t;
        ++k;
      }
    } else {
      if (k == i) return nullptr;
      ++k;
    }
  }
  return nullptr;
}

PrimitiveType LoweringContext::OutputType(size_t i, PrimitiveType fallback) const {
  const TensorMeta* m = OutputMeta(i);
  return m ? m->dtype : fallback;
}

Expected<Instruction*> LoweringContext::RequiredTensor(const std::string& name, size_t pos) const {
  Instruction* t = Tensor(name, pos);
  if (!t) return Unsupported(fmt::format("tensor argument '{}' is missing", name));
  return t;
}

Expected<Instruction*> LoweringContext::Operand(const std::string& name, size_t pos, PrimitiveType type,
                                                const std::vector<int64_t>& dims) const {
  const Value* v = Arg(name, pos);
  if (!v) return Unsupported(fmt::format("argument '{}' is missing", name));
  if (v->kind == Value::Kind::kTensor) {
    Instruction* p = Tensor(name, pos);
    Instruction* x = builder.Convert(p, type);
    if (x->shape.dimensions() != dims) {
      auto bd = BroadcastShapes(x->shape.dimensions(), dims);
      if (bd != dims)
        return Unsupported(fmt::format("argument '{}' ({}) does not broadcast to [{}]", name, v->tensor.ToString(),
                                       fmt::join(dims, ",")));
      x = Bcast(builder, x, dims);
    }
    return x;
  }
  switch (v->kind) {
    case Value::Kind::kInt:
    case Value::Kind::kFloat:
    case Value::Kind::kBool:
    case Value::Kind::kComplex: {
      Instruction* s = ScalarOf(builder, type, *v);
      return dims.empty() ? s : builder.Broadcast(s, dims, {});
    }
    default: return Unsupported(fmt::format("argument '{}' is {}, not a tensor or number", name, v->ToString()));
  }
}

Status LoweringContext::Unsupported(const std::string& why) const {
  return Unimplemented(fmt::format("{}: {}", node.qualified_name(), why));
}

Expected<LoweredOp> LoweringContext::Finish(std::vector<Instruction*> outs) const {
  if (!builder.ok()) return builder.status().WithContext("lowering " + node.qualified_name());
  if (!node.outputs.empty()) {
    std::vector<std::optional<TensorMeta>> want;  // nullopt: a non-tensor (scalar) output
    for (const auto& o : node.outputs) {
      if (o.is_none()) continue;
      if (o.kind == Value::Kind::kTensor) want.push_back(o.tensor);
      else if (o.kind == Value::Kind::kTensorList) {
        for (const auto& t : o.tensors)
          if (t) want.push_back(t);
      } else {
        want.push_back(std::nullopt);
      }
    }
    // An in-place op that returns nothing (`_foreach_add_`, `_fused_adam_`: `-> ()`, recorded as None) has
    // no output to check: its lowering's values are the tensors it writes.
    bool void_op = want.empty() &&
                   std::all_of(node.outputs.begin(), node.outputs.end(), [](const Value& o) { return o.is_none(); });
    if (void_op) {
      LoweredOp op;
      op.outputs = std::move(outs);
      return op;
    }
    if (want.size() != outs.size())
      return Internal(fmt::format("lowering of {} produced {} outputs but PyTorch returned {}", node.qualified_name(),
                                  outs.size(), want.size()));
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!outs[i]) return Internal(fmt::format("{}: output {} missing", node.qualified_name(), i));
      const Shape& s = outs[i]->shape;
      if (!want[i]) {
        if (s.rank() != 0)
          return Internal(fmt::format("{}: output {} is {} but the op returns a number", node.qualified_name(), i,
                                      s.ToString(false)));
        continue;
      }
      bool dims_ok = s.rank() == want[i]->rank();
      for (int d = 0; dims_ok && d < s.rank(); ++d) {
        int64_t have = s.dimensions()[static_cast<size_t>(d)], need = want[i]->sizes[static_cast<size_t>(d)];
        // A bounded dynamic dim (XLA's `<=N`) holds its bound; the recorded size is one instance.
        dims_ok = s.is_dynamic_dimension(d) ? need <= have : need == have;
      }
      if (s.element_type() != want[i]->dtype || !dims_ok)
        return Internal(fmt::format("lowering of {} produced {} but PyTorch returned {}{}", node.qualified_name(),
                                    s.ToString(false), want[i]->ToString(),
                                    want.size() == 1 ? "" : fmt::format(" (output {})", i)));
    }
  }
  LoweredOp op;
  op.outputs = std::move(outs);
  return op;
}

Expected<LoweredOp> LowerAsFirstOutputOf(const Node& n, Builder& b, const char* op, const LoweringFn& fn,
                                         std::vector<Argument> args) {
  Node m = n;
  m.op = op;
  m.overload = "default";
  m.args = std::move(args);
  m.outputs.clear();
  OPPROBE_ASSIGN_OR_RETURN(LoweredOp r, fn(m, b));
  if (r.outputs.empty()) return Unimplemented(fmt::format("{}: {} gave no value", n.qualified_name(), op));
  r.outputs.resize(1);
  return r;
}

Value ArgOr(const Node& n, const char* name, size_t pos, const Value& def) {
  const Value* v = n.arg(name, pos);
  return v && !v->is_none() ? *v : def;
}

}  // namespace opprobe::analyzer::lowering
