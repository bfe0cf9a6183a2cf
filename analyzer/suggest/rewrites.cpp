#include "analyzer/suggest/rewrites.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace opprobe::analyzer::suggest {
namespace {

using hlo::PrimitiveType;

// --- Building the aten calls of a plan -------------------------------------------------------------------------

TensorMeta Meta(PrimitiveType t, std::vector<int64_t> sizes) {
  TensorMeta m;
  m.dtype = t;
  m.sizes = std::move(sizes);
  return m;
}

Argument T(std::string name, const TensorMeta& m) { return {std::move(name), Value::Tensor(m)}; }
Argument I(std::string name, int64_t v) { return {std::move(name), Value::Int(v)}; }
Argument B(std::string name, bool v) { return {std::move(name), Value::Bool(v)}; }
Argument Ints(std::string name, std::vector<int64_t> v) { return {std::move(name), Value::IntList(std::move(v))}; }
Argument TList(std::string name, const std::vector<TensorMeta>& ms) {
  Value v;
  v.kind = Value::Kind::kTensorList;
  for (const auto& m : ms) v.tensors.push_back(m);
  return {std::move(name), std::move(v)};
}

Node Call(std::string op, std::string overload, std::vector<Argument> args, std::vector<TensorMeta> outs) {
  Node n;
  n.op = std::move(op);
  n.overload = std::move(overload);
  n.args = std::move(args);
  std::vector<Value> o;
  o.reserve(outs.size());
  for (auto& m : outs) o.push_back(Value::Tensor(std::move(m)));
  n.outputs = std::move(o);
  return n;
}

std::vector<int64_t> Plus(std::vector<int64_t> d, int64_t last) {
  d.push_back(last);
  return d;
}

std::vector<int64_t> BroadcastDims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// --- Reading the call -------------------------------------------------------------------------------------------

std::vector<const TensorMeta*> TensorArgs(const Node& n) {
  std::vector<const TensorMeta*> out;
  for (const auto& a : n.args) {
    if (a.value.kind == Value::Kind::kTensor) out.push_back(&a.value.tensor);
    if (a.value.kind == Value::Kind::kTensorList)
      for (const auto& t : a.value.tensors)
        if (t) out.push_back(&*t);
  }
  return out;
}

const TensorMeta* FirstOutput(const Node& n) {
  for (const auto& v : n.outputs)
    if (v.is_tensor()) return &v.tensor;
  return nullptr;
}

bool AnyTensorOf(const Node& n, const std::function<bool(PrimitiveType)>& pred) {
  for (const TensorMeta* m : TensorArgs(n))
    if (pred(m->dtype)) return true;
  for (const auto& v : n.outputs) {
    if (v.is_tensor() && pred(v.tensor.dtype)) return true;
    if (v.kind == Value::Kind::kTensorList)
      for (const auto& t : v.tensors)
        if (t && pred(t->dtype)) return true;
  }
  for (const auto& a : n.args)
    if (a.value.kind == Value::Kind::kDtype && pred(a.value.dtype)) return true;
  return false;
}

bool IsComplexType(PrimitiveType t) { return hlo::IsComplex(t); }
bool HasDynamic(const Node& n) {
  for (const TensorMeta* m : TensorArgs(n))
    if (m->is_dynamic()) return true;
  return false;
}

bool IsOp(const Node& n, std::initializer_list<std::string_view> ops) {
  return std::find(ops.begin(), ops.end(), std::string_view(n.op)) != ops.end();
}

// The call with every tensor, tensor list and dtype of type `from` (per the map) replaced.
Node Retyped(const Node& n, const std::function<PrimitiveType(PrimitiveType)>& map) {
  Node out = n;
  std::vector<Argument> args = n.args;
  for (auto& a : args) {
    if (a.value.kind == Value::Kind::kTensor) a.value.tensor.dtype = map(a.value.tensor.dtype);
    if (a.value.kind == Value::Kind::kTensorList)
      for (auto& t : a.value.tensors)
        if (t) t->dtype = map(t->dtype);
    if (a.value.kind == Value::Kind::kDtype) a.value.dtype = map(a.value.dtype);
  }
  out.args = std::move(args);
  std::vector<Value> outs = n.outputs;
  for (auto& v : outs) {
    if (v.is_tensor()) v.tensor.dtype = map(v.tensor.dtype);
    if (v.kind == Value::Kind::kTensorList)
      for (auto& t : v.tensors)
        if (t) t->dtype = map(t->dtype);
  }
  out.outputs = std::move(outs);
  return out;
}

// A non-tensor argument as Python writes it.
std::string PyValue(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return v.b ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.i);
    case Value::Kind::kFloat: return fmt::format("{}", v.f);
    case Value::Kind::kString: return fmt::format("'{}'", v.s);
    case Value::Kind::kIntList: return fmt::format("[{}]", fmt::join(v.ints, ", "));
    case Value::Kind::kDtype:
      switch (v.dtype) {
        case PrimitiveType::F32: return "torch.float32";
        case PrimitiveType::F64: return "torch.float64";
        case PrimitiveType::F16: return "torch.float16";
        case PrimitiveType::BF16: return "torch.bfloat16";
        case PrimitiveType::S32: return "torch.int32";
        case PrimitiveType::S64: return "torch.int64";
        case PrimitiveType::PRED: return "torch.bool";
        case PrimitiveType::C64: return "torch.complex64";
        case PrimitiveType::C128: return "torch.complex128";
        default: return v.ToString();
      }
    case Value::Kind::kDevice: return fmt::format("torch.device('{}')", v.s);
    default: return v.ToString();
  }
}

// The call as Python writes it: `torch.ops.aten.mul.Tensor(x, y)`, its tensors named x, y, z, ... in order.
std::string TorchOpsCall(const Node& n) {
  std::vector<std::string> parts;
  const char* names[] = {"x", "y", "z", "w", "u", "v"};
  size_t k = 0;
  for (const auto& a : n.args) {
    if (a.value.kind == Value::Kind::kTensor) {
      parts.push_back(k < 6 ? names[k] : fmt::format("t{}", k));
      ++k;
    } else if (a.value.kind == Value::Kind::kTensorList) {
      parts.push_back("[...]");
    } else {
      parts.push_back(PyValue(a.value));
    }
  }
  std::string ns = n.op.substr(0, n.op.find("::"));
  std::string name = n.op.substr(n.op.find("::") + 2);
  std::string overload = n.overload.empty() || n.overload == "default" ? "default" : n.overload;
  return fmt::format("torch.ops.{}.{}.{}({})", ns, name, overload, fmt::join(parts, ", "));
}

// `x = x.float()` for each tensor argument of type `t` (named as TorchOpsCall names them).
std::string ConvertLines(const Node& n, PrimitiveType t, const char* method) {
  const char* names[] = {"x", "y", "z", "w", "u", "v"};
  std::string out;
  size_t k = 0;
  for (const auto& a : n.args) {
    if (a.value.kind != Value::Kind::kTensor) continue;
    if (a.value.tensor.dtype == t && k < 6) out += fmt::format("{0} = {0}{1}\n", names[k], method);
    ++k;
  }
  return out;
}

// `# x: f32[4], y: c64[4]`: which tensor the Python's names stand for.
std::string Legend(const Node& n) {
  std::vector<std::string> parts;
  const char* names[] = {"x", "y", "z", "w", "u", "v"};
  size_t k = 0;
  for (const TensorMeta* m : TensorArgs(n)) {
    parts.push_back(fmt::format("{}: {}", k < 6 ? names[k] : fmt::format("t{}", k).c_str(), m->ToString()));
    ++k;
  }
  if (parts.empty()) return fmt::format("# {} (no tensor arguments)", n.qualified_name());
  return fmt::format("# {}: {}", n.qualified_name(), fmt::join(parts, ", "));
}

// --- complex arithmetic as real arithmetic on view_as_real pairs ----------------------------------------------------

bool ComplexArithmeticApplies(const Node& n) {
  if (!IsOp(n, {"aten::mul", "aten::add", "aten::sub", "aten::div", "aten::mul_", "aten::add_", "aten::sub_",
                "aten::div_"}))
    return false;
  if (n.overload != "Tensor") return false;
  const Value* self = n.arg("self", 0);
  const Value* other = n.arg("other", 1);
  const TensorMeta* out = FirstOutput(n);
  if (!self || !other || !self->is_tensor() || !other->is_tensor() || !out || !IsComplexType(out->dtype)) return false;
  if (HasDynamic(n)) return false;
  if (const Value* alpha = n.arg("alpha", 2); alpha && !alpha->is_none() && alpha->AsDouble() != 1.0) return false;
  if (const Value* mode = n.arg("rounding_mode", 2); mode && !mode->is_none()) return false;
  // real / complex has no pair form that is simpler than the complex one; the others do.
  if (n.op.starts_with("aten::div") && !IsComplexType(self->tensor.dtype)) return false;
  return true;
}

Expected<RewritePlan> ComplexArithmeticPlan(const Node& n) {
  const TensorMeta& a = n.arg("self", 0)->tensor;
  const TensorMeta& b = n.arg("other", 1)->tensor;
  const TensorMeta& out = *FirstOutput(n);
  const PrimitiveType rt = PairElementType(out.dtype);
  const bool ca = IsComplexType(a.dtype), cb = IsComplexType(b.dtype);
  const std::string base = n.op.ends_with("_") ? n.op.substr(0, n.op.size() - 1) : n.op;
  auto pair = [&](const TensorMeta& m) { return Meta(rt, Plus(m.sizes, 2)); };
  auto real = [&](const TensorMeta& m) { return Meta(rt, m.sizes); };
  const TensorMeta out_pair = Meta(rt, Plus(out.sizes, 2));
  RewritePlan p;
  p.exact = false;
  const std::string keep =
      "# keep complex values as (..., 2) real pairs from where they are made: x_ri = torch.view_as_real(x);\n"
      "# torch.view_as_complex(out) gives the complex tensor back wherever complex types are allowed\n";
  std::vector<Node>& c = p.calls;
  auto sel = [&](const TensorMeta& m, int64_t k) {
    TensorMeta r = real(m);
    c.push_back(Call("aten::select", "int", {T("self", pair(m)), I("dim", -1), I("index", k)}, {r}));
    return r;
  };
  auto bin = [&](const char* aop, const TensorMeta& x, const TensorMeta& y) {
    TensorMeta r = Meta(rt, BroadcastDims(x.sizes, y.sizes));
    c.push_back(Call(aop, "Tensor", {T("self", x), T("other", y)}, {r}));
    return r;
  };
  auto stack = [&](const TensorMeta& re, const TensorMeta& im) {
    c.push_back(Call("aten::stack", "default", {TList("tensors", {re, im}), I("dim", -1)}, {out_pair}));
  };
  if (base == "aten::mul") {
    if (ca && cb) {
      TensorMeta ar = sel(a, 0), ai = sel(a, 1), br = sel(b, 0), bi = sel(b, 1);
      TensorMeta rr = bin("aten::mul", ar, br), ii = bin("aten::mul", ai, bi);
      TensorMeta ri = bin("aten::mul", ar, bi), ir = bin("aten::mul", ai, br);
      stack(bin("aten::sub", rr, ii), bin("aten::add", ri, ir));
      p.python = keep + Legend(n) +
                 "\nout = torch.stack((x_ri[..., 0] * y_ri[..., 0] - x_ri[..., 1] * y_ri[..., 1],\n"
                 "                   x_ri[..., 0] * y_ri[..., 1] + x_ri[..., 1] * y_ri[..., 0]), -1)";
      p.changes =
          "the same four products as PyTorch's complex multiply; results agree to rounding (no fused "
          "multiply-add guarantee); the result stays real pairs";
    } else {
      const TensorMeta& r = ca ? b : a;
      const TensorMeta& z = ca ? a : b;
      TensorMeta r1 = Meta(rt, Plus(r.sizes, 1));
      c.push_back(Call("aten::unsqueeze", "default", {T("self", real(r)), I("dim", -1)}, {r1}));
      c.push_back(Call("aten::mul", "Tensor", {T("self", r1), T("other", pair(z))}, {out_pair}));
      p.python = keep + Legend(n) + (ca ? "\nout = x_ri * y.unsqueeze(-1)" : "\nout = x.unsqueeze(-1) * y_ri");
      p.changes =
          "PyTorch-exact values: a real factor scales both parts; one real multiply per part instead of a "
          "convert to complex and a complex multiply; the result stays real pairs";
      p.exact = true;
    }
  } else if (base == "aten::add" || base == "aten::sub") {
    const char* aop = base == "aten::add" ? "aten::add" : "aten::sub";
    const char* sign = base == "aten::add" ? "+" : "-";
    if (ca && cb) {
      c.push_back(Call(aop, "Tensor", {T("self", pair(a)), T("other", pair(b))}, {out_pair}));
      p.python = keep + Legend(n) + fmt::format("\nout = x_ri {} y_ri", sign);
    } else if (ca) {
      TensorMeta re = sel(a, 0), im = sel(a, 1);
      stack(bin(aop, re, real(b)), Meta(rt, BroadcastDims(im.sizes, b.sizes)));
      if (im.sizes != BroadcastDims(im.sizes, b.sizes))
        return Unimplemented("the real operand broadcasts the complex one");
      p.python = keep + Legend(n) + fmt::format("\nout = torch.stack((x_ri[..., 0] {} y, x_ri[..., 1]), -1)", sign);
    } else {
      TensorMeta re = sel(b, 0), im = sel(b, 1);
      TensorMeta sum = bin(aop, real(a), re);
      if (im.sizes != sum.sizes) return Unimplemented("the real operand broadcasts the complex one");
      if (base == "aten::sub") {
        c.push_back(Call("aten::neg", "default", {T("self", im)}, {im}));
        p.python = keep + Legend(n) + "\nout = torch.stack((x - y_ri[..., 0], -y_ri[..., 1]), -1)";
      } else {
        p.python = keep + Legend(n) + "\nout = torch.stack((x + y_ri[..., 0], y_ri[..., 1]), -1)";
      }
      stack(sum, im);
    }
    p.changes = "PyTorch-exact values (parts add independently); the result stays real pairs";
    p.exact = true;
  } else {  // div, complex numerator
    if (!cb) {
      TensorMeta r1 = Meta(rt, Plus(b.sizes, 1));
      c.push_back(Call("aten::unsqueeze", "default", {T("self", real(b)), I("dim", -1)}, {r1}));
      c.push_back(Call("aten::div", "Tensor", {T("self", pair(a)), T("other", r1)}, {out_pair}));
      p.python = keep + Legend(n) + "\nout = x_ri / y.unsqueeze(-1)";
      p.changes = "PyTorch-exact values (each part divided by the real divisor); the result stays real pairs";
      p.exact = true;
    } else {
      TensorMeta ar = sel(a, 0), ai = sel(a, 1), br = sel(b, 0), bi = sel(b, 1);
      TensorMeta d = bin("aten::add", bin("aten::mul", br, br), bin("aten::mul", bi, bi));
      TensorMeta re = bin("aten::add", bin("aten::mul", ar, br), bin("aten::mul", ai, bi));
      TensorMeta im = bin("aten::sub", bin("aten::mul", ai, br), bin("aten::mul", ar, bi));
      stack(bin("aten::div", re, d), bin("aten::div", im, d));
      p.python = keep + Legend(n) +
                 "\nd = y_ri[..., 0] ** 2 + y_ri[..., 1] ** 2\n"
                 "out = torch.stack(((x_ri[..., 0] * y_ri[..., 0] + x_ri[..., 1] * y_ri[..., 1]) / d,\n"
                 "                   (x_ri[..., 1] * y_ri[..., 0] - x_ri[..., 0] * y_ri[..., 1]) / d), -1)";
      p.changes =
          "textbook division: agrees with PyTorch's scaled complex division to rounding for moderate "
          "values, but |y|**2 overflows (inf) for |y| above ~1e19 in f32; the result stays real pairs";
    }
  }
  return p;
}

// --- FFT of real or complex data as a DFT-matrix product ------------------------------------------------------------

bool FftAsDftApplies(const Node& n) {
  if (!IsOp(n, {"aten::_fft_r2c", "aten::_fft_c2c"})) return false;
  const Value* self = n.arg("self", 0);
  const Value* dim = n.arg("dim", 1);
  if (!self || !self->is_tensor() || !dim || dim->ints.size() != 1 || HasDynamic(n)) return false;
  const TensorMeta* out = FirstOutput(n);
  return out && IsComplexType(out->dtype) && self->tensor.rank() >= 1;
}

Expected<RewritePlan> FftAsDftPlan(const Node& n) {
  const TensorMeta& x = n.arg("self", 0)->tensor;
  const TensorMeta& out = *FirstOutput(n);
  const bool r2c = n.op == "aten::_fft_r2c";
  const PrimitiveType rt = PairElementType(out.dtype);
  const int64_t rank = x.rank();
  int64_t d = n.arg("dim", 1)->ints[0];
  if (d < 0) d += rank;
  if (d < 0 || d >= rank) return Unimplemented("dimension out of range");
  const int64_t norm = n.arg("normalization", 2) ? n.arg("normalization", 2)->i : 0;
  const int64_t len = x.sizes[static_cast<size_t>(d)];
  const int64_t m = out.sizes[static_cast<size_t>(d)];
  const bool forward = r2c || !n.arg("forward", 3) || n.arg("forward", 3)->b;
  const bool last = d == rank - 1;
  RewritePlan p;
  std::vector<Node>& c = p.calls;
  // The data with the transformed dim last (x: [..., len], as real values or pairs).
  std::vector<int64_t> moved = x.sizes;
  std::swap(moved[static_cast<size_t>(d)], moved.back());
  const TensorMeta xin = r2c ? Meta(rt, x.sizes) : Meta(rt, Plus(x.sizes, 2));
  const TensorMeta xm = r2c ? Meta(rt, moved) : Meta(rt, Plus(moved, 2));
  if (!last)
    c.push_back(Call("aten::transpose", "int", {T("self", xin), I("dim0", d), I("dim1", r2c ? -1 : -2)}, {xm}));
  const TensorMeta mat = Meta(rt, {len, m});
  std::vector<int64_t> res = moved;
  res.back() = m;
  const TensorMeta part = Meta(rt, res);
  auto matmul = [&](const TensorMeta& a) -> const TensorMeta& {
    c.push_back(Call("aten::matmul", "default", {T("self", a), T("other", mat)}, {part}));
    return part;
  };
  const TensorMeta pair_moved = Meta(rt, Plus(res, 2));
  if (r2c) {
    matmul(Meta(rt, moved));
    matmul(Meta(rt, moved));
  } else {
    const TensorMeta re = Meta(rt, moved);
    c.push_back(Call("aten::select", "int", {T("self", xm), I("dim", -1), I("index", 0)}, {re}));
    c.push_back(Call("aten::select", "int", {T("self", xm), I("dim", -1), I("index", 1)}, {re}));
    for (int k = 0; k < 4; ++k) matmul(re);
    c.push_back(Call("aten::sub", "Tensor", {T("self", part), T("other", part)}, {part}));
    c.push_back(Call("aten::add", "Tensor", {T("self", part), T("other", part)}, {part}));
  }
  c.push_back(Call("aten::stack", "default", {TList("tensors", {part, part}), I("dim", -1)}, {pair_moved}));
  if (!last)
    c.push_back(Call("aten::transpose", "int", {T("self", pair_moved), I("dim0", d), I("dim1", -2)},
                     {Meta(rt, Plus(out.sizes, 2))}));
  const std::string scale = norm == 0   ? ""
                            : norm == 1 ? fmt::format(" / math.sqrt({})", len)
                                        : fmt::format(" / {}", len);
  const std::string dtype = rt == PrimitiveType::F64 ? "torch.float64" : "torch.float32";
  const std::string what = r2c ? (m == len ? "torch.fft.fft(x)" : "torch.fft.rfft(x)")
                               : (forward ? "torch.fft.fft(x)" : "torch.fft.ifft(x)");
  std::string py =
      Legend(n) + fmt::format(
                      "\n# {what} over dim {d} as a DFT-matrix product, the result as (..., {m}, 2) real pairs\n"
                      "import math\n"
                      "k = torch.outer(torch.arange({len}, dtype=torch.float64), torch.arange({m}, "
                      "dtype=torch.float64)) * (2 * math.pi / {len})\n"
                      "C = (torch.cos(k){scale}).to({dtype}).to(x.device)   # once, outside the step\n"
                      "S = ({sign}torch.sin(k){scale}).to({dtype}).to(x.device)\n",
                      fmt::arg("what", what), fmt::arg("d", d), fmt::arg("m", m), fmt::arg("len", len),
                      fmt::arg("scale", scale), fmt::arg("dtype", dtype), fmt::arg("sign", forward ? "-" : ""));
  const std::string xt = last ? "x" : fmt::format("x.transpose({}, -1)", d);
  const std::string xr = last ? "x_ri" : fmt::format("x_ri.transpose({}, -2)", d);
  if (r2c) {
    py += fmt::format("out = torch.stack(({0} @ C, {0} @ S), -1)", xt);
  } else {
    py += fmt::format(
        "xr, xi = {0}[..., 0], {0}[..., 1]   # x_ri = torch.view_as_real(x), kept as pairs\n"
        "out = torch.stack((xr @ C - xi @ S, xr @ S + xi @ C), -1)",
        xr);
  }
  if (!last) py += fmt::format(".transpose({}, -2)", d);
  p.python = py + "   # torch.view_as_complex(out) == " + what;
  p.changes = fmt::format(
      "{} multiply-adds per transform instead of about {}: fine for short transforms on a matmul engine, slow for "
      "long ones; rounding error grows with the length ({} points); the result stays real pairs",
      2 * len * m * (r2c ? 1 : 2), static_cast<int64_t>(5 * len * std::max(1.0, std::log2(static_cast<double>(len)))),
      len);
  return p;
}

// --- double precision computed in single precision -------------------------------------------------------------------

bool IsFft(const Node& n) { return n.op.starts_with("aten::_fft_") || n.op.starts_with("aten::fft_"); }

PrimitiveType ToSingle(PrimitiveType t) {
  if (t == PrimitiveType::F64) return PrimitiveType::F32;
  if (t == PrimitiveType::C128) return PrimitiveType::C64;
  return t;
}

bool F64Applies(const Node& n) {
  if (IsFft(n) || n.op.rfind("aten::", 0) != 0) return false;
  return AnyTensorOf(n, [](PrimitiveType t) { return t == PrimitiveType::F64; }) &&
         !AnyTensorOf(n, [](PrimitiveType t) { return t == PrimitiveType::C128; });
}

Expected<RewritePlan> F64Plan(const Node& n) {
  RewritePlan p;
  p.calls.push_back(Retyped(n, ToSingle));
  p.python = Legend(n) +
             "\n# compute in float32: make the tensors float32 where they are created (dtype=torch.float32, or\n"
             "# torch.set_default_dtype(torch.float32)), or convert them: x = x.float()\n" +
             ConvertLines(n, PrimitiveType::F64, ".float()") + "out = " + TorchOpsCall(Retyped(n, ToSingle));
  p.changes =
      "precision: float32 keeps about 7 significant digits instead of 16, and overflows above 3.4e38; "
      "half the memory and bandwidth";
  return p;
}

// --- 64-bit integers as 32-bit --------------------------------------------------------------------------------------

PrimitiveType To32(PrimitiveType t) {
  if (t == PrimitiveType::S64) return PrimitiveType::S32;
  if (t == PrimitiveType::U64) return PrimitiveType::U32;
  return t;
}

bool S64Applies(const Node& n) {
  if (n.op.rfind("aten::", 0) != 0) return false;
  // An s64 argument (or dtype): an s64 result alone (nonzero's indices, argmax) is PyTorch's own choice, not the
  // user's.
  bool s64_arg = false;
  for (const TensorMeta* m : TensorArgs(n))
    s64_arg = s64_arg || m->dtype == PrimitiveType::S64 || m->dtype == PrimitiveType::U64;
  for (const auto& a : n.args)  // a factory's dtype=torch.int64 (arange, randint)
    s64_arg = s64_arg || (a.value.kind == Value::Kind::kDtype &&
                          (a.value.dtype == PrimitiveType::S64 || a.value.dtype == PrimitiveType::U64));
  return s64_arg && !AnyTensorOf(n, [](PrimitiveType t) { return t == PrimitiveType::F64 || hlo::IsComplex(t); });
}

Expected<RewritePlan> S64Plan(const Node& n) {
  RewritePlan p;
  // The arguments as int32 and the first result with them (mm's product, unique's values); further results keep
  // PyTorch's int64 (unique's inverse and counts).
  Node call = Retyped(n, To32);
  std::vector<Value> outs = call.outputs;
  for (size_t i = 1; i < outs.size(); ++i) outs[i] = n.outputs[i];
  call.outputs = std::move(outs);
  p.calls.push_back(std::move(call));
  p.python = Legend(n) +
             "\n# 32-bit indices and counts: create them with dtype=torch.int32, or convert: idx = idx.int()\n" +
             ConvertLines(n, PrimitiveType::S64, ".int()") + "out = " + TorchOpsCall(Retyped(n, To32));
  p.exact = true;
  p.changes =
      "PyTorch-exact while every value fits in int32 (|v| < 2**31: indices and counts of tensors under 2**31 "
      "elements); half the index memory";
  return p;
}

// --- a c128 FFT as c64 ----------------------------------------------------------------------------------------------

bool C128FftApplies(const Node& n) {
  return IsFft(n) &&
         AnyTensorOf(n, [](PrimitiveType t) { return t == PrimitiveType::C128 || t == PrimitiveType::F64; });
}

Expected<RewritePlan> C128FftPlan(const Node& n) {
  RewritePlan p;
  p.calls.push_back(Retyped(n, ToSingle));
  p.python = Legend(n) +
             "\n# the transform in complex64: x = x.to(torch.complex64) (a real input: x.float())\n"
             "out = torch.fft.fft(x.to(torch.complex64))   # the same torch.fft call, single precision";
  p.changes =
      "precision: complex64 keeps about 7 significant digits per part instead of 16 (error grows with the "
      "transform's log2 length); half the memory";
  return p;
}

// --- data-dependent shapes as static ones ---------------------------------------------------------------------------

bool DynamicApplies(const Node& n) {
  if (!IsOp(n, {"aten::nonzero", "aten::masked_select", "aten::_unique2", "aten::_unique", "aten::unique_dim"}))
    return false;
  const Value* self = n.arg("self", 0);
  return self && self->is_tensor() && !self->tensor.is_dynamic();
}

Expected<RewritePlan> DynamicPlan(const Node& n) {
  const TensorMeta& x = n.arg("self", 0)->tensor;
  const int64_t total = x.numel();
  RewritePlan p;
  if (n.op == "aten::nonzero") {
    p.calls.push_back(Call("aten::nonzero_static", "default", {T("self", x), I("size", total), I("fill_value", -1)},
                           {Meta(PrimitiveType::S64, {total, x.rank()})}));
    p.python =
        Legend(n) +
        fmt::format(
            "\nidx = torch.nonzero_static(x, size={}, fill_value=-1)   # rows past the count of nonzeros are -1\n"
            "count = (x != 0).sum()   # where the number is needed",
            total);
    p.changes = fmt::format(
        "a fixed {} rows instead of one per nonzero: the rows after the nonzeros hold -1, which "
        "later code must mask or ignore; values otherwise equal torch.nonzero's",
        total);
    return p;
  }
  if (n.op == "aten::masked_select") {
    const TensorMeta& mask = n.arg("mask", 1)->tensor;
    std::vector<int64_t> dims = BroadcastDims(x.sizes, mask.sizes);
    p.calls.push_back(
        Call("aten::where", "self",
             {T("condition", Meta(PrimitiveType::PRED, mask.sizes)), T("self", x), T("other", Meta(x.dtype, {}))},
             {Meta(x.dtype, dims)}));
    p.python =
        Legend(n) +
        "\nout = torch.where(y, x, torch.zeros((), dtype=x.dtype, device=x.device))   # the shape of x; the "
        "selected values stay in place\n"
        "# a reduction over the selection: (out * y).sum() / y.sum() instead of torch.masked_select(x, y).mean()";
    p.changes = fmt::format(
        "the result keeps x's {} elements (zeros where the mask is false) instead of a 1-d tensor "
        "of the selected ones; a sum or count over it is PyTorch-exact, anything that reads "
        "positions is not",
        TensorMeta{x.dtype, dims, {}, {}}.numel());
    return p;
  }
  // unique: sorted values and a mask of the first of each run of equal values, both of the input's size.
  const TensorMeta flat = Meta(x.dtype, {total});
  if (x.rank() != 1) p.calls.push_back(Call("aten::view", "default", {T("self", x), Ints("size", {-1})}, {flat}));
  p.calls.push_back(Call("aten::sort", "default", {T("self", flat), I("dim", -1), B("descending", false)},
                         {flat, Meta(PrimitiveType::S64, {total})}));
  if (total > 1) {
    const TensorMeta rest = Meta(x.dtype, {total - 1});
    p.calls.push_back(Call("aten::slice", "Tensor",
                           {T("self", flat), I("dim", 0), I("start", 1), I("end", total), I("step", 1)}, {rest}));
    p.calls.push_back(Call("aten::slice", "Tensor",
                           {T("self", flat), I("dim", 0), I("start", 0), I("end", total - 1), I("step", 1)}, {rest}));
    p.calls.push_back(
        Call("aten::ne", "Tensor", {T("self", rest), T("other", rest)}, {Meta(PrimitiveType::PRED, {total - 1})}));
    p.calls.push_back(
        Call("aten::cat", "default",
             {TList("tensors", {Meta(PrimitiveType::PRED, {1}), Meta(PrimitiveType::PRED, {total - 1})}), I("dim", 0)},
             {Meta(PrimitiveType::PRED, {total})}));
  }
  p.python = Legend(n) +
             "\ns, order = torch.sort(x.flatten())\n"
             "first = torch.cat((torch.ones(1, dtype=torch.bool, device=x.device), s[1:] != s[:-1]))\n"
             "# the distinct values are s[first]; keep s and the mask: count = first.sum(),\n"
             "# inverse = (first.cumsum(0) - 1)[order.argsort()], counts by a scatter_add over it";
  p.changes = fmt::format(
      "{} sorted values and a mask marking the first of each distinct value, instead of a "
      "tensor of the distinct values alone; the distinct values, in order, are PyTorch-exact",
      total);
  return p;
}

// --- linear algebra without the custom calls (Qr, Eigh) a backend lacks ----------------------------------------------

bool Is2dFloat(const Value* v) {
  return v && v->is_tensor() && v->tensor.rank() == 2 && !v->tensor.is_dynamic() &&
         (v->tensor.dtype == PrimitiveType::F32 || v->tensor.dtype == PrimitiveType::F64);
}

// Classical Gram-Schmidt QR of a [m, n] matrix (m >= n) as aten calls: column j minus its projection on the columns
// before it, normalized; R = Q^T A.
void GramSchmidtCalls(std::vector<Node>& c, PrimitiveType t, int64_t m, int64_t n) {
  const TensorMeta a = Meta(t, {m, n}), col = Meta(t, {m});
  for (int64_t j = 0; j < n; ++j) {
    c.push_back(Call("aten::select", "int", {T("self", a), I("dim", -1), I("index", j)}, {col}));
    if (j > 0) {
      std::vector<TensorMeta> cols(static_cast<size_t>(j), col);
      const TensorMeta qj = Meta(t, {m, j}), cj = Meta(t, {j});
      c.push_back(Call("aten::stack", "default", {TList("tensors", cols), I("dim", -1)}, {qj}));
      c.push_back(Call("aten::matmul", "default", {T("self", col), T("other", qj)}, {cj}));
      c.push_back(Call("aten::matmul", "default", {T("self", qj), T("other", cj)}, {col}));
      c.push_back(Call("aten::sub", "Tensor", {T("self", col), T("other", col)}, {col}));
    }
    c.push_back(Call("aten::linalg_vector_norm", "default", {T("self", col), {"ord", Value::Float(2)}}, {Meta(t, {})}));
    c.push_back(Call("aten::div", "Tensor", {T("self", col), T("other", Meta(t, {}))}, {col}));
  }
  const TensorMeta q = Meta(t, {m, n}), qt = Meta(t, {n, m}), r = Meta(t, {n, n});
  c.push_back(Call("aten::stack", "default",
                   {TList("tensors", std::vector<TensorMeta>(static_cast<size_t>(n), col)), I("dim", -1)}, {q}));
  c.push_back(Call("aten::transpose", "int", {T("self", q), I("dim0", -2), I("dim1", -1)}, {qt}));
  c.push_back(Call("aten::matmul", "default", {T("self", qt), T("other", a)}, {r}));
}

// One step of the unshifted QR algorithm on a symmetric [n, n] matrix (A' = R Q, V' = V Q), then its diagonal
// sorted: every iteration is the same calls, so one stands for all.
void QrIterationCalls(std::vector<Node>& c, PrimitiveType t, int64_t n) {
  GramSchmidtCalls(c, t, n, n);
  const TensorMeta sq = Meta(t, {n, n}), v = Meta(t, {n});
  c.push_back(Call("aten::matmul", "default", {T("self", sq), T("other", sq)}, {sq}));
  c.push_back(Call("aten::matmul", "default", {T("self", sq), T("other", sq)}, {sq}));
  c.push_back(Call("aten::diagonal", "default", {T("self", sq), I("offset", 0), I("dim1", 0), I("dim2", 1)}, {v}));
  c.push_back(Call("aten::sort", "default", {T("self", v), I("dim", -1), B("descending", false)},
                   {v, Meta(PrimitiveType::S64, {n})}));
}

constexpr const char* kGramSchmidtPython =
    "def qr_gram_schmidt(A):   # reduced QR with matmuls only (no Qr custom call)\n"
    "    Q = []\n"
    "    for j in range(A.shape[-1]):\n"
    "        v = A[:, j]\n"
    "        if Q:\n"
    "            Qj = torch.stack(Q, -1)\n"
    "            v = v - Qj @ (v @ Qj)\n"
    "        Q.append(v / torch.linalg.vector_norm(v))\n"
    "    Q = torch.stack(Q, -1)\n"
    "    return Q, Q.transpose(-2, -1) @ A\n";

constexpr const char* kEighPython =
    "def eigh_qr_iteration(A, iters=100):   # symmetric A: eigenvalues ascending, eigenvectors as columns\n"
    "    V = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)\n"
    "    for _ in range(iters):\n"
    "        Q, R = qr_gram_schmidt(A)\n"
    "        A, V = R @ Q, V @ Q\n"
    "    w, order = torch.sort(torch.diagonal(A))\n"
    "    return w, V[:, order]\n";

bool LinalgApplies(const Node& n) {
  const Value* a = n.arg(n.op == "aten::linalg_qr" ? "A" : n.op.find("svd") != std::string::npos ? "A" : "A", 0);
  if (!Is2dFloat(a)) a = n.arg("self", 0);
  if (!Is2dFloat(a)) return false;
  const int64_t m = a->tensor.sizes[0], k = a->tensor.sizes[1];
  if (n.op == "aten::linalg_qr") {
    const Value* mode = n.arg("mode", 1);
    return m >= k && (!mode || mode->is_none() || mode->s == "reduced");
  }
  if (IsOp(n, {"aten::linalg_eigh", "aten::_linalg_eigh", "aten::linalg_eigvalsh"})) return m == k;
  if (IsOp(n, {"aten::linalg_svd", "aten::_linalg_svd"})) {
    const Value* full = n.arg("full_matrices", 1);
    return m >= k && (m == k || (full && !full->b));
  }
  if (n.op == "aten::linalg_svdvals") return m >= k;
  return false;
}

Expected<RewritePlan> LinalgPlan(const Node& n) {
  const Value* av = n.arg("A", 0);
  if (!Is2dFloat(av)) av = n.arg("self", 0);
  const TensorMeta& a = av->tensor;
  const PrimitiveType t = a.dtype;
  const int64_t m = a.sizes[0], k = a.sizes[1];
  RewritePlan p;
  if (n.op == "aten::linalg_qr") {
    GramSchmidtCalls(p.calls, t, m, k);
    p.python = Legend(n) + "\n" + kGramSchmidtPython + "Q, R = qr_gram_schmidt(x)   # torch.linalg.qr(x)";
    p.override_python = std::string(kGramSchmidtPython) +
                        "_lib = torch.library.Library(\"aten\", \"IMPL\")\n"
                        "_lib.impl(\"linalg_qr\", lambda A, mode=\"reduced\": qr_gram_schmidt(A), \"XLA\")";
    p.changes = fmt::format(
        "{} matmul-vector steps instead of Householder reflections: equals torch.linalg.qr up to "
        "the signs of Q's columns and R's rows; loses orthogonality for ill-conditioned x "
        "(run it twice on Q to restore it)",
        k);
    return p;
  }
  if (IsOp(n, {"aten::linalg_eigh", "aten::_linalg_eigh", "aten::linalg_eigvalsh"})) {
    QrIterationCalls(p.calls, t, k);
    p.python =
        Legend(n) + "\n" + kGramSchmidtPython + kEighPython + "w, V = eigh_qr_iteration(x)   # torch.linalg.eigh(x)";
    p.override_python =
        std::string(kGramSchmidtPython) + kEighPython +
        "_lib = torch.library.Library(\"aten\", \"IMPL\")\n"
        "_lib.impl(\"_linalg_eigh\", lambda A, UPLO=\"L\", compute_v=True: eigh_qr_iteration(A), \"XLA\")";
    p.changes =
        "iterative: eigenvalues converge to torch.linalg.eigh's for well-separated eigenvalues (more "
        "iterations when they are close); eigenvectors equal up to sign; each iteration is a QR and two "
        "matmuls";
    return p;
  }
  // SVD: the eigen-decomposition of x^T x.
  const TensorMeta at = Meta(t, {k, m}), ata = Meta(t, {k, k}), s = Meta(t, {k}), u = Meta(t, {m, k});
  p.calls.push_back(Call("aten::transpose", "int", {T("self", a), I("dim0", -2), I("dim1", -1)}, {at}));
  p.calls.push_back(Call("aten::matmul", "default", {T("self", at), T("other", a)}, {ata}));
  QrIterationCalls(p.calls, t, k);
  p.calls.push_back(Call("aten::sqrt", "default", {T("self", s)}, {s}));
  p.calls.push_back(Call("aten::matmul", "default", {T("self", a), T("other", ata)}, {u}));
  p.calls.push_back(Call("aten::div", "Tensor", {T("self", u), T("other", s)}, {u}));
  p.python = Legend(n) + "\n" + kGramSchmidtPython + kEighPython +
             "w, V = eigh_qr_iteration(x.transpose(-2, -1) @ x)\n"
             "S, V = w.flip(-1).clamp_min(0).sqrt(), V.flip(-1)   # descending, as torch.linalg.svd\n"
             "U = (x @ V) / S   # torch.linalg.svd(x, full_matrices=False) == (U, S, V.mT)";
  p.override_python = std::string(kGramSchmidtPython) + kEighPython +
                      "def svd_via_eigh(A, full_matrices=False, compute_uv=True, driver=None):\n"
                      "    w, V = eigh_qr_iteration(A.transpose(-2, -1) @ A)\n"
                      "    S, V = w.flip(-1).clamp_min(0).sqrt(), V.flip(-1)\n"
                      "    return (A @ V) / S, S, V.transpose(-2, -1)\n"
                      "_lib = torch.library.Library(\"aten\", \"IMPL\")\n"
                      "_lib.impl(\"_linalg_svd\", svd_via_eigh, \"XLA\")";
  p.changes =
      "through the eigenvalues of x^T x: squares x's condition number, so small singular values lose "
      "precision (relative error about eps * (s_max / s)**2); singular vectors equal up to sign; iterative as "
      "the eigh rewrite";
  return p;
}

// --- ops outside aten on the CPU ------------------------------------------------------------------------------------

bool CpuFallbackApplies(const Node& n) {
  return n.op.rfind("aten::", 0) != 0 && n.op.rfind("prims::", 0) != 0 && n.op.rfind("prim::", 0) != 0;
}

int64_t Bytes(const TensorMeta& m) { return m.numel() * hlo::ByteWidth(m.dtype); }

Expected<RewritePlan> CpuFallbackPlan(const Node& n) {
  int64_t in = 0, out = 0;
  for (const TensorMeta* m : TensorArgs(n)) in += Bytes(*m);
  for (const auto& v : n.outputs)
    if (v.is_tensor()) out += Bytes(v.tensor);
  RewritePlan p;
  std::string call = TorchOpsCall(n);
  std::string args = call.substr(call.find('(') + 1);
  args.pop_back();
  // Each tensor argument moves to the CPU: `x` becomes `x.cpu()`.
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= args.size()) {
    size_t comma = args.find(", ", start);
    std::string part = args.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (part.size() <= 3 && !part.empty() && std::isalpha(static_cast<unsigned char>(part[0])) &&
        part.find_first_of("0123456789[]") == std::string::npos)
      part += ".cpu()";
    parts.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 2;
  }
  p.python = Legend(n) + fmt::format(
                             "\n# run it on the CPU: its inputs go to the host and its result back to the device\n"
                             "out = {}({}).to(x.device)",
                             call.substr(0, call.find('(')), fmt::join(parts, ", "));
  p.override_python = fmt::format(
      "torch.library.impl(\"{}\", \"XLA\")(\n"
      "    lambda *a: {}(*[t.cpu() if torch.is_tensor(t) else t for t in a]).to(a[0].device))",
      QualifiedOpName(n.op, n.overload), call.substr(0, call.find('(')));
  p.changes = fmt::format(
      "nothing of the call stays on the device; each call moves {} B to the host and {} B back, "
      "and torch_xla cuts the step's graph at it (the calls before it run as one graph, the rest "
      "as another)",
      in, out);
  p.exact = true;
  return p;
}

}  // namespace

hlo::PrimitiveType PairElementType(hlo::PrimitiveType t) {
  if (t == PrimitiveType::C64) return PrimitiveType::F32;
  if (t == PrimitiveType::C128) return PrimitiveType::F64;
  return t;
}

std::span<const Rewrite> BuiltinRewrites() {
  static const std::vector<Rewrite> table = {
      {"fft-as-dft-matmul", "FFT as a real DFT-matrix product",
       "aten::_fft_r2c, aten::_fft_c2c (torch.fft.fft, rfft, ifft)", "one transformed dim; static shapes",
       FftAsDftApplies, FftAsDftPlan},
      {"complex-as-real-pairs", "complex arithmetic as real arithmetic on view_as_real pairs",
       "aten::mul.Tensor, aten::add.Tensor, aten::sub.Tensor, aten::div.Tensor (and in-place forms)",
       "a complex result; add/sub without alpha; div with a complex numerator", ComplexArithmeticApplies,
       ComplexArithmeticPlan},
      {"c128-fft-as-c64", "FFT in complex64 instead of complex128", "aten::_fft_* (torch.fft.*)",
       "a c128 or f64 tensor", C128FftApplies, C128FftPlan},
      {"f64-as-f32", "float64 computed in float32", "any aten call", "an f64 tensor and no c128 one", F64Applies,
       F64Plan},
      {"s64-as-s32", "int64 indices and counts as int32", "any aten call",
       "an s64/u64 tensor and no f64 or complex one", S64Applies, S64Plan},
      {"static-shape", "data-dependent shape as a static-size form",
       "aten::nonzero, aten::masked_select, aten::_unique2, aten::_unique, aten::unique_dim", "static input shapes",
       DynamicApplies, DynamicPlan},
      {"linalg-plain", "linear algebra with matmuls instead of a Qr/Eigh custom call",
       "aten::linalg_qr, aten::linalg_eigh, aten::_linalg_eigh, aten::linalg_eigvalsh, aten::linalg_svd, "
       "aten::_linalg_svd, aten::linalg_svdvals",
       "a 2-d f32/f64 matrix; QR reduced with m >= n; SVD without full matrices unless square", LinalgApplies,
       LinalgPlan},
      {"cpu-fallback", "run the op on the CPU", "calls outside aten (torchvision::nms, a torch.library op)", "none",
       CpuFallbackApplies, CpuFallbackPlan},
  };
  return table;
}

}  // namespace opprobe::analyzer::suggest
