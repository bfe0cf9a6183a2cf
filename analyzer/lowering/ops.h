// Declarations of every lowering function, by family (one .cpp per family). table.cpp registers
// them in the one sorted table.
#pragma once

#include "analyzer/lowering/context.h"

namespace opprobe::analyzer::lowering {

using Fn = LoweringFn;

// elementwise.cpp
Fn Unary(const std::string& op);     // abs, exp, relu, sigmoid, gelu, ... (by aten base name)
// The body of a float/same-type unary op over x (nullptr when `op` has none).
Instruction* ApplyUnary(Builder& b, const std::string& op, Instruction* x);
Fn Binary(const std::string& op);    // add, sub, mul, div, pow, maximum, atan2, bitwise_*, ...
Fn Compare(ComparisonDirection d);   // eq, ne, lt, le, gt, ge
Fn Logical(Opcode op);               // logical_and/or/xor (kAnd/kOr/kXor)
Expected<LoweredOp> Where(const Node&, Builder&);
Expected<LoweredOp> Clamp(const Node&, Builder&);
Expected<LoweredOp> ThresholdBackward(const Node&, Builder&);
Expected<LoweredOp> Threshold(const Node&, Builder&);
Fn ActivationBackward(const std::string& op);  // tanh_backward, sigmoid_backward, gelu_backward, ...
Expected<LoweredOp> Lerp(const Node&, Builder&);
Expected<LoweredOp> Addcmul(const Node&, Builder&);
Expected<LoweredOp> Addcdiv(const Node&, Builder&);
Expected<LoweredOp> ToCopy(const Node&, Builder&);   // _to_copy, to.dtype, type_as, ...
Expected<LoweredOp> Copy(const Node&, Builder&);     // copy_, copy
Expected<LoweredOp> NanToNum(const Node&, Builder&);
Expected<LoweredOp> LeakyRelu(const Node&, Builder&);
Expected<LoweredOp> Hardtanh(const Node&, Builder&);
Expected<LoweredOp> Elu(const Node&, Builder&);
Expected<LoweredOp> Softplus(const Node&, Builder&);
Expected<LoweredOp> Gelu(const Node&, Builder&);
Expected<LoweredOp> Polar(const Node&, Builder&);
Expected<LoweredOp> LogSigmoidForward(const Node&, Builder&);
Expected<LoweredOp> ComplexOp(const Node&, Builder&);

// shape.cpp
Expected<LoweredOp> Identity(const Node&, Builder&);   // detach, alias, lift_fresh, clone, contiguous, ...
Expected<LoweredOp> View(const Node&, Builder&);       // view, reshape, _reshape_alias, _unsafe_view
Expected<LoweredOp> Expand(const Node&, Builder&);
Expected<LoweredOp> Permute(const Node&, Builder&);
Expected<LoweredOp> TransposeOp(const Node&, Builder&);  // transpose.int, t, swapaxes, numpy_T
Expected<LoweredOp> Squeeze(const Node&, Builder&);
Expected<LoweredOp> Unsqueeze(const Node&, Builder&);
Expected<LoweredOp> ChannelShuffle(const Node&, Builder&);
Expected<LoweredOp> MultiMarginLossBackward(const Node&, Builder&);    // loss.cpp
Expected<LoweredOp> FractionalMaxPoolBackward(const Node&, Builder&);  // pooling.cpp
Expected<LoweredOp> EmbeddingRenorm(const Node&, Builder&);            // pooling.cpp (embedding_renorm_)
Expected<LoweredOp> Window(const Node&, Builder&);
Expected<LoweredOp> NativeMultiHeadAttention(const Node&, Builder&);  // attention.cpp
Expected<LoweredOp> TransformerEncoderLayerFwd(const Node&, Builder&);  // attention.cpp  // hann/hamming/blackman/bartlett/kaiser_window (factory.cpp)
Instruction* BesselI0(Builder& b, Instruction* x);   // special.cpp
Expected<LoweredOp> RandDerived(const Node&, Builder&);  // exponential_, cauchy_, log_normal_, geometric_
Expected<LoweredOp> NoTensorResult(const Node&, Builder&);  // promote_types, ... (no device computation)
Fn InPlaceView(Fn fn);  // transpose_, t_, swapdims_, swapaxes_, unsqueeze_: self recorded after the call
Expected<LoweredOp> SliceOp(const Node&, Builder&);
Expected<LoweredOp> Select(const Node&, Builder&);
Expected<LoweredOp> Cat(const Node&, Builder&);
Expected<LoweredOp> Stack(const Node&, Builder&);
Expected<LoweredOp> Split(const Node&, Builder&);      // split, split_with_sizes, unbind, chunk
Expected<LoweredOp> Flip(const Node&, Builder&);
Expected<LoweredOp> Roll(const Node&, Builder&);
Expected<LoweredOp> Repeat(const Node&, Builder&);
Expected<LoweredOp> ConstantPad(const Node&, Builder&);
Expected<LoweredOp> ReflectionPad(const Node&, Builder&);
Expected<LoweredOp> ReplicationPad(const Node&, Builder&);
Expected<LoweredOp> MirrorPadBackward(const Node&, Builder&);  // reflection/replication_padNd_backward
Expected<LoweredOp> Diagonal(const Node&, Builder&);
Expected<LoweredOp> AsStrided(const Node&, Builder&);
Expected<LoweredOp> AsStridedScatter(const Node&, Builder&);
Expected<LoweredOp> SliceScatter(const Node&, Builder&);
Expected<LoweredOp> SelectScatter(const Node&, Builder&);
Expected<LoweredOp> DiagonalScatter(const Node&, Builder&);
Expected<LoweredOp> Tril(const Node&, Builder&);
Expected<LoweredOp> Triu(const Node&, Builder&);
Expected<LoweredOp> PixelShuffle(const Node&, Builder&);
Expected<LoweredOp> PixelUnshuffle(const Node&, Builder&);
Expected<LoweredOp> Unfold(const Node&, Builder&);
Expected<LoweredOp> SymSize(const Node&, Builder&);
Expected<LoweredOp> ViewAsReal(const Node&, Builder&);
Expected<LoweredOp> ViewAsComplex(const Node&, Builder&);
Expected<LoweredOp> Resize(const Node&, Builder&);
Expected<LoweredOp> ViewBackward(const Node&, Builder&);  // slice_backward, select_backward

// factory.cpp
Expected<LoweredOp> FullOutput(const Node&, Builder&);  // zeros, ones, empty, full, *_like, new_*, fill, zero_
Expected<LoweredOp> Arange(const Node&, Builder&);
Expected<LoweredOp> Linspace(const Node&, Builder&);
Expected<LoweredOp> Eye(const Node&, Builder&);
Expected<LoweredOp> ScalarTensor(const Node&, Builder&);
Expected<LoweredOp> LocalScalarDense(const Node&, Builder&);

// random.cpp
Expected<LoweredOp> RandUniform(const Node&, Builder&);  // rand, rand_like, uniform_, uniform
Expected<LoweredOp> RandNormal(const Node&, Builder&);   // randn, randn_like, normal_, normal
Expected<LoweredOp> RandInt(const Node&, Builder&);      // randint, random_
Expected<LoweredOp> Bernoulli(const Node&, Builder&);
Expected<LoweredOp> NativeDropout(const Node&, Builder&);
Expected<LoweredOp> NativeDropoutBackward(const Node&, Builder&);
Expected<LoweredOp> Randperm(const Node&, Builder&);
Expected<LoweredOp> Multinomial(const Node&, Builder&);
Expected<LoweredOp> RreluWithNoise(const Node&, Builder&);

// linalg.cpp
Expected<LoweredOp> Mm(const Node&, Builder&);
Expected<LoweredOp> Bmm(const Node&, Builder&);
Expected<LoweredOp> Addmm(const Node&, Builder&);
Expected<LoweredOp> Baddbmm(const Node&, Builder&);
Expected<LoweredOp> Addmv(const Node&, Builder&);
Expected<LoweredOp> Matmul(const Node&, Builder&);
Expected<LoweredOp> Linear(const Node&, Builder&);
Expected<LoweredOp> Dot(const Node&, Builder&);   // dot, vdot, mv, outer
Expected<LoweredOp> Einsum(const Node&, Builder&);
Expected<LoweredOp> Trilinear(const Node&, Builder&);  // _trilinear (bilinear)

// decomposition.cpp (LAPACK-style linear algebra through XLA's cholesky / triangular-solve opcodes and
// its "Qr", "ProductOfElementaryHouseholderReflectors", "Eigh" and "LuDecomposition" custom calls)
Expected<LoweredOp> Cholesky(const Node&, Builder&);       // cholesky, linalg_cholesky(_ex)
Expected<LoweredOp> CholeskySolve(const Node&, Builder&);  // cholesky_solve, cholesky_inverse
Expected<LoweredOp> TriangularSolve(const Node&, Builder&);  // triangular_solve, linalg_solve_triangular
Expected<LoweredOp> LuFactor(const Node&, Builder&);       // linalg_lu_factor(_ex), linalg_lu
Expected<LoweredOp> LuUnpack(const Node&, Builder&);
Expected<LoweredOp> LuSolveOp(const Node&, Builder&);      // linalg_lu_solve, lu_solve
Expected<LoweredOp> Inverse(const Node&, Builder&);        // linalg_inv(_ex), inverse
Expected<LoweredOp> Solve(const Node&, Builder&);          // _linalg_solve_ex, linalg_solve(_ex)
Expected<LoweredOp> Det(const Node&, Builder&);            // det, slogdet, logdet and the linalg_ forms
Expected<LoweredOp> QrOp(const Node&, Builder&);           // linalg_qr, qr, geqrf
Expected<LoweredOp> HouseholderProductOp(const Node&, Builder&);  // linalg_householder_product, orgqr
Expected<LoweredOp> Ormqr(const Node&, Builder&);
Expected<LoweredOp> EighOp(const Node&, Builder&);         // _linalg_eigh, linalg_eigh/eigvalsh, symeig
Expected<LoweredOp> SvdOp(const Node&, Builder&);          // _linalg_svd, linalg_svd/svdvals, svd
Expected<LoweredOp> Pinv(const Node&, Builder&);           // linalg_pinv (every overload)
Expected<LoweredOp> MatrixExp(const Node&, Builder&);      // linalg_matrix_exp, matrix_exp
Expected<LoweredOp> Lstsq(const Node&, Builder&);          // linalg_lstsq

// conv.cpp
Expected<LoweredOp> Convolution(const Node&, Builder&);
Expected<LoweredOp> ConvolutionBackward(const Node&, Builder&);
Expected<LoweredOp> ConvNd(const Node&, Builder&);  // conv1d/2d/3d, conv_transpose*, _convolution

// pooling.cpp (upsampling, im2col/col2im, grid sampling, cdist and embedding_bag: sampling.cpp)
Expected<LoweredOp> MaxPoolWithIndices(const Node&, Builder&);
Expected<LoweredOp> MaxPoolWithIndicesBackward(const Node&, Builder&);
Expected<LoweredOp> MaxPool(const Node&, Builder&);  // max_pool1d/2d/3d without indices
Expected<LoweredOp> FractionalMaxPool(const Node&, Builder&);  // fractional_max_pool2d/3d
Expected<LoweredOp> AvgPool(const Node&, Builder&);
Expected<LoweredOp> AvgPoolBackward(const Node&, Builder&);
Expected<LoweredOp> AdaptiveAvgPool(const Node&, Builder&);
Expected<LoweredOp> AdaptiveAvgPoolBackward(const Node&, Builder&);
Expected<LoweredOp> AdaptiveMaxPool(const Node&, Builder&);
Expected<LoweredOp> AdaptiveMaxPoolBackward(const Node&, Builder&);
Expected<LoweredOp> Upsample(const Node&, Builder&);
Expected<LoweredOp> UpsampleBackward(const Node&, Builder&);
Expected<LoweredOp> Im2Col(const Node&, Builder&);
Expected<LoweredOp> Col2Im(const Node&, Builder&);
Expected<LoweredOp> GridSampler2d(const Node&, Builder&);
Expected<LoweredOp> Cdist(const Node&, Builder&);
Expected<LoweredOp> Pdist(const Node&, Builder&);
// Contracts dim `d` of x with a constant [in, out] matrix, keeping the dim's position (sampling.cpp).
Instruction* ContractDim(Builder& b, Instruction* x, int64_t d, hlo::Literal m);

// reduction.cpp
Fn ReduceOp(const std::string& op);  // sum, mean, prod, amax, amin, any, all, max, min, logsumexp, norm, ...
Expected<LoweredOp> VarStd(const Node&, Builder&);  // var, std, var_mean, std_mean
Expected<LoweredOp> ArgMinMax(const Node&, Builder&);
Expected<LoweredOp> MinMaxDim(const Node&, Builder&);  // max.dim, min.dim
Expected<LoweredOp> Cumulative(const Node&, Builder&);  // cumsum, cumprod, cummax, cummin, logcumsumexp
Expected<LoweredOp> Softmax(const Node&, Builder&);
Expected<LoweredOp> LogSoftmax(const Node&, Builder&);
Expected<LoweredOp> SoftmaxBackward(const Node&, Builder&);
Expected<LoweredOp> LogSoftmaxBackward(const Node&, Builder&);
Expected<LoweredOp> Sort(const Node&, Builder&);
Expected<LoweredOp> Topk(const Node&, Builder&);
Expected<LoweredOp> Kthvalue(const Node&, Builder&);  // kthvalue, median, nanmedian
Expected<LoweredOp> ModeOp(const Node&, Builder&);
Expected<LoweredOp> SegmentReduce(const Node&, Builder&);
Expected<LoweredOp> CountNonzero(const Node&, Builder&);

// norm.cpp
Expected<LoweredOp> BatchNorm(const Node&, Builder&);  // native_batch_norm, _native_batch_norm_legit*
Expected<LoweredOp> BatchNormBackward(const Node&, Builder&);
Expected<LoweredOp> LayerNorm(const Node&, Builder&);
Expected<LoweredOp> LayerNormBackward(const Node&, Builder&);
Expected<LoweredOp> GroupNorm(const Node&, Builder&);
Expected<LoweredOp> GroupNormBackward(const Node&, Builder&);

// loss.cpp
Expected<LoweredOp> MseLoss(const Node&, Builder&);
Expected<LoweredOp> MseLossBackward(const Node&, Builder&);
Expected<LoweredOp> NllLoss(const Node&, Builder&);
Expected<LoweredOp> NllLossBackward(const Node&, Builder&);
Expected<LoweredOp> L1Loss(const Node&, Builder&);
Expected<LoweredOp> SmoothL1Loss(const Node&, Builder&);
Expected<LoweredOp> SmoothL1LossBackward(const Node&, Builder&);
Expected<LoweredOp> HuberLoss(const Node&, Builder&);
Expected<LoweredOp> HuberLossBackward(const Node&, Builder&);
Expected<LoweredOp> BinaryCrossEntropy(const Node&, Builder&);
Expected<LoweredOp> BinaryCrossEntropyBackward(const Node&, Builder&);
Expected<LoweredOp> BinaryCrossEntropyWithLogits(const Node&, Builder&);
Expected<LoweredOp> MultiMarginLoss(const Node&, Builder&);
Expected<LoweredOp> MultilabelMarginLoss(const Node&, Builder&);  // multilabel_margin_loss_forward
Expected<LoweredOp> CtcLoss(const Node&, Builder&);  // _ctc_loss.Tensor (a while loop over time)

// indexing.cpp
Expected<LoweredOp> Embedding(const Node&, Builder&);
Expected<LoweredOp> EmbeddingDenseBackward(const Node&, Builder&);
Expected<LoweredOp> IndexSelect(const Node&, Builder&);
Expected<LoweredOp> Gather(const Node&, Builder&);
Expected<LoweredOp> Scatter(const Node&, Builder&);  // scatter.src/value/reduce, scatter_add, scatter_reduce
Expected<LoweredOp> Index(const Node&, Builder&);
Expected<LoweredOp> IndexPut(const Node&, Builder&);
Expected<LoweredOp> IndexAdd(const Node&, Builder&);
Expected<LoweredOp> IndexCopy(const Node&, Builder&);
Expected<LoweredOp> IndexFill(const Node&, Builder&);
Expected<LoweredOp> MaskedFill(const Node&, Builder&);
Expected<LoweredOp> MaskedScatter(const Node&, Builder&);
Expected<LoweredOp> Nonzero(const Node&, Builder&);
Expected<LoweredOp> MaskedSelect(const Node&, Builder&);
Expected<LoweredOp> Unique(const Node&, Builder&);
Expected<LoweredOp> Take(const Node&, Builder&);
Expected<LoweredOp> OneHot(const Node&, Builder&);
Expected<LoweredOp> EmbeddingBag(const Node&, Builder&);
Expected<LoweredOp> IndexReduce(const Node&, Builder&);
Expected<LoweredOp> RepeatInterleave(const Node&, Builder&);  // repeat_interleave.Tensor (bounded dynamic)

// attention.cpp
Expected<LoweredOp> ScaledDotProductAttention(const Node&, Builder&);  // _scaled_dot_product_attention_forward

// histogram.cpp
Expected<LoweredOp> Histogram(const Node&, Builder&);  // histogram.bin_ct, histogram.bins_tensor
Expected<LoweredOp> HistogramddBinEdges(const Node&, Builder&);
Expected<LoweredOp> HistogramddFromBinCts(const Node&, Builder&);
Expected<LoweredOp> HistogramddFromBinTensors(const Node&, Builder&);

// fft.cpp
Expected<LoweredOp> FftR2C(const Node&, Builder&);
Expected<LoweredOp> FftC2R(const Node&, Builder&);
Expected<LoweredOp> FftC2C(const Node&, Builder&);

// misc.cpp
Expected<LoweredOp> Equal(const Node&, Builder&);
Expected<LoweredOp> Allclose(const Node&, Builder&);
Expected<LoweredOp> Diag(const Node&, Builder&);
Expected<LoweredOp> DiagEmbed(const Node&, Builder&);
Expected<LoweredOp> LinalgCross(const Node&, Builder&);
Expected<LoweredOp> Heaviside(const Node&, Builder&);
Expected<LoweredOp> Aminmax(const Node&, Builder&);
Expected<LoweredOp> Glu(const Node&, Builder&);
Expected<LoweredOp> Prelu(const Node&, Builder&);
Expected<LoweredOp> Shrink(const Node&, Builder&);  // hardshrink, softshrink
Expected<LoweredOp> ShrinkBackward(const Node&, Builder&);  // hardshrink_backward, softshrink_backward
Expected<LoweredOp> PreluBackward(const Node&, Builder&);
Expected<LoweredOp> RreluWithNoiseBackward(const Node&, Builder&);
Expected<LoweredOp> SoftMarginLossBackward(const Node&, Builder&);
Expected<LoweredOp> Logit(const Node&, Builder&);
Expected<LoweredOp> Trace(const Node&, Builder&);
Expected<LoweredOp> Dist(const Node&, Builder&);
Expected<LoweredOp> Rot90(const Node&, Builder&);
Expected<LoweredOp> NarrowCopy(const Node&, Builder&);
Fn Special(const std::string& op);  // lgamma, digamma, polygamma (n=0), mvlgamma, entr, ndtri, log_ndtr, erfcx, xlog1py
Expected<LoweredOp> Isin(const Node&, Builder&);
Expected<LoweredOp> SearchSorted(const Node&, Builder&);  // searchsorted, bucketize
Expected<LoweredOp> Put(const Node&, Builder&);
Expected<LoweredOp> Frexp(const Node&, Builder&);
Expected<LoweredOp> BlockDiag(const Node&, Builder&);
Expected<LoweredOp> TriIndices(const Node&, Builder&);
Expected<LoweredOp> Renorm(const Node&, Builder&);
Expected<LoweredOp> SoftMarginLoss(const Node&, Builder&);
Expected<LoweredOp> MaxUnpool(const Node&, Builder&);
Expected<LoweredOp> Histc(const Node&, Builder&);
Expected<LoweredOp> Bincount(const Node&, Builder&);
Expected<LoweredOp> NoOutputs(const Node&, Builder&);
Expected<LoweredOp> WeightNorm(const Node&, Builder&);          // _weight_norm_interface
Expected<LoweredOp> WeightNormBackward(const Node&, Builder&);  // _weight_norm_interface_backward
Expected<LoweredOp> GluBackward(const Node&, Builder&);  // host-side checks: _linalg_check_errors

// special.cpp
Fn SpecialUnary(const std::string& op);   // i0/i0e/i1/i1e, modified_bessel_*, bessel_j0/j1/y0/y1, airy_ai, ...
Fn SpecialBinary(const std::string& op);  // zeta, igamma, igammac, chebyshev/hermite/laguerre/legendre polynomials
Fn GcdLcm(bool lcm);
Expected<LoweredOp> Nextafter(const Node&, Builder&);
Instruction* Erfcx(Builder& b, Instruction* x);    // exp(x^2) erfc(x) without overflow (misc.cpp's special_erfcx)
Instruction* LogNdtr(Builder& b, Instruction* x);  // log(Phi(x)) without underflow (misc.cpp's special_log_ndtr)

// optimizer.cpp
Fn ForeachUnary(const std::string& op);
Fn ForeachBinary(const std::string& op);
Expected<LoweredOp> ForeachAddcmul(const Node&, Builder&);
Expected<LoweredOp> ForeachAddcdiv(const Node&, Builder&);
Expected<LoweredOp> ForeachZero(const Node&, Builder&);

// torch2.cpp: ops of PyTorch 2.x training steps (fused optimizers, _foreach_norm, CPU flash attention),
// registered by LoweringTable::Builtin() after the main table.
struct Torch2Lowering {
  const char* name;
  const char* family;
  LoweringFn fn;
};
const std::vector<Torch2Lowering>& Torch2Lowerings();

// pooling.cpp: a (value, index) arg-max/arg-min reducer for variadic reduce/reduce-window: keeps the better
// value, the lower index on ties, NaN wins (also used by reduction.cpp).
Computation* ArgReducer(Builder& b, PrimitiveType vt, PrimitiveType it, bool is_max);

// quantized.cpp
// Why the node cannot lower when one of its tensors (or dtype arguments) has a torch dtype without an XLA
// element type (qint8, complex32, bits8, ...); empty when all have one.
std::string NoXlaTypeReason(const Node& node);

}  // namespace opprobe::analyzer::lowering
