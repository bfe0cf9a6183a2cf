// Hand-built AnalysisResults for the report tests: every writer is a pure function of one of these.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analyzer/driver/result.h"

namespace opprobe::reports::testing {

using analyzer::AnalysisResult;
using analyzer::OpRecord;
using analyzer::ProbeRecord;
using compiler_probe::Verdict;

inline ProbeRecord Probe(std::string fingerprint, std::string opcode, std::string signature, Verdict verdict) {
  ProbeRecord p;
  p.fingerprint = std::move(fingerprint);
  p.opcode = std::move(opcode);
  p.signature = signature;
  p.module_text =
      "HloModule probe_" + p.fingerprint.substr(0, 8) + "\n\nENTRY main {\n  ROOT r = " + signature + "\n}\n";
  p.verdict = std::move(verdict);
  return p;
}

inline Verdict Rejected(std::string reason, double seconds = 0.0) {
  Verdict v = Verdict::Unsupported(std::move(reason));
  v.seconds = seconds;
  return v;
}

inline Verdict Accepted(double seconds = 0.0) {
  Verdict v = Verdict::Supported();
  v.seconds = seconds;
  return v;
}

inline OpRecord Op(std::string op, std::string overload, std::string signature, std::string file, int line,
                   std::vector<size_t> probes, int64_t count = 1) {
  OpRecord r;
  r.op = std::move(op);
  r.overload = std::move(overload);
  r.signature = std::move(signature);
  r.loc.file = std::move(file);
  r.loc.line = line;
  r.probes = std::move(probes);
  for (size_t i = 0; i < r.probes.size(); ++i) r.instruction_names.push_back("i" + std::to_string(i));
  r.count = count;
  return r;
}

// Fills the summary from ops and probes the way the driver does (counts only; times as given).
inline void FillSummary(AnalysisResult& r, double probe_seconds, double wall_seconds, int jobs) {
  auto& s = r.summary;
  s = {};
  for (const auto& op : r.ops) {
    if (op.part_of < 0) {
      s.aten_calls += op.count;
      s.aten_nodes += 1;
    }
    if (op.lowering == OpRecord::Lowering::kCustomOp) s.custom_op_calls += op.count;
    if (op.lowering == OpRecord::Lowering::kFailed && op.part_of < 0) s.lowering_gap_calls += op.count;
    if (op.lowering == OpRecord::Lowering::kInternalError && op.part_of < 0) s.internal_error_calls += op.count;
    if (op.lowering != OpRecord::Lowering::kOk) {
      if (op.lowering == OpRecord::Lowering::kFailed) s.lowering_failures += 1;
      s.hlo_instructions += op.count;
      continue;
    }
    for (size_t p : op.probes) {
      s.hlo_instructions += op.count;
      if (r.probes[p].verdict.supported()) s.supported_instructions += op.count;
    }
    if (op.dynamic_shape) s.dynamic_shape_ops += 1;
  }
  s.distinct_signatures = s.aten_nodes;
  s.unique_probes = static_cast<int64_t>(r.probes.size());
  for (const auto& p : r.probes) (p.cache_hit ? s.cache_hits : s.probes_run) += 1;
  s.probe_seconds = probe_seconds;
  s.wall_seconds = wall_seconds;
  s.jobs = jobs;
}

// The Neuron tutorial's unsupported.py on rules:neuron-trn1: fft and a complex multiply are rejected,
// so aten::mul is both supported (f32) and unsupported (c64), as in Neuron's report.
inline AnalysisResult NeuronUnsupported() {
  AnalysisResult r;
  r.model = "unsupported.py";
  r.input_kind = "trace";
  r.torch_version = "1.13.1";
  r.backend_id = "rules:neuron-trn1";
  r.backend_version = "neuron-trn1@3f9c2a1b";
  const std::string kC64 = "element type c64 is not supported: Neuron has no complex types";
  r.probes = {
      Probe("0b1f9d52a7c3e811", "broadcast", "f32[4]{0} broadcast(f32[]), dimensions={}", Accepted(0.000012)),
      Probe("1c2d3e4f5a6b7c8d", "add", "f32[4]{0} add(f32[4]{0}, f32[4]{0})", Accepted(0.000010)),
      Probe("2a9e4410c3b2d1f0", "convert", "c64[4]{0} convert(f32[4]{0})", Rejected(kC64, 0.000015)),
      Probe("3d7e1c0b9a8f6e5d", "multiply", "c64[4]{0} multiply(c64[4]{0}, c64[4]{0})", Rejected(kC64, 0.000011)),
      Probe("4e5f6a7b8c9d0e1f", "fft", "c64[4]{0} fft(c64[4]{0}), fft_type=FFT, fft_length={4}",
            Rejected("fft is not supported on trn1 (no FFT engine)", 0.000013)),
      Probe("5f6a7b8c9d0e1f2a", "multiply", "f32[4]{0} multiply(f32[4]{0}, f32[4]{0})", Accepted(0.000009)),
  };
  r.ops = {
      Op("aten::_fft_r2c", "default", "f32[4]", "/work/demo/unsupported.py", 10, {2, 4}),
      Op("aten::add", "Tensor", "f32[4], f32[]", "/work/demo/unsupported.py", 11, {0, 1}),
      Op("aten::mul", "Tensor", "f32[4], c64[4]", "/work/demo/unsupported.py", 12, {2, 3}),
      Op("aten::mul", "Tensor", "f32[4], f32[4]", "/work/demo/unsupported.py", 20, {5}),
  };
  for (auto& op : r.ops) op.phase = "forward";
  FillSummary(r, 0.00007, 0.01, 2);
  return r;
}

// Everything at once: module paths, two programs, a lowering failure, a dynamic-shape op, a backend
// error with compiler output, a cache hit, a repro file, repeated calls, paths inside and outside the
// working directory, and text that every format must escape.
inline AnalysisResult KitchenSink() {
  AnalysisResult r;
  r.model = "train_resnet.py";
  r.input_kind = "trace";
  r.backend_id = "cmd:neuronx-cc";
  r.backend_version = "neuronx-cc 2.5.0";
  r.programs = {"forward", "backward"};
  r.probes = {
      Probe("a000000000000001", "convolution",
            "f32[8,64,56,56]{3,2,1,0} convolution(f32[8,3,224,224]{3,2,1,0}, f32[64,3,7,7]{3,2,1,0}), "
            "window={size=7x7 stride=2x2 pad=3_3x3_3}, dim_labels=bf01_oi01->bf01",
            Accepted(0.41)),
      Probe("a000000000000002", "reduce-window",
            "f32[8,64,28,28]{3,2,1,0} reduce-window(f32[8,64,56,56]{3,2,1,0}, f32[])", Accepted(0.12)),
      Probe("a000000000000003", "convert", "f64[8,64]{1,0} convert(f32[8,64]{1,0})",
            Rejected("64-bit types are not native on trn1 <f64> & \"emulated\" | 50% slower, see: docs", 0.25)),
      Probe("a000000000000004", "dot",
            "s32[8,10]{1,0} dot(s32[8,64]{1,0}, s32[64,10]{1,0}), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
            Verdict::Error("neuronx-cc crashed (signal 11)")),
      Probe("a000000000000005", "sort", "(s64[<=16,2]{1,0}, s32[]) custom-call(pred[4,4]{1,0})",
            Rejected("dynamic shapes are not supported")),
      Probe("a000000000000006", "add", "f32[8,64]{1,0} add(f32[8,64]{1,0}, f32[8,64]{1,0})", Accepted(0.05)),
  };
  r.probes[3].verdict.seconds = 1.5;
  r.probes[3].verdict.output_tail =
      "INFO: compiling dot\nERROR: internal compiler error\nStack:\n  #0 0x7f tensorizer::Dot\n  #1 0x80 main\n";
  r.probes[2].repro_path = "opprobe-repro/convert_a000000000000003.hlo.pb";
  r.probes[5].cache_hit = true;
  r.probes[1].cache_hit = true;

  auto conv =
      Op("aten::convolution", "default", "f32[8,3,224,224], f32[64,3,7,7]", "/home/user/proj/model.py", 31, {0});
  conv.module_path = "conv1";
  conv.program = "forward";
  conv.phase = "forward";
  auto pool = Op("aten::max_pool2d_with_indices", "default", "f32[8,64,56,56]", "/home/user/proj/model.py", 33, {1});
  pool.module_path = "maxpool";
  pool.program = "forward";
  pool.phase = "forward";
  auto cast = Op("aten::_to_copy", "default", "f32[8,64]", "/home/user/proj/model.py", 40, {2}, 3);
  cast.module_path = "layer1.0.bn1";
  cast.program = "forward";
  cast.phase = "forward";
  auto cast2 = cast;  // same print, different scalar args in the trace: merged in the reports
  cast2.count = 2;
  auto idot = Op("aten::mm", "default", "s32[8,64], s32[64,10]", "/home/user/proj/model.py", 52, {3});
  idot.lib_loc = {"torchvision/models/resnet.py", 285};  // made inside a library that model.py:52 called
  idot.module_path = "fc";
  idot.program = "forward";
  idot.phase = "forward";
  auto nz = Op("aten::nonzero", "default", "pred[4,4]", "/home/user/proj/train.py", 77, {4});
  nz.dynamic_shape = true;
  nz.note = "output shape depends on data; bounded by s64[<=16,2]";
  nz.program = "forward";
  nz.phase = "forward";
  auto weird = Op("aten::_weird_op", "default", "f32[8,64]", "/opt/ext/custom_ops.py", 5, {}, 4);
  weird.lowering = OpRecord::Lowering::kFailed;
  weird.lowering_error = "no lowering for aten::_weird_op";
  weird.module_path = "layer1.0";
  weird.program = "backward";
  weird.phase = "backward";
  weird.forward = {"aten::_weird_forward", {"/opt/ext/custom_ops.py", 3}, {"torchvision/ops/misc.py", 70}, "layer1.0"};
  auto add = Op("aten::add", "Tensor", "f32[8,64], f32[8,64]", "/home/user/proj/model.py", 45, {5}, 10);
  add.module_path = "layer1.0";
  add.program = "backward";
  add.phase = "backward";
  auto add_opt = Op("aten::add_", "Tensor", "f32[8,64], f32[8,64]", "", 0, {5}, 5);
  add_opt.program = "backward";
  add_opt.phase = "optimizer";
  r.ops = {conv, pool, cast, cast2, idot, nz, weird, add, add_opt};
  FillSummary(r, 2.33, 4.5, 8);
  return r;
}

// Everything supported (the Neuron tutorial's supported.py shape).
inline AnalysisResult AllSupported() {
  AnalysisResult r;
  r.model = "supported.py";
  r.input_kind = "trace";
  r.backend_id = "rules:neuron-trn1";
  r.backend_version = "neuron-trn1@3f9c2a1b";
  r.probes = {
      Probe("b000000000000001", "dot",
            "f32[4]{0} dot(f32[4,4]{1,0}, f32[4]{0}), lhs_contracting_dims={1}, rhs_contracting_dims={0}", Accepted()),
      Probe("b000000000000002", "maximum", "f32[4]{0} maximum(f32[4]{0}, f32[4]{0})", Accepted()),
      Probe("b000000000000003", "tanh", "f32[2]{0} tanh(f32[2]{0})", Accepted()),
  };
  r.ops = {
      Op("aten::mm", "default", "f32[4,4], f32[4]", "/work/demo/supported.py", 14, {0}, 4),
      Op("aten::relu", "default", "f32[4]", "/work/demo/supported.py", 14, {1}, 2),
      Op("aten::tanh", "default", "f32[2]", "/work/demo/supported.py", 15, {2}, 2),
  };
  r.ops[0].module_path = "layer1";
  r.ops[1].module_path = "nl1";
  r.ops[2].module_path = "nl2";
  FillSummary(r, 0.0, 0.2, 2);
  return r;
}

// What issue 12 is about: a detection script that failed midway (partial), a torchvision::nms call (custom op)
// and a torch.library op, an op opprobe cannot lower (a gap, apart from the verdicts), add's alpha multiply
// (derived, part_of), one source line with several rejected ops (one group), and ops left out by --ignore-op.
inline AnalysisResult Honest() {
  AnalysisResult r;
  r.model = "/work/demo/detect.py";
  r.source_dir = "/work/demo";
  r.input_kind = "trace";
  r.torch_version = "2.3.0";
  r.backend_id = "rules:neuron-trn1";
  r.backend_version = "neuron-trn1@3f9c2a1b";
  analyzer::CaptureStatus c;
  c.status = analyzer::CaptureStatus::Status::kFailed;
  c.exit_code = 1;
  c.exception_type = "RuntimeError";
  c.exception_message = "boxes must be 2-D";
  c.location = {"/work/demo/detect.py", 41};
  r.capture = c;
  const std::string kC64 = "element type c64 is not supported: Neuron has no complex types";
  r.probes = {
      Probe("c000000000000001", "add", "f32[4]{0} add(f32[4]{0}, f32[4]{0})", Accepted()),
      Probe("c000000000000002", "multiply", "c64[4]{0} multiply(c64[4]{0}, c64[4]{0})", Rejected(kC64)),
      Probe("c000000000000003", "convert", "c64[4]{0} convert(f32[4]{0})", Rejected(kC64)),
      Probe("c000000000000004", "exponential", "c64[4]{0} exponential(c64[4]{0})", Rejected(kC64)),
  };
  auto add = Op("aten::add", "Tensor", "c64[4], c64[4]", "/work/demo/detect.py", 30, {0}, 2);
  auto mul = Op("aten::mul", "", "c64[4], c64[4]", "/work/demo/detect.py", 30, {1}, 2);
  mul.part_of = 0;
  mul.note = "part of the lowering of aten::add.Tensor";
  auto cast = Op("aten::_to_copy", "default", "f32[4]", "/work/demo/models/head.py", 12, {2}, 6);
  cast.module_path = "head";
  auto ex = Op("aten::exp", "default", "c64[4]", "/work/demo/models/head.py", 12, {3}, 3);
  ex.module_path = "head";
  auto nms = Op("torchvision::nms", "default", "f32[100,4], f32[100]", "/work/demo/detect.py", 35, {}, 1);
  nms.lowering = OpRecord::Lowering::kCustomOp;
  nms.lowering_error =
      "torchvision::nms has no XLA lowering: an XLA backend needs a custom call or a CPU fallback "
      "for it (a torchvision operator)";
  auto mine = Op("mylib::my_op", "default", "f32[4]", "", 0, {}, 5);
  mine.lowering = OpRecord::Lowering::kCustomOp;
  mine.lowering_error = "mylib::my_op has no XLA lowering: an XLA backend needs a custom call or a CPU fallback for it";
  auto gap = Op("aten::_fft_c2c", "default", "c64[8]", "/work/demo/detect.py", 38, {}, 2);
  gap.lowering = OpRecord::Lowering::kFailed;
  gap.lowering_error = "no lowering for aten::_fft_c2c";
  r.ops = {add, mul, cast, ex, nms, mine, gap};
  r.ignored = {{"torchvision::roi_align", "torchvision::roi*", 4}};
  FillSummary(r, 0.0, 0.3, 1);
  r.summary.ignored_calls = 4;
  return r;
}

// A lowering that threw (opprobe's own bug: an internal error, failureAt `internal_error`) beside a call opprobe
// cannot lower yet (a gap) and a supported call: three kinds every format keeps apart.
inline AnalysisResult InternalError() {
  AnalysisResult r;
  r.model = "/work/demo/train.py";
  r.source_dir = "/work/demo";
  r.input_kind = "trace";
  r.torch_version = "2.9.0";
  r.backend_id = "rules:tpu";
  r.backend_version = "tpu@1a2b3c4d";
  r.probes = {Probe("d000000000000001", "add", "f32[8]{0} add(f32[8]{0}, f32[8]{0})", Accepted())};
  auto add = Op("aten::add", "Tensor", "f32[8], f32[8]", "/work/demo/train.py", 20, {0}, 4);
  auto bug = Op("aten::cumsum", "default", "f32[8]", "/work/demo/train.py", 21, {}, 2);
  bug.lowering = OpRecord::Lowering::kInternalError;
  bug.lowering_error =
      "lowering aten::cumsum threw: vector::_M_range_check: __n (which is 1) >= this->size() (which is 1)";
  auto gap = Op("aten::_fft_r2c", "default", "f32[8]", "/work/demo/train.py", 22, {}, 1);
  gap.lowering = OpRecord::Lowering::kFailed;
  gap.lowering_error = "no lowering for aten::_fft_r2c";
  r.ops = {add, bug, gap};
  FillSummary(r, 0.0, 0.1, 1);
  return r;
}

// No ops at all (an empty trace).
inline AnalysisResult Empty() {
  AnalysisResult r;
  r.model = "empty.json";
  r.input_kind = "trace";
  r.backend_id = "interp";
  r.backend_version = "1";
  FillSummary(r, 0, 0, 1);
  return r;
}

// Every fixture by name, with the working directory its reports are rendered from (sarif, github and html show
// source paths under it relative to it). The golden files are named after `name`.
struct NamedFixture {
  const char* name;
  AnalysisResult (*make)();
  const char* cwd;
};

inline const NamedFixture kNamedFixtures[] = {
    {"neuron_unsupported", NeuronUnsupported, "/work/demo"},
    {"kitchen_sink", KitchenSink, "/home/user/proj"},
    {"all_supported", AllSupported, "/work/demo"},
    {"empty", Empty, "/work/demo"},
    {"honest", Honest, "/work/demo"},
    {"internal_error", InternalError, "/work/demo"},
};

}  // namespace opprobe::reports::testing
