// conformance_runner: lowers every aten call recorded by gen_samples.py, evaluates the HLO with the
// `interp` evaluator on the recorded inputs and compares with PyTorch's recorded outputs.
//
//   conformance_runner SAMPLES.json RESULTS.json
//
// RESULTS.json mirrors SAMPLES.json: per entry, per sample, per call a status:
//   match | mismatch | no-lowering | lowering-error | eval-error | not-recorded | harness-error
// with a one-line detail. Random and uninitialized outputs (rand, dropout, empty, ...) compare
// dtype and shape only. Tolerances per dtype (atol + rtol * |expected|): f64 1e-7/1e-7,
// f32/c64 1e-5/1.3e-4, f16 1e-3/1e-3, bf16 1e-2/1.6e-2; integers and bool exact; NaN equals NaN.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analyzer/graph/graph.h"
#include "analyzer/loaders/trace_loader.h"
#include "analyzer/lowering/core_ops.h"
#include "analyzer/lowering/lowering.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/literal.h"
#include "hlo/types.h"

namespace {

using json = nlohmann::json;
using opprobe::Expected;
using opprobe::Status;
using opprobe::hlo::Literal;
using opprobe::hlo::PrimitiveType;
using opprobe::hlo::Shape;

double ToDouble(const json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    return std::stod(s);
  }
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  return v.get<double>();
}

Expected<Literal> LiteralFromValue(const json& v) {
  auto dt = opprobe::analyzer::DtypeFromTorchName(v.at("dtype").get<std::string>());
  if (!dt) return opprobe::InvalidInput("unknown dtype " + v.at("dtype").get<std::string>());
  std::vector<int64_t> dims = v.at("shape").get<std::vector<int64_t>>();
  Literal lit(Shape::Array(*dt, dims));
  const json& data = v.at("data");
  int64_t n = lit.element_count();
  bool cplx = opprobe::hlo::IsComplex(*dt);
  if (static_cast<int64_t>(data.size()) != (cplx ? 2 * n : n)) return opprobe::InvalidInput("data size mismatch");
  for (int64_t i = 0; i < n; ++i) {
    if (cplx) {
      lit.SetFromComplex(i,
                         {ToDouble(data[static_cast<size_t>(2 * i)]), ToDouble(data[static_cast<size_t>(2 * i + 1)])});
    } else if (opprobe::hlo::IsInteger(*dt) && data[static_cast<size_t>(i)].is_number_integer()) {
      lit.SetFromInt64(i, data[static_cast<size_t>(i)].get<int64_t>());
    } else {
      lit.SetFromDouble(i, ToDouble(data[static_cast<size_t>(i)]));
    }
  }
  return lit;
}

struct Tol {
  double atol, rtol;
};
Tol TolFor(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::F64:
    case PrimitiveType::C128: return {1e-7, 1e-7};
    case PrimitiveType::F32:
    case PrimitiveType::C64: return {1e-5, 1.3e-4};
    case PrimitiveType::F16: return {1e-3, 1e-3};
    case PrimitiveType::BF16: return {1e-2, 1.6e-2};
    default: return {0, 0};
  }
}

bool Close(double got, double want, Tol tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  if (std::isnan(got) || std::isinf(got)) return false;
  return std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

// Compares an evaluated value with a recorded result; "" when they match, else why not.
std::string Compare(const Literal& got, const json& want, bool random, bool dynamic) {
  if (want.contains("scalar")) {
    if (got.shape().rank() != 0) return fmt::format("expected a number, got {}", got.shape().ToString(false));
    if (random) return "";
    const json& s = want["scalar"];
    if (s.is_array()) {
      auto c = got.GetAsComplex(0);
      Tol t = TolFor(PrimitiveType::C128);
      if (!Close(c.real(), ToDouble(s[0]), t) || !Close(c.imag(), ToDouble(s[1]), t)) return "scalar differs";
      return "";
    }
    double w = ToDouble(s);
    double g = opprobe::hlo::IsComplex(got.shape().element_type()) ? got.GetAsComplex(0).real() : got.GetAsDouble(0);
    if (!Close(g, w,
               TolFor(got.shape().element_type() == PrimitiveType::F32 ? PrimitiveType::F32 : PrimitiveType::F64)))
      return fmt::format("scalar {} != {}", g, w);
    return "";
  }
  auto dt = opprobe::analyzer::DtypeFromTorchName(want.at("dtype").get<std::string>());
  std::vector<int64_t> dims = want.at("shape").get<std::vector<int64_t>>();
  const Shape& gs = got.shape();
  if (!dt || gs.element_type() != *dt)
    return fmt::format("dtype {} != {}", opprobe::hlo::PrimitiveTypeName(gs.element_type()),
                       want["dtype"].get<std::string>());
  int64_t limit = -1;  // compare the leading `limit` entries of one bounded dynamic dimension (`bounded`)
  int bounded = -1;
  if (gs.dimensions() != dims) {
    bool ok = gs.rank() == static_cast<int>(dims.size());
    for (int i = 0; ok && i < gs.rank(); ++i) {
      int64_t g = gs.dimensions()[static_cast<size_t>(i)], w = dims[static_cast<size_t>(i)];
      if (g == w) continue;
      ok = bounded < 0 && g > w && (dynamic || gs.is_dynamic_dimension(i));
      bounded = i;
    }
    if (!ok) return fmt::format("shape {} != [{}]", gs.ToString(false), fmt::join(dims, ","));
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    limit = n;
  }
  // The element of `got` at the coordinates of PyTorch's row-major element i (the same index unless bounded).
  auto at = [&](int64_t i) {
    if (bounded < 0) return i;
    int64_t flat = 0, stride = 1;
    for (int k = gs.rank() - 1; k >= 0; --k) {
      int64_t w = dims[static_cast<size_t>(k)];
      int64_t c = w == 0 ? 0 : i % w;
      i = w == 0 ? 0 : i / w;
      flat += c * stride;
      stride *= gs.dimensions()[static_cast<size_t>(k)];
    }
    return flat;
  };
  if (random) return "";
  const json& data = want.at("data");
  bool cplx = opprobe::hlo::IsComplex(*dt);
  int64_t n = limit >= 0 ? limit : got.element_count();
  Tol tol = TolFor(*dt);
  int bad = 0;
  std::string first;
  for (int64_t i = 0; i < n; ++i) {
    int64_t gi = at(i);
    bool ok;
    std::string what;
    if (cplx) {
      auto c = got.GetAsComplex(gi);
      double wr = ToDouble(data[static_cast<size_t>(2 * i)]), wi = ToDouble(data[static_cast<size_t>(2 * i + 1)]);
      ok = Close(c.real(), wr, tol) && Close(c.imag(), wi, tol);
      if (!ok) what = fmt::format("({}, {}) != ({}, {})", c.real(), c.imag(), wr, wi);
    } else if (opprobe::hlo::IsInteger(*dt) && data[static_cast<size_t>(i)].is_number_integer()) {
      int64_t g = got.GetAsInt64(gi), w = data[static_cast<size_t>(i)].get<int64_t>();
      ok = g == w;
      if (!ok) what = fmt::format("{} != {}", g, w);
    } else {
      double g = got.GetAsDouble(gi), w = ToDouble(data[static_cast<size_t>(i)]);
      ok = Close(g, w, tol);
      if (!ok) what = fmt::format("{} != {}", g, w);
    }
    if (!ok) {
      if (bad == 0) first = fmt::format("element {}: {}", i, what);
      ++bad;
    }
  }
  if (bad) return fmt::format("{} of {} elements differ; first at {}", bad, n, first);
  return "";
}

// Outputs made of singular or eigen vectors, which are unique only up to a sign (a unit phase for
// complex values): (output index, true when the vectors are rows). LAPACK's choice is as arbitrary as
// ours, so these are compared after aligning each vector with PyTorch's.
std::vector<std::pair<size_t, bool>> SignFreeOutputs(const std::string& qname) {
  std::string op = qname.substr(0, qname.rfind('.'));
  if (op == "aten::_linalg_svd" || op == "aten::linalg_svd") return {{0, false}, {2, true}};
  if (op == "aten::svd") return {{0, false}, {2, false}};
  if (op == "aten::_linalg_eigh" || op == "aten::linalg_eigh" || op == "aten::symeig" || op == "aten::linalg_eig")
    return {{1, false}};
  return {};
}

// Multiplies each vector (column, or row when `rows`) of every matrix of `got` by the unit scalar that
// best aligns it with the same vector of `want` (the phase of <got, want>).
void AlignSigns(Literal& got, const json& want, bool rows) {
  const Shape& s = got.shape();
  if (!s.IsArray() || s.rank() < 2 || !want.contains("data")) return;
  const json& data = want["data"];
  bool cplx = opprobe::hlo::IsComplex(s.element_type());
  int64_t m = s.dimensions()[static_cast<size_t>(s.rank() - 2)], n = s.dimensions()[static_cast<size_t>(s.rank() - 1)];
  if (m == 0 || n == 0 || static_cast<int64_t>(data.size()) != got.element_count() * (cplx ? 2 : 1)) return;
  int64_t batch = got.element_count() / (m * n);
  int64_t count = rows ? m : n, len = rows ? n : m;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t v = 0; v < count; ++v) {
      auto at = [&](int64_t j) { return b * m * n + (rows ? v * n + j : j * n + v); };
      std::complex<double> dot = 0;
      for (int64_t j = 0; j < len; ++j) {
        int64_t i = at(j);
        std::complex<double> w = cplx ? std::complex<double>(ToDouble(data[static_cast<size_t>(2 * i)]),
                                                             ToDouble(data[static_cast<size_t>(2 * i + 1)]))
                                      : std::complex<double>(ToDouble(data[static_cast<size_t>(i)]), 0);
        dot += std::conj(got.GetAsComplex(i)) * w;
      }
      if (std::abs(dot) == 0 || !std::isfinite(std::abs(dot))) continue;
      std::complex<double> phase = dot / std::abs(dot);
      if (!cplx) phase = dot.real() < 0 ? -1.0 : 1.0;
      if (phase == std::complex<double>(1, 0)) continue;
      for (int64_t j = 0; j < len; ++j) {
        int64_t i = at(j);
        if (cplx) got.SetFromComplex(i, got.GetAsComplex(i) * phase);
        else got.SetFromDouble(i, got.GetAsDouble(i) * phase.real());
      }
    }
  }
}

json RunCall(const json& call) {
  json r;
  std::string qname = call.at("op").get<std::string>() + "." + call.at("overload").get<std::string>();
  r["op"] = qname;
  json doc = {{"format", "opprobe-trace"}, {"version", 1}, {"calls", json::array({call})}};
  auto g = opprobe::analyzer::ParseTrace(doc.dump(), "sample");
  if (!g.ok() || g->nodes.size() != 1) {
    r["status"] = "harness-error";
    r["detail"] = g.ok() ? "no node" : g.status().message();
    return r;
  }
  const auto& node = g->nodes[0];
  auto lowered = opprobe::analyzer::Lower(node, opprobe::analyzer::LoweringTable::Builtin());
  if (!lowered.ok()) {
    bool none = lowered.status().message().rfind("no lowering for", 0) == 0;
    r["status"] = none ? "no-lowering" : "lowering-error";
    r["detail"] = lowered.status().message();
    return r;
  }
  if (lowered->dynamic_shape) r["dynamic"] = true;
  if (call.contains("skip")) {
    r["status"] = "not-recorded";
    r["detail"] = call["skip"];
    return r;
  }
  if (lowered->module->entry()->root() == nullptr) {  // lowers to nothing (e.g. _linalg_check_errors)
    r["status"] = call.at("results").empty() ? "match" : "mismatch";
    if (!call.at("results").empty()) r["detail"] = "lowered to nothing but PyTorch returned values";
    return r;
  }
  std::vector<Literal> args;
  for (const auto& v : call.at("inputs")) {
    auto lit = LiteralFromValue(v);
    if (!lit.ok()) {
      r["status"] = "harness-error";
      r["detail"] = lit.status().message();
      return r;
    }
    args.push_back(std::move(*lit));
  }
  opprobe::hlo::EvaluatorOptions opts;
  opts.max_flops = 5e9;
  opts.max_literal_bytes = int64_t{256} << 20;
  auto out = opprobe::hlo::Evaluate(*lowered->module, args, opts);
  if (!out.ok()) {
    r["status"] = "eval-error";
    r["detail"] = out.status().message();
    return r;
  }
  const json& results = call.at("results");
  std::vector<const Literal*> got;
  if (out->shape().IsTuple()) {
    for (const auto& e : out->tuple_elements()) got.push_back(&e);
  } else {
    got.push_back(&*out);
  }
  if (got.size() != results.size()) {
    r["status"] = "mismatch";
    r["detail"] = fmt::format("{} outputs, PyTorch returned {}", got.size(), results.size());
    return r;
  }
  bool random = call.value("random", false);
  std::vector<Literal> aligned;  // outputs compared up to the sign (phase) of each vector
  aligned.reserve(got.size());
  for (auto [index, rows] : SignFreeOutputs(qname)) {
    if (index >= got.size() || results[index].contains("scalar")) continue;
    aligned.push_back(*got[index]);
    AlignSigns(aligned.back(), results[index], rows);
    got[index] = &aligned.back();
  }
  std::vector<size_t> uninitialized;  // outputs PyTorch leaves partly uninitialized (gen_samples.py)
  if (call.contains("uninitialized_outputs")) uninitialized = call["uninitialized_outputs"].get<std::vector<size_t>>();
  for (size_t i = 0; i < got.size(); ++i) {
    bool shape_only = random || std::find(uninitialized.begin(), uninitialized.end(), i) != uninitialized.end();
    std::string why = Compare(*got[i], results[i], shape_only, lowered->dynamic_shape);
    if (!why.empty()) {
      r["status"] = "mismatch";
      r["detail"] = fmt::format("output {}: {}", i, why);
      return r;
    }
  }
  r["status"] = "match";
  if (random) r["detail"] = "random/uninitialized: dtype and shape compared";
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: conformance_runner SAMPLES.json RESULTS.json\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "conformance_runner: cannot read %s\n", argv[1]);
    return 2;
  }
  json samples = json::parse(in, nullptr, false);
  if (samples.is_discarded() || !samples.contains("entries")) {
    std::fprintf(stderr, "conformance_runner: %s is not a samples file\n", argv[1]);
    return 2;
  }
  auto t0 = std::chrono::steady_clock::now();
  json out = {{"format", "opprobe-conformance-results"}, {"version", 1}, {"entries", json::array()}};
  for (const auto& e : samples["entries"]) {
    json re = {{"name", e["name"]}, {"samples", json::array()}};
    if (e.contains("skip")) re["skip"] = e["skip"];
    for (const auto& s : e["samples"]) {
      json rs = {{"dtype", s["dtype"]}, {"error", s["error"]}, {"calls", json::array()}};
      for (const auto& call : s["calls"]) {
        json rc;
        try {
          rc = RunCall(call);
        } catch (const std::exception& ex) {
          rc = {{"op", call.value("op", "?")}, {"status", "harness-error"}, {"detail", ex.what()}};
        }
        rs["calls"].push_back(std::move(rc));
      }
      re["samples"].push_back(std::move(rs));
    }
    out["entries"].push_back(std::move(re));
  }
  for (const auto& op : opprobe::analyzer::CoreAtenOps()) {
    const auto* e = opprobe::analyzer::FindLowering(opprobe::analyzer::LoweringTable::Builtin(), op);
    out["core"].push_back({{"op", op}, {"lowered", e != nullptr}, {"family", e ? e->family : ""}});
  }
  out["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string tmp = std::string(argv[2]) + ".tmp";
  {
    std::ofstream o(tmp);
    o << out.dump(1) << "\n";
  }
  std::rename(tmp.c_str(), argv[2]);
  return 0;
}
