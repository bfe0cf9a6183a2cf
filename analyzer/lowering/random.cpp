// Random ops lower to XLA's `rng` instruction (distribution uniform or normal), as torch_xla's
// RngUniform/RngNormal do; dropout masks compare a uniform sample with p; the other distributions
// (exponential_, cauchy_, log_normal_, geometric_) transform a uniform or normal sample; poisson and
// _sample_dirichlet (Gamma) are while loops of draws.
#include <fmt/format.h>

#include <cmath>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

std::pair<std::vector<int64_t>, PrimitiveType> OutShape(const LoweringContext& ctx) {
  if (const TensorMeta* m = ctx.OutputMeta(0)) return {m->sizes, m->dtype};
  if (const TensorMeta* s = ctx.ArgMeta("self", 0)) return {s->sizes, s->dtype};
  return {ctx.Ints("size", 0), ctx.Dtype("dtype", 1).value_or(PrimitiveType::F32)};
}

// rng over a float type (f32 for integer or low-precision outputs, then converted).
Instruction* RngIn(Builder& b, PrimitiveType t, double a, double bb, hlo::RandomDistribution d,
                   const std::vector<int64_t>& dims) {
  PrimitiveType ct = t == PrimitiveType::F64 ? PrimitiveType::F64 : hlo::IsFloatingPoint(t) ? t : PrimitiveType::F32;
  return b.Rng(Scalar(b, ct, a), Scalar(b, ct, bb), d, Shape::Array(ct, dims));
}

// uniform(self, from, to) and rand/rand_like (`standard`: [0, 1)).
Expected<LoweredOp> RandUniform(const Node& n, Builder& b, bool standard) {
  LoweringContext ctx(n, b);
  auto [dims, t] = OutShape(ctx);
  double lo = ctx.Double("from", 1, 0), hi = ctx.Double("to", 2, 1);
  if (standard) lo = 0, hi = 1;
  if (hlo::IsComplex(t)) {
    PrimitiveType rt = hlo::ComplexComponentType(t);
    Instruction* re = RngIn(b, rt, lo, hi, hlo::RandomDistribution::kUniform, dims);
    Instruction* im = RngIn(b, rt, lo, hi, hlo::RandomDistribution::kUniform, dims);
    return ctx.Finish({b.Complex(b.Convert(re, rt), b.Convert(im, rt))});
  }
  return ctx.Finish({b.Convert(RngIn(b, t, lo, hi, hlo::RandomDistribution::kUniform, dims), t)});
}

Expected<LoweredOp> Uniform(const Node& n, Builder& b) { return RandUniform(n, b, false); }
Expected<LoweredOp> Rand(const Node& n, Builder& b) { return RandUniform(n, b, true); }

// normal(mean, std) (mean and std numbers or tensors) and randn/randn_like (`standard`: mean 0, std 1).
Expected<LoweredOp> RandNormal(const Node& n, Builder& b, bool standard) {
  LoweringContext ctx(n, b);
  auto [dims, t] = OutShape(ctx);
  // normal.Tensor_Tensor etc: mean/std tensors scale a standard normal sample.
  Instruction* mean_t = standard ? nullptr : ctx.Tensor("mean", 0);
  Instruction* std_t = standard ? nullptr : ctx.Tensor("std", 1);
  if (mean_t || std_t) {
    Instruction* z = b.Convert(RngIn(b, t, 0, 1, hlo::RandomDistribution::kNormal, dims), t);
    Instruction* sd = std_t ? Bcast(b, b.Convert(std_t, t), dims) : FullLike(b, z, ctx.Double("std", 1, 1));
    Instruction* mu = mean_t ? Bcast(b, b.Convert(mean_t, t), dims) : FullLike(b, z, ctx.Double("mean", 0, 0));
    return ctx.Finish({Add(b, Mul(b, z, sd), mu)});
  }
  double mean = ctx.Double("mean", 1, 0), sd = ctx.Double("std", 2, 1);
  if (standard) mean = 0, sd = 1;
  if (!standard && n.overload == "float_float") mean = ctx.Double("mean", 0, 0), sd = ctx.Double("std", 1, 1);
  if (hlo::IsComplex(t)) {
    PrimitiveType rt = hlo::ComplexComponentType(t);
    double s = sd / std::sqrt(2.0);
    Instruction* re = RngIn(b, rt, mean, s, hlo::RandomDistribution::kNormal, dims);
    Instruction* im = RngIn(b, rt, 0, s, hlo::RandomDistribution::kNormal, dims);
    return ctx.Finish({b.Complex(b.Convert(re, rt), b.Convert(im, rt))});
  }
  return ctx.Finish({b.Convert(RngIn(b, t, mean, sd, hlo::RandomDistribution::kNormal, dims), t)});
}

Expected<LoweredOp> Normal(const Node& n, Builder& b) { return RandNormal(n, b, false); }
Expected<LoweredOp> Randn(const Node& n, Builder& b) { return RandNormal(n, b, true); }

// Where an integer sampler's bounds are: random_(self, from, to), randint(low, high, size) or
// randint_like(self, low, high).
enum class IntBounds { kFromTo, kLowHigh, kLikeLowHigh };

Expected<LoweredOp> RandInt(const Node& n, Builder& b, IntBounds bounds) {
  LoweringContext ctx(n, b);
  auto [dims, t] = OutShape(ctx);
  double lo = 0, hi = 0;
  if (bounds == IntBounds::kFromTo) {
    const Value* from = ctx.Arg("from", 1);
    const Value* to = ctx.Arg("to", 2);
    if (to && !to->is_none()) {
      lo = from ? from->AsDouble() : 0;
      hi = to->AsDouble();
    } else if (from && !from->is_none() && from->kind != Value::Kind::kNone && n.overload == "to") {
      hi = from->AsDouble();
    } else {
      hi = hlo::IsFloatingPoint(t) ? std::ldexp(1.0, t == PrimitiveType::F64 ? 53 : 24) : 2147483647.0;
    }
  } else {
    const Value* low = ctx.Arg("low", 0);
    if (low && low->kind == Value::Kind::kInt && ctx.Arg("high", 1)) {
      lo = ctx.Double("low", 0, 0);
      hi = ctx.Double("high", 1, 0);
    } else {
      hi = ctx.Double("high", bounds == IntBounds::kLikeLowHigh ? 1 : 0, 0);
    }
  }
  // floor(uniform[lo, hi)) in f64 (exact for the integer range), then converted.
  Instruction* u = b.Rng(Scalar(b, PrimitiveType::F64, lo), Scalar(b, PrimitiveType::F64, hi),
                         hlo::RandomDistribution::kUniform, Shape::Array(PrimitiveType::F64, dims));
  return ctx.Finish({b.Convert(b.Unary(Opcode::kFloor, u), t)});
}

Expected<LoweredOp> Random(const Node& n, Builder& b) { return RandInt(n, b, IntBounds::kFromTo); }
Expected<LoweredOp> Randint(const Node& n, Builder& b) { return RandInt(n, b, IntBounds::kLowHigh); }
Expected<LoweredOp> RandintLike(const Node& n, Builder& b) { return RandInt(n, b, IntBounds::kLikeLowHigh); }

Expected<LoweredOp> Bernoulli(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  auto [dims, t] = OutShape(ctx);
  PrimitiveType ct = t == PrimitiveType::F64 ? PrimitiveType::F64 : PrimitiveType::F32;
  Instruction* u = RngIn(b, ct, 0, 1, hlo::RandomDistribution::kUniform, dims);
  Instruction* p = nullptr;
  if (Instruction* pt = ctx.Tensor("p", 1)) p = Bcast(b, b.Convert(pt, ct), dims);
  else if (n.overload == "default") p = b.Convert(ctx.Tensor("self", 0), ct);  // bernoulli(self): self is p
  else p = FullLike(b, u, ctx.Double("p", 1, 0.5));
  return ctx.Finish({b.Convert(b.Compare(u, p, ComparisonDirection::kLt), t)});
}

Expected<LoweredOp> NativeDropout(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("input", 0));
  double p = ctx.Double("p", 1, 0.5);
  const Value* train = ctx.Arg("train", 2);
  bool training = !train || train->is_none() || train->b;
  PrimitiveType t = x->shape.element_type();
  std::vector<int64_t> dims = Dims(x);
  if (!training) return ctx.Finish({x, Full(b, PrimitiveType::PRED, 1, dims)});
  Instruction* u = RngIn(b, t, 0, 1, hlo::RandomDistribution::kUniform, dims);
  Instruction* keep = b.Compare(u, FullLike(b, u, p), ComparisonDirection::kGe);
  double scale = p >= 1 ? 0 : 1.0 / (1.0 - p);
  Instruction* out = MulScalar(b, Mul(b, x, b.Convert(keep, t)), scale);
  return ctx.Finish({out, keep});
}

Expected<LoweredOp> NativeDropoutBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * m, ctx.RequiredTensor("mask", 1));
  double scale = ctx.Double("scale", 2, 1);
  PrimitiveType t = g->shape.element_type();
  return ctx.Finish({MulScalar(b, Mul(b, g, b.Convert(m, t)), scale)});
}

// rrelu_with_noise: negative inputs scaled by a slope drawn uniformly from [lower, upper) when
// training (an `rng`; the drawn slopes are what PyTorch writes into `noise`), by the mean slope
// (lower + upper) / 2 otherwise.
Expected<LoweredOp> RreluWithNoise(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  double lower = ctx.Double("lower", 2, 1.0 / 8), upper = ctx.Double("upper", 3, 1.0 / 3);
  bool training = ctx.Bool("training", 4, false);
  PrimitiveType t = x->shape.element_type();
  if (!hlo::IsFloatingPoint(t)) return ctx.Unsupported("rrelu needs a float input");
  std::vector<int64_t> dims = Dims(x);
  Instruction* slope = training ? b.Convert(RngIn(b, t, lower, upper, hlo::RandomDistribution::kUniform, dims), t)
                                : Full(b, t, (lower + upper) / 2, dims);
  Instruction* neg = CmpScalar(b, x, 0, ComparisonDirection::kLt);
  return ctx.Finish({b.Select(neg, Mul(b, x, slope), x)});
}

Expected<LoweredOp> Randperm(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  auto [dims, t] = OutShape(ctx);
  int64_t len = ctx.Int("n", 0, dims.empty() ? 0 : dims[0]);
  // Sort random keys with an iota payload; the payload is the permutation.
  Instruction* keys = b.Rng(Scalar(b, PrimitiveType::F32, 0), Scalar(b, PrimitiveType::F32, 1),
                            hlo::RandomDistribution::kUniform, Shape::Array(PrimitiveType::F32, {len}));
  Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, {len}), 0);
  Instruction* s = b.Sort({keys, io}, 0, SortComparator(b, {PrimitiveType::F32, PrimitiveType::S64}, false), false);
  return ctx.Finish({b.Convert(b.GetTupleElement(s, 1), t)});
}

Expected<LoweredOp> Multinomial(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * p, ctx.RequiredTensor("self", 0));
  int64_t k = ctx.Int("num_samples", 1, 1);
  bool replacement = ctx.Bool("replacement", 2, false);
  PrimitiveType t = p->shape.element_type();
  std::vector<int64_t> dims = Dims(p);
  int64_t last = static_cast<int64_t>(dims.size()) - 1;
  if (last < 0) return ctx.Unsupported("needs at least 1 dim");
  if (!replacement) {
    // Gumbel top-k: argsort(log(p) - log(-log(u))) descending, first k.
    Instruction* u = RngIn(b, t, 1e-20, 1, hlo::RandomDistribution::kUniform, dims);
    Instruction* g =
        Sub(b, b.Unary(Opcode::kLog, p), b.Unary(Opcode::kLog, b.Unary(Opcode::kNegate, b.Unary(Opcode::kLog, u))));
    Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, dims), last);
    Instruction* s = b.Sort({g, io}, last, SortComparator(b, {t, PrimitiveType::S64}, true), false);
    Instruction* idx = b.SliceInDim(b.GetTupleElement(s, 1), 0, k, 1, last);
    return ctx.Finish({idx});
  }
  // With replacement: inverse-CDF sampling, count of cdf entries below each uniform sample.
  Instruction* cdf = b.ReduceWindow(
      {p}, {Scalar(b, t, 0)},
      [&] {
        hlo::Window w;
        for (size_t i = 0; i < dims.size(); ++i) {
          hlo::WindowDimension wd;
          if (static_cast<int64_t>(i) == last) {
            wd.size = dims[i];
            wd.padding_low = dims[i] - 1;
          }
          w.dimensions.push_back(wd);
        }
        return w;
      }(),
      b.ScalarBinaryComputation(Opcode::kAdd, t));
  Instruction* total = ReduceSum(b, p, {last});
  std::vector<int64_t> sdims = dims;
  sdims[static_cast<size_t>(last)] = k;
  Instruction* u = RngIn(b, t, 0, 1, hlo::RandomDistribution::kUniform, sdims);
  std::vector<int64_t> keep = DimRange(0, last);
  Instruction* ut = Mul(b, u, b.Broadcast(total, sdims, keep));
  // [.., k, n] compare
  std::vector<int64_t> big = sdims;
  big.push_back(dims.back());
  std::vector<int64_t> umap = keep, cmap = keep;
  umap.push_back(last);
  cmap.push_back(last + 1);
  Instruction* lt = b.Compare(b.Broadcast(cdf, big, cmap), b.Broadcast(ut, big, umap), ComparisonDirection::kLe);
  Instruction* cnt = ReduceSum(b, b.Convert(lt, PrimitiveType::S64), {last + 1});
  Instruction* maxi = Full(b, PrimitiveType::S64, static_cast<double>(dims.back() - 1), sdims);
  return ctx.Finish({b.Binary(Opcode::kMinimum, cnt, maxi)});
}

// exponential_(lambd), cauchy_(median, sigma), log_normal_(mean, std), geometric_(p): a transform of a uniform
// or normal rng sample, as PyTorch's CPU kernels draw them.
enum class Distribution { kExponential, kCauchy, kLogNormal, kGeometric };

Expected<LoweredOp> RandDerived(const Node& n, Builder& b, Distribution dist) {
  LoweringContext ctx(n, b);
  auto [dims, t] = OutShape(ctx);
  PrimitiveType ct = t == PrimitiveType::F64 ? PrimitiveType::F64 : PrimitiveType::F32;
  Instruction* r = nullptr;
  if (dist == Distribution::kLogNormal) {
    Instruction* z =
        RngIn(b, ct, ctx.Double("mean", 1, 1), ctx.Double("std", 2, 2), hlo::RandomDistribution::kNormal, dims);
    r = b.Unary(Opcode::kExp, z);
  } else {
    Instruction* u = RngIn(b, ct, 0, 1, hlo::RandomDistribution::kUniform, dims);
    Instruction* log1mu = b.Unary(Opcode::kLog1p, b.Unary(Opcode::kNegate, u));  // log(1 - u), u in [0, 1)
    if (dist == Distribution::kExponential) {
      r = MulScalar(b, log1mu, -1.0 / ctx.Double("lambd", 1, 1));
    } else if (dist == Distribution::kCauchy) {
      Instruction* tan = b.Unary(Opcode::kTan, MulScalar(b, AddScalar(b, u, -0.5), std::acos(-1.0)));
      r = AddScalar(b, MulScalar(b, tan, ctx.Double("sigma", 2, 1)), ctx.Double("median", 1, 0));
    } else {  // geometric
      double p = ctx.Double("p", 1, 0.5);
      if (!(p > 0 && p < 1)) return ctx.Unsupported("p must be in (0, 1)");
      r = b.Unary(Opcode::kCeil, MulScalar(b, log1mu, 1.0 / std::log1p(-p)));
    }
  }
  return ctx.Finish({b.Convert(r, t)});
}

// poisson(self): one Poisson(self) count per element. XLA's rng has no Poisson distribution and PyTorch/XLA
// samples it on the CPU; this is Knuth's method as PyTorch's CPU kernel uses it for rates below 10, in log
// form: exponential inter-arrival times -log(1 - u) are added up in a `while` loop until each element's time
// passes its rate, and the count of arrivals before that is the sample. The loop runs until the slowest element
// is done (about its rate plus a few standard deviations of iterations), every element drawing each time.
Expected<LoweredOp> Poisson(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * rate0, ctx.RequiredTensor("self", 0));
  PrimitiveType t = ctx.OutputType(0, rate0->shape.element_type());
  if (!hlo::IsFloatingPoint(t)) return ctx.Unsupported("poisson needs a float rate");
  PrimitiveType ct = t == PrimitiveType::F64 ? PrimitiveType::F64 : PrimitiveType::F32;
  std::vector<int64_t> dims = Dims(rate0);
  Instruction* rate = b.Convert(rate0, ct);
  Instruction* zeros = Full(b, ct, 0, dims);
  // state: elapsed time, arrivals counted, the rates, whether any element is still running
  LoopState init = {zeros, zeros, rate, b.ConstantScalar(PrimitiveType::PRED, 1)};
  auto cond = [](Builder& cb, const LoopState& st) { return st[3]; };
  auto body = [&](Builder& bb, const LoopState& st) -> LoopState {
    Instruction* u = RngIn(bb, ct, 0, 1, hlo::RandomDistribution::kUniform, dims);
    Instruction* gap = bb.Unary(Opcode::kNegate, bb.Unary(Opcode::kLog1p, bb.Unary(Opcode::kNegate, u)));
    Instruction* running = bb.Compare(st[0], st[2], ComparisonDirection::kLe);  // no arrival has passed the rate
    Instruction* time = bb.Select(running, Add(bb, st[0], gap), st[0]);
    Instruction* arrived = bb.Binary(Opcode::kAnd, running, bb.Compare(time, st[2], ComparisonDirection::kLe));
    Instruction* count = Add(bb, st[1], bb.Convert(arrived, ct));
    Instruction* more = Reduce(bb, arrived, AllDims(arrived), Opcode::kOr, bb.ConstantScalar(PrimitiveType::PRED, 0));
    return {time, count, st[2], more};
  };
  LoopState done = Loop(b, init, "poisson", cond, body);
  OPPROBE_ASSIGN_OR_RETURN(LoweredOp op, ctx.Finish({b.Convert(done[1], t)}));
  op.note = "a while loop over exponential inter-arrival times: its trip count grows with the largest rate";
  return op;
}

// _sample_dirichlet(self): one Dirichlet(self) sample per row of the last dim (Beta and Dirichlet distributions'
// rsample: pi0.5's flow-matching time), Gamma(alpha) samples normalized by their row's sum. XLA's rng has no Gamma
// distribution; this is Marsaglia and Tsang's rejection method, as PyTorch's CPU kernel uses it: with d = a - 1/3
// and c = 1 / sqrt(9 d), x normal and u uniform, v = (1 + c x)^3 is accepted when v > 0 and
// log u < x^2 / 2 + d - d v + d log v, and the sample is d v; a < 1 draws Gamma(a + 1) and scales it by u^(1/a). A
// `while` loop draws for every element until each has accepted one.
Expected<LoweredOp> SampleDirichlet(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * alpha0, ctx.RequiredTensor("self", 0));
  PrimitiveType t = ctx.OutputType(0, alpha0->shape.element_type());
  if (!hlo::IsFloatingPoint(t) || Rank(alpha0) < 1) return ctx.Unsupported("needs float concentrations of rank >= 1");
  PrimitiveType ct = t == PrimitiveType::F64 ? PrimitiveType::F64 : PrimitiveType::F32;
  std::vector<int64_t> dims = Dims(alpha0);
  Instruction* alpha = b.Convert(alpha0, ct);
  Instruction* small = CmpScalar(b, alpha, 1, ComparisonDirection::kLt);
  Instruction* a = b.Select(small, AddScalar(b, alpha, 1), alpha);
  Instruction* d = AddScalar(b, a, -1.0 / 3.0);
  Instruction* c = b.Unary(Opcode::kRsqrt, MulScalar(b, d, 9));
  Instruction* zeros = Full(b, ct, 0, dims);
  // state: the samples, whether each is accepted, d, c, whether any element is still drawing
  LoopState init = {zeros, Full(b, PrimitiveType::PRED, 0, dims), d, c, b.ConstantScalar(PrimitiveType::PRED, 1)};
  auto cond = [](Builder& cb, const LoopState& st) { return st[4]; };
  auto body = [&](Builder& bb, const LoopState& st) -> LoopState {
    Instruction* x = RngIn(bb, ct, 0, 1, hlo::RandomDistribution::kNormal, dims);
    Instruction* u = RngIn(bb, ct, 0, 1, hlo::RandomDistribution::kUniform, dims);
    Instruction* base = AddScalar(bb, Mul(bb, st[3], x), 1);
    Instruction* v = Mul(bb, Mul(bb, base, base), base);
    Instruction* positive = CmpScalar(bb, v, 0, ComparisonDirection::kGt);
    Instruction* safe_v = bb.Select(positive, v, FullLike(bb, v, 1));
    Instruction* bound = Add(bb, Add(bb, MulScalar(bb, Mul(bb, x, x), 0.5), st[2]),
                             Mul(bb, st[2], Sub(bb, bb.Unary(Opcode::kLog, safe_v), safe_v)));
    Instruction* ok =
        bb.Binary(Opcode::kAnd, positive, bb.Compare(bb.Unary(Opcode::kLog, u), bound, ComparisonDirection::kLt));
    Instruction* take = bb.Binary(Opcode::kAnd, ok, bb.Unary(Opcode::kNot, st[1]));
    Instruction* sample = bb.Select(take, Mul(bb, st[2], safe_v), st[0]);
    Instruction* accepted = bb.Binary(Opcode::kOr, st[1], ok);
    Instruction* pending = Reduce(bb, bb.Unary(Opcode::kNot, accepted), AllDims(accepted), Opcode::kOr,
                                  bb.ConstantScalar(PrimitiveType::PRED, 0));
    return {sample, accepted, st[2], st[3], pending};
  };
  LoopState done = Loop(b, init, "gamma", cond, body);
  Instruction* u = RngIn(b, ct, 0, 1, hlo::RandomDistribution::kUniform, dims);
  Instruction* boost = b.Binary(Opcode::kPower, u, Div(b, FullLike(b, alpha, 1), alpha));
  Instruction* gamma = b.Select(small, Mul(b, done[0], boost), done[0]);
  int64_t last = Rank(gamma) - 1;
  Instruction* sum = BcastBack(b, ReduceSum(b, gamma, {last}), dims, {last});
  OPPROBE_ASSIGN_OR_RETURN(LoweredOp op, ctx.Finish({b.Convert(Div(b, gamma, sum), t)}));
  op.note = "a while loop of rejection sampling (Gamma): its trip count is random";
  return op;
}

template <Distribution kDist>
Expected<LoweredOp> Sample(const Node& n, Builder& b) {
  return RandDerived(n, b, kDist);
}

// dropout(input, p, train), which torch.export keeps undecomposed: the identity in eval mode, else
// native_dropout's first value.
Expected<LoweredOp> DropoutComposite(const Node& n, Builder& b) {
  bool train = ArgOr(n, "train", 2, Value::Bool(false)).AsDouble() != 0;
  double p = ArgOr(n, "p", 1, Value::Float(0.5)).AsDouble();
  if (!train || p == 0) {  // eval mode: the identity
    LoweringContext ctx(n, b);
    OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("input", 0));
    return ctx.Finish({b.Convert(x, ctx.OutputType(0, x->shape.element_type()))});
  }
  return LowerAsFirstOutputOf(
      n, b, "aten::native_dropout", NativeDropout,
      {{"input", ArgOr(n, "input", 0, Value::None())}, {"p", Value::Float(p)}, {"train", Value::Bool(true)}});
}

}  // namespace

const LoweringFamily& RandomLowerings() {
  static const auto* family = new LoweringFamily{FamilyOf(__FILE__),
                                                 {
                                                     {"aten::rand", Rand},
                                                     {"aten::rand_like", Rand},
                                                     {"aten::uniform", Uniform, kInPlaceForm},
                                                     {"aten::randn", Randn},
                                                     {"aten::randn_like", Randn},
                                                     {"aten::normal", Normal, kInPlaceForm},
                                                     {"aten::randint", Randint},
                                                     {"aten::randint_like", RandintLike},
                                                     {"aten::random_", Random},
                                                     {"aten::bernoulli", Bernoulli, kInPlaceForm},
                                                     {"aten::exponential_", Sample<Distribution::kExponential>},
                                                     {"aten::cauchy_", Sample<Distribution::kCauchy>},
                                                     {"aten::log_normal_", Sample<Distribution::kLogNormal>},
                                                     {"aten::geometric_", Sample<Distribution::kGeometric>},
                                                     {"aten::randperm", Randperm},
                                                     {"aten::multinomial", Multinomial},
                                                     {"aten::poisson", Poisson},
                                                     {"aten::_sample_dirichlet", SampleDirichlet},
                                                     {"aten::native_dropout", NativeDropout},
                                                     {"aten::native_dropout_backward", NativeDropoutBackward},
                                                     {"aten::dropout", DropoutComposite},
                                                     {"aten::rrelu_with_noise", RreluWithNoise},
                                                 }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
