// Recurrent layers. PyTorch 2.x runs nn.LSTM on the CPU through oneDNN: one call of aten::mkldnn_rnn_layer per layer
// and direction, and aten::mkldnn_rnn_layer_backward in a training step. On an XLA device the LSTM runs its cells, so
// both lower to the LSTM recurrence over the time steps as an HLO while loop (the module's size does not grow with the
// sequence): the input projection of every step is one dot before the loop, the loop carries h and c and applies the
// hidden projection and the gates (i, f, g, o, PyTorch's order) per step.
//
// The kernel takes the input time-major, [T, B, I], whatever `batch_first` says (nn.LSTM transposes before the call;
// the flag is metadata there), hx and cx [B, H]; `reverse` runs the steps from the last to the first. Its outputs are
// the output [T, B, H], hy, cy and a workspace: oneDNN's opaque byte buffer for its backward, which the lowering
// returns as zeros of the recorded size. The backward does not read the workspace: it recomputes the gates from the
// input, the recorded output (each step's previous h) and hx in one dot, the cell states by an elementwise loop, then
// runs the gradient loop from the last step back. Its outputs: grads of the input, w_ih, w_hh, b_ih, b_hh (the same
// values, the gates' pre-activation grads summed), hx and cx.
#include <fmt/format.h>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

constexpr int64_t kLstmMode = 2;  // ATen's RNN mode numbering: 0 RNN_RELU, 1 RNN_TANH, 2 LSTM, 3 GRU

hlo::DotDimensionNumbers Contract(std::vector<int64_t> lc, std::vector<int64_t> rc) {
  hlo::DotDimensionNumbers d;
  d.lhs_contracting_dimensions = std::move(lc);
  d.rhs_contracting_dimensions = std::move(rc);
  return d;
}

Instruction* Sigmoid(Builder& b, Instruction* x) { return b.Unary(Opcode::kLogistic, x); }
Instruction* Tanh(Builder& b, Instruction* x) { return b.Unary(Opcode::kTanh, x); }
Instruction* OneMinus(Builder& b, Instruction* x) { return Sub(b, FullLike(b, x, 1), x); }

// Step t of a [T, ...] value, without its leading dim.
Instruction* Step(Builder& b, Instruction* x, Instruction* t) {
  std::vector<int64_t> d = Dims(x);
  std::vector<Instruction*> starts{t};
  std::vector<int64_t> sizes = d;
  sizes[0] = 1;
  for (size_t i = 1; i < d.size(); ++i) starts.push_back(b.ConstantScalar(PrimitiveType::S32, 0));
  return b.Reshape(b.DynamicSlice(x, starts, sizes), std::vector<int64_t>(d.begin() + 1, d.end()));
}

// `x` with step t replaced by `v` (v without the leading dim).
Instruction* SetStep(Builder& b, Instruction* x, Instruction* v, Instruction* t) {
  std::vector<int64_t> d = Dims(v);
  d.insert(d.begin(), 1);
  std::vector<Instruction*> starts{t};
  for (size_t i = 1; i < d.size(); ++i) starts.push_back(b.ConstantScalar(PrimitiveType::S32, 0));
  return b.DynamicUpdateSlice(x, b.Reshape(v, d), starts);
}

// Gate k (0 i, 1 f, 2 g, 3 o) of [..., 4H] values.
Instruction* Gate(Builder& b, Instruction* x, int k, int64_t H) {
  return b.SliceInDim(x, k * H, (k + 1) * H, 1, Rank(x) - 1);
}

Instruction* CountBelow(Builder& b, Instruction* t, int64_t n) {
  return b.Compare(t, b.ConstantScalar(PrimitiveType::S32, static_cast<double>(n)), ComparisonDirection::kLt);
}
Instruction* Next(Builder& b, Instruction* t) {
  return b.Binary(Opcode::kAdd, t, b.ConstantScalar(PrimitiveType::S32, 1));
}

// The operands both directions read, checked against one another and converted to the input's type.
struct LstmOperands {
  Instruction *x = nullptr, *w_ih = nullptr, *w_hh = nullptr, *bias = nullptr, *hx = nullptr, *cx = nullptr;
  int64_t T = 0, B = 0, I = 0, H = 0;
  PrimitiveType t = PrimitiveType::F32;
  bool reverse = false;
};

Expected<LstmOperands> ReadLstm(const LoweringContext& ctx, const char* w_ih, const char* w_hh, const char* b_ih,
                                const char* b_hh, const char* cx, size_t reverse_pos, size_t mode_pos,
                                size_t hidden_pos, size_t has_biases_pos, size_t batch_sizes_pos) {
  Builder& b = ctx.builder;
  LstmOperands o;
  OPPROBE_ASSIGN_OR_RETURN(o.x, ctx.RequiredTensor("input", 0));
  OPPROBE_ASSIGN_OR_RETURN(o.w_ih, ctx.RequiredTensor(w_ih, 1));
  OPPROBE_ASSIGN_OR_RETURN(o.w_hh, ctx.RequiredTensor(w_hh, 2));
  OPPROBE_ASSIGN_OR_RETURN(o.hx, ctx.RequiredTensor("hx_", 5));
  OPPROBE_ASSIGN_OR_RETURN(o.cx, ctx.RequiredTensor(cx, 6));
  if (ctx.Int("mode", mode_pos, kLstmMode) != kLstmMode) return ctx.Unsupported("only the LSTM mode (2) is lowered");
  if (!ctx.Ints("batch_sizes", batch_sizes_pos).empty()) return ctx.Unsupported("a packed sequence (batch_sizes)");
  o.t = o.x->shape.element_type();
  if (!hlo::IsFloatingPoint(o.t)) return ctx.Unsupported("the input must be floating point");
  if (Rank(o.x) != 3) return ctx.Unsupported("the input must be [T, B, I]");
  o.T = Dims(o.x)[0], o.B = Dims(o.x)[1], o.I = Dims(o.x)[2];
  o.H = ctx.Int("hidden_size", hidden_pos, 0);
  std::vector<int64_t> state{o.B, o.H};
  if (Dims(o.w_ih) != std::vector<int64_t>{4 * o.H, o.I} || Dims(o.w_hh) != std::vector<int64_t>{4 * o.H, o.H})
    return ctx.Unsupported(fmt::format("weights must be [4H, I] and [4H, H] (H = {}, I = {})", o.H, o.I));
  if (Dims(o.hx) != state || Dims(o.cx) != state)
    return ctx.Unsupported("hx and cx must be [B, H] with the input's B (the input is time-major)");
  o.x = b.Convert(o.x, o.t), o.w_ih = b.Convert(o.w_ih, o.t), o.w_hh = b.Convert(o.w_hh, o.t);
  o.hx = b.Convert(o.hx, o.t), o.cx = b.Convert(o.cx, o.t);
  if (ctx.Bool("has_biases", has_biases_pos, true)) {
    OPPROBE_ASSIGN_OR_RETURN(Instruction * bi, ctx.RequiredTensor(b_ih, 3));
    OPPROBE_ASSIGN_OR_RETURN(Instruction * bh, ctx.RequiredTensor(b_hh, 4));
    if (Dims(bi) != std::vector<int64_t>{4 * o.H} || Dims(bh) != std::vector<int64_t>{4 * o.H})
      return ctx.Unsupported("biases must be [4H]");
    o.bias = Add(b, b.Convert(bi, o.t), b.Convert(bh, o.t));
  }
  o.reverse = ctx.Bool("reverse", reverse_pos, false);
  if (o.reverse) o.x = b.Reverse(o.x, {0});  // step order from here on
  return o;
}

// x·w_ih^T (+ the biases): every step's input projection, [T, B, 4H].
Instruction* InputProjection(Builder& b, const LstmOperands& o) {
  Instruction* xg = b.Dot(o.x, o.w_ih, Contract({2}, {1}));
  return o.bias ? Add(b, xg, b.Broadcast(o.bias, {o.T, o.B, 4 * o.H}, {2})) : xg;
}

// aten::mkldnn_rnn_layer(input, weight0..3, hx_, cx_, reverse, batch_sizes, mode, hidden_size, num_layers,
// has_biases, bidirectional, batch_first, train) -> (output, hy, cy, workspace).
Expected<LoweredOp> MkldnnRnnLayer(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(LstmOperands o,
                           ReadLstm(ctx, "weight0", "weight1", "weight2", "weight3", "cx_", 7, 9, 10, 12, 8));
  int64_t H = o.H, B = o.B;
  Instruction* out0 = Full(b, o.t, 0, {o.T, B, H});
  auto cond = [&](Builder& cb, const LoopState& s) { return CountBelow(cb, s[0], o.T); };
  auto body = [&](Builder& bb, const LoopState& s) -> LoopState {
    Instruction *t = s[0], *h = s[1], *c = s[2], *xg = s[3], *w_hh = s[4], *out = s[5];
    Instruction* g = Add(bb, Step(bb, xg, t), bb.Dot(h, w_hh, Contract({1}, {1})));  // [B, 4H]
    Instruction* c2 = Add(bb, Mul(bb, Sigmoid(bb, Gate(bb, g, 1, H)), c),
                          Mul(bb, Sigmoid(bb, Gate(bb, g, 0, H)), Tanh(bb, Gate(bb, g, 2, H))));
    Instruction* h2 = Mul(bb, Sigmoid(bb, Gate(bb, g, 3, H)), Tanh(bb, c2));
    return {Next(bb, t), h2, c2, xg, w_hh, SetStep(bb, out, h2, t)};
  };
  LoopState s = Loop(b, {b.ConstantScalar(PrimitiveType::S32, 0), o.hx, o.cx, InputProjection(b, o), o.w_hh, out0},
                     "lstm", cond, body);
  Instruction* out = o.reverse ? b.Reverse(s[5], {0}) : s[5];
  std::vector<Instruction*> outs{out, s[1], s[2]};
  for (size_t i = 0; i < outs.size(); ++i) outs[i] = b.Convert(outs[i], ctx.OutputType(i, o.t));
  if (const TensorMeta* ws = ctx.OutputMeta(3)) outs.push_back(Full(b, ws->dtype, 0, ws->sizes));
  return ctx.Finish(outs);
}

// aten::mkldnn_rnn_layer_backward(input, weight1..4, hx_, cx_tmp, output, hy_, cy_, grad_output, grad_hy, grad_cy,
// reverse, mode, hidden_size, num_layers, has_biases, train, bidirectional, batch_sizes, batch_first, workspace)
// -> (grad_input, grad_w_ih, grad_w_hh, grad_b_ih, grad_b_hh, grad_hx, grad_cx).
Expected<LoweredOp> MkldnnRnnLayerBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(LstmOperands o,
                           ReadLstm(ctx, "weight1", "weight2", "weight3", "weight4", "cx_tmp", 13, 14, 15, 17, 20));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * output, ctx.RequiredTensor("output", 7));
  int64_t T = o.T, B = o.B, H = o.H;
  std::vector<int64_t> seq{T, B, H}, state{B, H};
  if (Dims(output) != seq) return ctx.Unsupported("output must be [T, B, H]");
  auto grad = [&](const char* name, size_t pos, const std::vector<int64_t>& dims) -> Expected<Instruction*> {
    Instruction* g = ctx.Tensor(name, pos);
    if (!g) return Full(b, o.t, 0, dims);
    if (Dims(g) != dims) return ctx.Unsupported(fmt::format("{} must be shaped like its forward value", name));
    return b.Convert(g, o.t);
  };
  OPPROBE_ASSIGN_OR_RETURN(Instruction * gout, grad("grad_output", 10, seq));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * ghy, grad("grad_hy", 11, state));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * gcy, grad("grad_cy", 12, state));
  output = b.Convert(output, o.t);
  if (o.reverse) output = b.Reverse(output, {0}), gout = b.Reverse(gout, {0});
  if (T == 0) return ctx.Unsupported("an empty sequence");

  // Each step's previous h ([T, B, H]: hx, then the output but its last step) and the gates' activations.
  Instruction* hprev = b.Concatenate({b.Reshape(o.hx, {1, B, H}), b.SliceInDim(output, 0, T - 1, 1, 0)}, 0);
  Instruction* pre = Add(b, InputProjection(b, o), b.Dot(hprev, o.w_hh, Contract({2}, {1})));  // [T, B, 4H]
  Instruction* act = b.Concatenate({Sigmoid(b, Gate(b, pre, 0, H)), Sigmoid(b, Gate(b, pre, 1, H)),
                                    Tanh(b, Gate(b, pre, 2, H)), Sigmoid(b, Gate(b, pre, 3, H))},
                                   2);

  // The cell states c_t = f_t c_{t-1} + i_t g_t, [T, B, H].
  auto cond_c = [&](Builder& cb, const LoopState& s) { return CountBelow(cb, s[0], T); };
  auto body_c = [&](Builder& bb, const LoopState& s) -> LoopState {
    Instruction *t = s[0], *c = s[1], *a = s[2], *cs = s[3];
    Instruction* at = Step(bb, a, t);
    Instruction* c2 = Add(bb, Mul(bb, Gate(bb, at, 1, H), c), Mul(bb, Gate(bb, at, 0, H), Gate(bb, at, 2, H)));
    return {Next(bb, t), c2, a, SetStep(bb, cs, c2, t)};
  };
  Instruction* cs = Loop(b, {b.ConstantScalar(PrimitiveType::S32, 0), o.cx, act, Full(b, o.t, 0, seq)},
                         "lstm_cell_states", cond_c, body_c)[3];
  Instruction* cprev = b.Concatenate({b.Reshape(o.cx, {1, B, H}), b.SliceInDim(cs, 0, T - 1, 1, 0)}, 0);

  // From the last step back: dh, dc flow to the previous step; dA[t] is the gates' pre-activation grad, [T, B, 4H].
  auto cond = [&](Builder& cb, const LoopState& s) { return CountBelow(cb, s[0], T); };
  auto body = [&](Builder& bb, const LoopState& s) -> LoopState {
    Instruction *k = s[0], *dh = s[1], *dc = s[2], *a = s[3], *c_all = s[4], *cp_all = s[5], *go = s[6], *w_hh = s[7],
                *da = s[8];
    Instruction* t = bb.Binary(Opcode::kSubtract, bb.ConstantScalar(PrimitiveType::S32, static_cast<double>(T - 1)), k);
    Instruction *at = Step(bb, a, t), *c = Step(bb, c_all, t), *cp = Step(bb, cp_all, t);
    Instruction *i = Gate(bb, at, 0, H), *f = Gate(bb, at, 1, H), *g = Gate(bb, at, 2, H), *og = Gate(bb, at, 3, H);
    Instruction* dht = Add(bb, dh, Step(bb, go, t));
    Instruction* tc = Tanh(bb, c);
    Instruction* dct = Add(bb, dc, Mul(bb, Mul(bb, dht, og), OneMinus(bb, Mul(bb, tc, tc))));
    Instruction* dai = Mul(bb, Mul(bb, dct, g), Mul(bb, i, OneMinus(bb, i)));
    Instruction* daf = Mul(bb, Mul(bb, dct, cp), Mul(bb, f, OneMinus(bb, f)));
    Instruction* dag = Mul(bb, Mul(bb, dct, i), OneMinus(bb, Mul(bb, g, g)));
    Instruction* dao = Mul(bb, Mul(bb, dht, tc), Mul(bb, og, OneMinus(bb, og)));
    Instruction* dat = bb.Concatenate({dai, daf, dag, dao}, 1);  // [B, 4H]
    Instruction* dh_prev = bb.Dot(dat, w_hh, Contract({1}, {0}));
    return {Next(bb, k), dh_prev, Mul(bb, dct, f), a, c_all, cp_all, go, w_hh, SetStep(bb, da, dat, t)};
  };
  LoopState s = Loop(
      b,
      {b.ConstantScalar(PrimitiveType::S32, 0), ghy, gcy, act, cs, cprev, gout, o.w_hh, Full(b, o.t, 0, {T, B, 4 * H})},
      "lstm_backward", cond, body);
  Instruction* da = s[8];
  Instruction* gx = b.Dot(da, o.w_ih, Contract({2}, {0}));  // [T, B, I]
  if (o.reverse) gx = b.Reverse(gx, {0});
  Instruction* gw_ih = b.Dot(da, o.x, Contract({0, 1}, {0, 1}));    // [4H, I]
  Instruction* gw_hh = b.Dot(da, hprev, Contract({0, 1}, {0, 1}));  // [4H, H]
  Instruction* gb = ReduceSum(b, da, {0, 1});                       // [4H]
  std::vector<Instruction*> outs{gx, gw_ih, gw_hh, gb, gb, s[1], s[2]};
  for (size_t i = 0; i < outs.size(); ++i) outs[i] = b.Convert(outs[i], ctx.OutputType(i, o.t));
  return ctx.Finish(outs);
}

}  // namespace

const LoweringFamily& RnnLowerings() {
  static const auto* family = new LoweringFamily{FamilyOf(__FILE__),
                                                 {
                                                     {"aten::mkldnn_rnn_layer", MkldnnRnnLayer},
                                                     {"aten::mkldnn_rnn_layer_backward", MkldnnRnnLayerBackward},
                                                 }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
