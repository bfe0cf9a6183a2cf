// f32 dot and convolution through oneDNN (Debian's libdnnl, the library PyTorch's CPU convolutions use),
// on the calling thread. oneDNN picks its kernels for the CPU it runs on (AVX2, AVX-512, ...) at run
// time, which Eigen, compiled for the baseline x86-64 ISA, cannot; docs/performance.md has the figures.
#include <algorithm>
#include <dnnl.hpp>

#include "hlo/evaluator/internal.h"

// libgomp, oneDNN's threading runtime: its parallel regions take the calling thread's team size.
extern "C" {
int omp_get_max_threads(void);
void omp_set_num_threads(int);
}

namespace opprobe::hlo::eval {
namespace {

// Keeps oneDNN on the calling thread for the scope (the evaluator is single-threaded; the interp backend
// runs probes on several threads at once).
class OneThread {
 public:
  OneThread() : previous_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneThread() { omp_set_num_threads(previous_); }
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  int previous_;
};

const dnnl::engine& CpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

}  // namespace

bool OneDnnGemm(int64_t batch, int64_t m, int64_t n, int64_t k, const float* a, bool trans_a, const float* b,
                bool trans_b, float* c) {
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0) return false;
  OneThread one;
  for (int64_t i = 0; i < batch; ++i) {
    dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f, a + i * m * k,
                                  trans_a ? m : k, b + i * k * n, trans_b ? k : n, 0.0f, c + i * m * n, n);
    if (st != dnnl_success) return false;
  }
  return true;
}

bool OneDnnConvolution(const Instruction& ins, const Literal& lhs, const Literal& rhs, Literal& out) {
  using dnnl::memory;
  if (lhs.shape().element_type() != PrimitiveType::F32 || rhs.shape().element_type() != PrimitiveType::F32 ||
      out.shape().element_type() != PrimitiveType::F32 || ins.batch_group_count != 1 || ins.feature_group_count < 1)
    return false;
  const auto& dn = *ins.convolution_dimension_numbers;
  const auto& win = ins.window->dimensions;
  size_t nsp = win.size();
  if (nsp < 1 || nsp > 3) return false;
  for (const auto& w : win)
    if (w.base_dilation != 1 || w.padding_low < 0 || w.padding_high < 0) return false;
  const auto &ld = lhs.shape().dimensions(), &kd = rhs.shape().dimensions(), &od = out.shape().dimensions();
  for (int64_t d : ld)
    if (d <= 0) return false;
  for (int64_t d : kd)
    if (d <= 0) return false;
  for (int64_t d : od)
    if (d <= 0) return false;
  auto at = [](const std::vector<int64_t>& v, int64_t i) { return v[static_cast<size_t>(i)]; };
  auto ls = Strides(ld), ks = Strides(kd), os = Strides(od);
  int64_t G = ins.feature_group_count, O = at(kd, dn.kernel_output_feature_dimension);
  int64_t Cg = at(kd, dn.kernel_input_feature_dimension), Og = O / G;

  // Logical (N, C, spatial...) views of the operands in their own layouts.
  memory::dims src_dims{at(ld, dn.input_batch_dimension), at(ld, dn.input_feature_dimension)};
  memory::dims src_str{at(ls, dn.input_batch_dimension), at(ls, dn.input_feature_dimension)};
  memory::dims dst_dims{at(od, dn.output_batch_dimension), at(od, dn.output_feature_dimension)};
  memory::dims dst_str{at(os, dn.output_batch_dimension), at(os, dn.output_feature_dimension)};
  memory::dims ksp, ksp_str, strides, dilates, pad_l, pad_r;
  bool reversed = false;
  for (size_t i = 0; i < nsp; ++i) {
    src_dims.push_back(at(ld, dn.input_spatial_dimensions[i]));
    src_str.push_back(at(ls, dn.input_spatial_dimensions[i]));
    dst_dims.push_back(at(od, dn.output_spatial_dimensions[i]));
    dst_str.push_back(at(os, dn.output_spatial_dimensions[i]));
    ksp.push_back(at(kd, dn.kernel_spatial_dimensions[i]));
    ksp_str.push_back(at(ks, dn.kernel_spatial_dimensions[i]));
    strides.push_back(win[i].stride);
    dilates.push_back(win[i].window_dilation - 1);
    pad_l.push_back(win[i].padding_low);
    pad_r.push_back(win[i].padding_high);
    reversed = reversed || win[i].window_reversal;
  }
  // Weights (G, Og, Cg, spatial...) or (O, Cg, spatial...); a reversed window reads a flipped copy.
  const float* kdata = reinterpret_cast<const float*>(rhs.data().data());
  int64_t o_str = at(ks, dn.kernel_output_feature_dimension), c_str = at(ks, dn.kernel_input_feature_dimension);
  std::vector<float> flipped;
  if (reversed) {
    // Plain (O, Cg, spatial...) row-major, spatial dims flipped where the window reverses them.
    std::vector<int64_t> kdims = ksp;
    int64_t kp = Product(kdims);
    flipped.resize(static_cast<size_t>(O * Cg * kp));
    int64_t dst = 0;
    for (int64_t o = 0; o < O; ++o)
      for (int64_t c = 0; c < Cg; ++c)
        ForEachIndex(kdims, [&](const std::vector<int64_t>& idx) {
          int64_t src = o * o_str + c * c_str;
          for (size_t i = 0; i < nsp; ++i)
            src += (win[i].window_reversal ? kdims[i] - 1 - idx[i] : idx[i]) * ksp_str[i];
          flipped[static_cast<size_t>(dst++)] = kdata[src];
        });
    kdata = flipped.data();
    c_str = kp, o_str = Cg * kp;
    ksp_str = Strides(kdims);
  }
  memory::dims wei_dims, wei_str;
  if (G > 1) wei_dims = {G, Og, Cg}, wei_str = {Og * o_str, o_str, c_str};
  else wei_dims = {O, Cg}, wei_str = {o_str, c_str};
  wei_dims.insert(wei_dims.end(), ksp.begin(), ksp.end());
  wei_str.insert(wei_str.end(), ksp_str.begin(), ksp_str.end());

  try {
    const dnnl::engine& eng = CpuEngine();
    OneThread one;
    dnnl::stream stream(eng);
    memory::desc src_md(src_dims, memory::data_type::f32, src_str), wei_md(wei_dims, memory::data_type::f32, wei_str),
        dst_md(dst_dims, memory::data_type::f32, dst_str);
    auto any = [](const memory::dims& d) { return memory::desc(d, memory::data_type::f32, memory::format_tag::any); };
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                         any(src_dims), any(wei_dims), any(dst_dims), strides, dilates, pad_l, pad_r);
    dnnl::convolution_forward::primitive_desc pd(desc, eng);
    memory src(src_md, eng, const_cast<uint8_t*>(lhs.data().data()));
    memory wei(wei_md, eng, const_cast<float*>(kdata));
    memory dst(dst_md, eng, out.data().data());
    auto staged = [&](memory& user, const memory::desc& want) {
      if (want == user.get_desc()) return user;
      memory m(want, eng);
      dnnl::reorder(user, m).execute(stream, user, m);
      return m;
    };
    memory s = staged(src, pd.src_desc()), w = staged(wei, pd.weights_desc());
    bool direct = pd.dst_desc() == dst_md;
    memory d = direct ? dst : memory(pd.dst_desc(), eng);
    dnnl::convolution_forward(pd).execute(stream, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, d}});
    if (!direct) dnnl::reorder(d, dst).execute(stream, d, dst);
    stream.wait();
  } catch (const dnnl::error&) { return false; }
  return true;
}

}  // namespace opprobe::hlo::eval
