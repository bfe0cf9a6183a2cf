// Trace loader: the sample traces, every value kind, bad traces with their exact error paths, and the
// sample traces validated against schemas/trace.schema.json.
#include "analyzer/loaders/trace_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "opprobe_version.h"

namespace opprobe::analyzer {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Src(const std::string& rel) { return std::string(OPPROBE_SOURCE_DIR) + "/" + rel; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const Node* Find(const Graph& g, const std::string& qualified, const std::string& phase = "") {
  for (const auto& n : g.nodes)
    if (n.qualified_name() == qualified && (phase.empty() || n.phase == phase)) return &n;
  return nullptr;
}

// ------------------------------------------------------------------------------------------------
// Sample traces (samples/traces/*.json, captured from samples/scripts/*.py)
// ------------------------------------------------------------------------------------------------

TEST(TraceLoader, UnsupportedSample) {
  auto g = LoadTrace(Src("samples/traces/unsupported.json"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->input_kind, "trace");
  EXPECT_EQ(g->model, "samples/scripts/unsupported.py");
  EXPECT_THAT(g->torch_version, StartsWith("1.13"));
  const Node* mul = Find(*g, "aten::mul.Tensor");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->op, "aten::mul");
  EXPECT_EQ(mul->overload, "Tensor");
  ASSERT_EQ(mul->args.size(), 2u);
  EXPECT_EQ(mul->args[0].name, "self");
  EXPECT_EQ(mul->args[0].value.ToString(), "f32[4]");
  EXPECT_EQ(mul->args[1].name, "other");
  EXPECT_EQ(mul->args[1].value.ToString(), "c64[4]");
  ASSERT_EQ(mul->outputs.size(), 1u);
  EXPECT_EQ(mul->outputs[0].tensor.dtype, hlo::PrimitiveType::C64);
  EXPECT_EQ(mul->loc.ToString(), "unsupported.py 11");
  EXPECT_EQ(mul->phase, "forward");
  EXPECT_EQ(mul->count, 1);
  // `x + 10`: the scalar arrives as an int, alpha filled in from the schema default.
  const Node* add = Find(*g, "aten::add.Tensor");
  ASSERT_NE(add, nullptr);
  ASSERT_EQ(add->args.size(), 3u);
  EXPECT_EQ(add->args[1].value.kind, Value::Kind::kInt);
  EXPECT_EQ(add->args[1].value.i, 10);
  EXPECT_EQ(add->args[2].name, "alpha");
  EXPECT_EQ(add->args[2].value.i, 1);
  EXPECT_NE(Find(*g, "aten::_fft_r2c"), nullptr);
}

// tests/fixtures/traces/xla_loop_print.json: the loss printed every step of a torch_xla loop, captured on PyTorch 2.9
// (regenerate: build/opprobe capture -q -o tests/fixtures/traces/xla_loop_print.json --
// $OPPROBE_VENV_ROOT/torch2/bin/python tests/torch2/scripts/xla_loop_steps.py print).
TEST(TraceLoader, GraphsOfTheStepsAreRead) {
  auto g = LoadTrace(Src("tests/fixtures/traces/xla_loop_print.json"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_TRUE(g->steps.has_value());
  const StepGraphs& s = *g->steps;
  EXPECT_EQ(s.model, "torch_xla lazy tensor");
  EXPECT_EQ(s.steps, 6);
  EXPECT_EQ(s.executed_graphs, 12);
  EXPECT_EQ(s.distinct_graphs, 2);
  ASSERT_EQ(s.recompilations.size(), 1u);
  EXPECT_EQ(s.recompilations[0].trigger_kind, "step_end");
  EXPECT_EQ(s.recompilations[0].trigger_op, "xm.mark_step");
  EXPECT_EQ(s.recompilations[0].trigger_loc.line, 46);
  EXPECT_THAT(s.recompilations[0].cause, HasSubstr("after a value read on the host at xla_loop_steps.py:41"));
  ASSERT_EQ(s.cuts.size(), 1u);
  EXPECT_EQ(s.cuts[0].kind, "value_read");
  EXPECT_EQ(s.cuts[0].op, "aten::_local_scalar_dense");
  EXPECT_EQ(s.cuts[0].loc.line, 41);
  EXPECT_EQ(s.cuts[0].count, 6);
  EXPECT_EQ(s.cuts[0].extra_graphs, 1);
  // A trace of a script that never used the XLA device says nothing of its graphs.
  auto plain = LoadTrace(Src("samples/traces/supported.json"));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->steps.has_value());
}

TEST(TraceLoader, SupportedSampleHasAllThreePhasesAndModulePaths) {
  auto g = LoadTrace(Src("samples/traces/supported.json"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::set<std::string> phases, modules;
  int64_t total = 0;
  for (const auto& n : g->nodes) {
    phases.insert(n.phase);
    modules.insert(n.module_path);
    total += n.count;
    EXPECT_EQ(n.op.rfind("aten::", 0), 0u) << n.op;
  }
  EXPECT_EQ(phases, (std::set<std::string>{"forward", "backward", "optimizer"}));
  EXPECT_TRUE(modules.count("layer1") && modules.count("nl1") && modules.count("layer2") && modules.count("nl2"));
  auto doc = json::parse(ReadFile(Src("samples/traces/supported.json")));
  EXPECT_EQ(total, doc["total_calls"].get<int64_t>());
  const Node* mm = Find(*g, "aten::mm", "forward");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->count, 2);  // two training steps, merged
  EXPECT_NE(Find(*g, "aten::mse_loss_backward", "backward"), nullptr);
  EXPECT_NE(Find(*g, "aten::threshold_backward", "backward"), nullptr);
  const Node* sgd = Find(*g, "aten::add_.Tensor", "optimizer");
  ASSERT_NE(sgd, nullptr);
  EXPECT_DOUBLE_EQ(sgd->arg("alpha", 2)->AsDouble(), -0.01);
}

TEST(TraceLoader, Resnet18Sample) {
  auto g = LoadTrace(Src("samples/traces/resnet18_train.json"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Node* conv = Find(*g, "aten::convolution");
  ASSERT_NE(conv, nullptr);
  ASSERT_EQ(conv->args.size(), 9u);
  EXPECT_EQ(conv->args[3].name, "stride");
  EXPECT_EQ(conv->args[3].value.kind, Value::Kind::kIntList);
  EXPECT_EQ(conv->args[2].name, "bias");
  EXPECT_TRUE(conv->args[2].value.is_none());
  EXPECT_FALSE(conv->module_path.empty());
  EXPECT_NE(Find(*g, "aten::convolution_backward", "backward"), nullptr);
  EXPECT_NE(Find(*g, "aten::native_batch_norm_backward", "backward"), nullptr);
  EXPECT_NE(Find(*g, "aten::max_pool2d_with_indices_backward", "backward"), nullptr);
  const Node* bn = Find(*g, "aten::native_batch_norm");
  ASSERT_NE(bn, nullptr);
  EXPECT_EQ(bn->outputs.size(), 3u);  // tuple outputs flattened
  EXPECT_NE(Find(*g, "aten::add_.Tensor", "optimizer"), nullptr);
}

// ------------------------------------------------------------------------------------------------
// Every value kind (tests/fixtures/traces/all_kinds.json)
// ------------------------------------------------------------------------------------------------

TEST(TraceLoader, EveryValueKind) {
  auto g = LoadTrace(Src("tests/fixtures/traces/all_kinds.json"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->model, "all_kinds.py");
  EXPECT_EQ(g->torch_version, "2.3.0");
  ASSERT_EQ(g->nodes.size(), 3u);

  const Node& idx = g->nodes[0];
  EXPECT_EQ(idx.qualified_name(), "aten::index.Tensor");
  EXPECT_EQ(idx.module_path, "enc.layers.0");
  EXPECT_EQ(idx.count, 4);
  const Value& list = idx.args[1].value;
  ASSERT_EQ(list.kind, Value::Kind::kTensorList);
  ASSERT_EQ(list.tensors.size(), 2u);
  EXPECT_FALSE(list.tensors[0].has_value());
  EXPECT_EQ(list.tensors[1]->dtype, hlo::PrimitiveType::S64);
  EXPECT_EQ(list.ToString(), "[None, s64[2]]");
  EXPECT_EQ(idx.args[0].value.tensor.dtype, hlo::PrimitiveType::BF16);

  const Node& n = g->nodes[1];
  EXPECT_EQ(n.phase, "backward");
  EXPECT_EQ(n.loc.file, "/abs/path/all_kinds.py");
  EXPECT_EQ(n.loc.ToString(), "all_kinds.py 17");
  std::map<std::string, const Value*> v;
  for (const auto& a : n.args) v[a.name] = &a.value;
  EXPECT_TRUE(v["n"]->is_none());
  EXPECT_EQ(v["b"]->kind, Value::Kind::kBool);
  EXPECT_TRUE(v["b"]->b);
  EXPECT_EQ(v["i"]->kind, Value::Kind::kInt);
  EXPECT_EQ(v["i"]->i, -7);
  EXPECT_FALSE(v["i"]->symbolic);
  EXPECT_TRUE(v["s"]->symbolic);
  EXPECT_EQ(v["s"]->i, 9);
  EXPECT_EQ(v["f"]->kind, Value::Kind::kFloat);
  EXPECT_DOUBLE_EQ(v["f"]->f, 0.25);
  EXPECT_TRUE(std::isnan(v["fnan"]->f));
  EXPECT_TRUE(std::isinf(v["finf"]->f) && v["finf"]->f < 0);
  EXPECT_EQ(v["c"]->kind, Value::Kind::kComplex);
  EXPECT_EQ(v["c"]->c, std::complex<double>(1.5, -2));
  EXPECT_EQ(v["str"]->kind, Value::Kind::kString);
  EXPECT_EQ(v["str"]->s, "mean");
  EXPECT_EQ(v["il"]->kind, Value::Kind::kIntList);
  EXPECT_EQ(v["il"]->ints, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(v["fl"]->kind, Value::Kind::kFloatList);
  ASSERT_EQ(v["fl"]->floats.size(), 3u);
  EXPECT_TRUE(std::isinf(v["fl"]->floats[1]));
  EXPECT_EQ(v["bl"]->kind, Value::Kind::kBoolList);
  EXPECT_EQ(v["bl"]->bools, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(v["sl"]->kind, Value::Kind::kString);
  EXPECT_EQ(v["sl"]->s, "['N', 'C']");
  EXPECT_EQ(v["dt"]->kind, Value::Kind::kDtype);
  EXPECT_EQ(v["dt"]->dtype, hlo::PrimitiveType::C64);
  EXPECT_EQ(v["dev"]->kind, Value::Kind::kDevice);
  EXPECT_EQ(v["dev"]->s, "cuda:0");
  EXPECT_EQ(v["lay"]->kind, Value::Kind::kLayout);
  EXPECT_EQ(v["lay"]->s, "strided");
  EXPECT_EQ(v["mf"]->kind, Value::Kind::kMemoryFormat);
  EXPECT_EQ(v["mf"]->s, "channels_last");
  EXPECT_EQ(v["gen"]->kind, Value::Kind::kString);
  EXPECT_EQ(v["gen"]->s, "<torch._C.Generator object>");
  ASSERT_EQ(n.outputs.size(), 2u);
  EXPECT_TRUE(n.outputs[0].tensor.is_dynamic());
  EXPECT_EQ(n.outputs[0].tensor.ToString(), "f32[<=8,4]");
  EXPECT_EQ(n.outputs[1].i, 3);
  EXPECT_TRUE(n.dynamic_shape);
  EXPECT_FALSE(n.note.empty());

  const Node& opt = g->nodes[2];
  EXPECT_EQ(opt.phase, "optimizer");
  EXPECT_TRUE(opt.loc.empty());
  EXPECT_EQ(opt.args[0].value.tensor.rank(), 0);
  EXPECT_FALSE(opt.dynamic_shape);
}

TEST(TraceLoader, MinimalTraceFillsDefaults) {
  auto g = ParseTrace(R"({"format":"opprobe-trace","version":1,"calls":[
      {"op":"aten::relu","args":[{"value":{"kind":"tensor","dtype":"torch.float16","shape":[2]}}]}]})",
                      "min.json");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->model, "min.json");  // no script recorded: the file names the model
  ASSERT_EQ(g->nodes.size(), 1u);
  const Node& n = g->nodes[0];
  EXPECT_EQ(n.overload, "default");
  EXPECT_EQ(n.count, 1);
  EXPECT_EQ(n.args[0].name, "");
  EXPECT_EQ(n.args[0].value.tensor.dtype, hlo::PrimitiveType::F16);
  EXPECT_TRUE(n.outputs.empty());
  EXPECT_TRUE(n.loc.empty());
}

// ------------------------------------------------------------------------------------------------
// Bad traces: one-line errors with the file and the JSON path
// ------------------------------------------------------------------------------------------------

std::string ErrorOf(const std::string& text) {
  auto g = ParseTrace(text, "trace.json");
  if (g.ok()) return "(no error)";
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(g.status().message().find('\n'), std::string::npos) << "one line: " << g.status().message();
  return g.status().message();
}

TEST(TraceLoader, AMalformedGraphsMemberNamesItsPlace) {
  const std::string head = R"({"format":"opprobe-trace","version":1,"calls":[],"graphs":)";
  EXPECT_EQ(ErrorOf(head + "5}"),
            "trace.json: graphs: expected an object {steps, executed_graphs, distinct_graphs, "
            "recompilations, cuts}, got an integer");
  EXPECT_EQ(ErrorOf(head + R"({"steps":1,"executed_graphs":1}})"),
            "trace.json: graphs: missing member \"distinct_graphs\"");
  const std::string counts = R"({"steps":1,"executed_graphs":2,"distinct_graphs":2,)";
  EXPECT_EQ(ErrorOf(head + counts + R"("recompilations":[{"step":0,"graph":1,"cause":"x","trigger":5}]}})"),
            "trace.json: graphs.recompilations[0].trigger: expected an object, got an integer");
  EXPECT_EQ(ErrorOf(head + counts + R"("cuts":[{"kind":"value_read","op":"x","count":-1,"extra_graphs":0}]}})"),
            "trace.json: graphs.cuts[0].count: expected a count");
  EXPECT_EQ(ErrorOf(head + counts + R"("cuts":{}}})"), "trace.json: graphs.cuts: expected an array, got an object");
}

// A valid one-call trace with `call` spliced in.
std::string WithCall(const std::string& call) {
  return R"({"format":"opprobe-trace","version":1,"calls":[)" + call + "]}";
}

std::string WithArgs(const std::string& args) {
  return WithCall(R"({"op":"aten::mul","overload":"Tensor","args":[)" + args + R"(],"outputs":[]})");
}

const char* kGoodArg = R"({"name":"self","value":{"kind":"tensor","dtype":"float32","shape":[4]}})";

TEST(TraceLoaderErrors, NotJson) {
  EXPECT_THAT(ErrorOf("{\"format\": \"opprobe-trace\",\n  oops"),
              StartsWith("trace.json: not valid JSON at line 2, column 3"));
  EXPECT_EQ(ErrorOf(""), "trace.json: empty file, expected an opprobe trace (JSON)");
  EXPECT_EQ(ErrorOf("  \n"), "trace.json: empty file, expected an opprobe trace (JSON)");
  EXPECT_THAT(ErrorOf(R"({"format":"opprobe-trace","version":1,"calls":[{"op":"aten::mul")"),
              StartsWith("trace.json: not valid JSON at line 1"));
}

TEST(TraceLoaderErrors, TopLevel) {
  EXPECT_EQ(ErrorOf("[1,2]"), "trace.json: (root): expected a JSON object, got an array");
  EXPECT_EQ(ErrorOf("{}"), "trace.json: missing member \"format\"");
  EXPECT_EQ(ErrorOf(R"({"format":"hlo","version":1,"calls":[]})"),
            "trace.json: format: expected \"opprobe-trace\", got \"hlo\" (not an opprobe trace)");
  EXPECT_EQ(ErrorOf(R"({"format":"opprobe-trace","calls":[]})"), "trace.json: missing member \"version\"");
  EXPECT_EQ(ErrorOf(R"({"format":"opprobe-trace","version":"1","calls":[]})"),
            "trace.json: version: expected an integer, got the string \"1\"");
  EXPECT_EQ(ErrorOf(R"({"format":"opprobe-trace","version":2,"calls":[]})"),
            "trace.json: version: trace format version 2 is newer than this opprobe reads (1); upgrade opprobe or "
            "capture again with this one");
  EXPECT_EQ(ErrorOf(R"({"format":"opprobe-trace","version":0,"calls":[]})"),
            "trace.json: version: unknown trace format version 0");
  EXPECT_EQ(ErrorOf(R"({"format":"opprobe-trace","version":1})"), "trace.json: missing member \"calls\"");
  EXPECT_EQ(ErrorOf(R"({"format":"opprobe-trace","version":1,"calls":{}})"),
            "trace.json: calls: expected an array, got an object");
  EXPECT_EQ(ErrorOf(R"({"format":"opprobe-trace","version":1,"script":3,"calls":[]})"),
            "trace.json: script: expected a string, got an integer");
}

TEST(TraceLoaderErrors, Calls) {
  EXPECT_EQ(ErrorOf(WithCall("7")), "trace.json: calls[0]: expected a call object, got an integer");
  EXPECT_EQ(ErrorOf(WithCall(R"({"args":[]})")), "trace.json: calls[0]: missing member \"op\"");
  EXPECT_EQ(ErrorOf(WithCall(R"({"op":"mul","args":[]})")),
            "trace.json: calls[0].op: expected a qualified op name like \"aten::mul\", got \"mul\"");
  EXPECT_EQ(ErrorOf(WithCall(R"({"op":"aten::mul"})")), "trace.json: calls[0]: missing member \"args\"");
  EXPECT_EQ(ErrorOf(WithCall(R"({"op":"aten::mul","args":[],"count":0})")),
            "trace.json: calls[0].count: expected a count >= 1, got 0");
  EXPECT_EQ(ErrorOf(WithCall(R"({"op":"aten::mul","args":[],"phase":"eval"})")),
            "trace.json: calls[0].phase: unknown phase 'eval' (expected forward, backward or optimizer)");
  EXPECT_EQ(ErrorOf(WithCall(R"({"op":"aten::mul","args":[],"loc":{"file":"a.py","line":"3"}})")),
            "trace.json: calls[0].loc.line: expected an integer, got the string \"3\"");
  EXPECT_EQ(ErrorOf(WithCall(R"({"op":"aten::mul","args":[],"loc":[]})")),
            "trace.json: calls[0].loc: expected an object {\"file\", \"line\"}, got an array");
  EXPECT_EQ(ErrorOf(WithCall(R"({"op":"aten::mul","args":[],"outputs":[{"kind":"tensor","dtype":"float32"}]})")),
            "trace.json: calls[0].outputs[0]: missing member \"shape\"");
  // The index in the message is the failing call's.
  std::string three_good = std::string(R"({"op":"aten::relu","args":[)") + kGoodArg + "]},";
  EXPECT_EQ(ErrorOf(WithCall(three_good + three_good + three_good + R"({"op":"aten::relu","args":[1]})")),
            "trace.json: calls[3].args[0]: expected an argument object {\"name\", \"value\"}, got an integer");
}

TEST(TraceLoaderErrors, Values) {
  std::string g = std::string(kGoodArg) + ",";
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":5})")),
            "trace.json: calls[0].args[1].value: expected a value object with a \"kind\", got an integer");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other"})")), "trace.json: calls[0].args[1]: missing member \"value\"");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{}})")),
            "trace.json: calls[0].args[1].value: missing member \"kind\"");
  EXPECT_THAT(
      ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"quaternion"}})")),
      StartsWith("trace.json: calls[0].args[1].value.kind: unknown value kind 'quaternion' (expected one of: "));
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"tensor","dtype":"quint16","shape":[4]}})")),
            "trace.json: calls[0].args[1].value.dtype: unknown dtype 'quint16'");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"tensor","dtype":"float32","shape":[4,-1]}})")),
            "trace.json: calls[0].args[1].value.shape[1]: negative size -1");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"tensor","dtype":"float32","shape":[4.5]}})")),
            "trace.json: calls[0].args[1].value.shape[0]: expected an integer, got a number");
  EXPECT_EQ(
      ErrorOf(WithArgs(g + R"({"name":"o","value":{"kind":"tensor","dtype":"float32","shape":[4],"dynamic":[]}})")),
      "trace.json: calls[0].args[1].value.dynamic: has 0 entries for 1 sizes");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"int","value":2.5}})")),
            "trace.json: calls[0].args[1].value.value: expected an integer, got a number");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"int","value":18446744073709551615}})")),
            "trace.json: calls[0].args[1].value.value: integer out of range");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"int"}})")),
            "trace.json: calls[0].args[1].value: missing member \"value\"");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"float","value":"NaN"}})")),
            "trace.json: calls[0].args[1].value.value: expected a number (or \"nan\", \"inf\", \"-inf\"), got the "
            "string \"NaN\"");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"bool","value":1}})")),
            "trace.json: calls[0].args[1].value.value: expected a boolean, got an integer");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"complex","real":1}})")),
            "trace.json: calls[0].args[1].value: missing member \"imag\"");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"int_list","value":[1,"2"]}})")),
            "trace.json: calls[0].args[1].value.value[1]: expected an integer, got the string \"2\"");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"dtype","value":"float128"}})")),
            "trace.json: calls[0].args[1].value.value: unknown dtype 'float128'");
  EXPECT_EQ(ErrorOf(WithArgs(
                g + R"({"name":"t","value":{"kind":"tensor_list","value":[null,{"dtype":"qint16","shape":[]}]}})")),
            "trace.json: calls[0].args[1].value.value[1].dtype: unknown dtype 'qint16'");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"t","value":{"kind":"tensor_list","value":[3]}})")),
            "trace.json: calls[0].args[1].value.value[0]: expected a tensor object, got an integer");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"int","value":3,"symbolic":"yes"}})")),
            "trace.json: calls[0].args[1].value.symbolic: expected a boolean, got the string \"yes\"");
  EXPECT_EQ(ErrorOf(WithArgs(g + R"({"name":"other","value":{"kind":"other"}})")),
            "trace.json: calls[0].args[1].value: missing member \"type\"");
}

TEST(TraceLoaderErrors, Files) {
  auto missing = LoadTrace("/nonexistent/dir/trace.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(missing.status().message(), "/nonexistent/dir/trace.json: no such file");
  auto dir = LoadTrace(Src("samples"));
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().message(), Src("samples") + ": is a folder, not a file");
  auto other = LoadTrace(Src("schemas/trace.schema.json"));  // JSON, but not a trace
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.status().message(), HasSubstr("trace.schema.json: missing member \"format\""));
}

// Every prefix of a real trace is rejected cleanly (and never crashes); so is every one-byte corruption.
TEST(TraceLoaderErrors, TruncationsAndCorruptionsNeverCrash) {
  std::string text = ReadFile(Src("samples/traces/unsupported.json"));
  ASSERT_FALSE(text.empty());
  ASSERT_TRUE(ParseTrace(text, "u.json").ok());
  size_t rejected = 0;
  for (size_t n = 0; n + 2 < text.size(); ++n) {
    auto g = ParseTrace(std::string_view(text).substr(0, n), "u.json");
    if (!g.ok()) {
      ++rejected;
      EXPECT_THAT(g.status().message(), StartsWith("u.json: "));
    }
  }
  EXPECT_EQ(rejected, text.size() - 2);
  const char kBytes[] = {'"', '{', ']', '-', '9', 'x', '\0', '\xff'};
  for (size_t pos = 0; pos < text.size(); pos += 7) {
    for (char b : kBytes) {
      std::string t = text;
      t[pos] = b;
      auto g = ParseTrace(t, "u.json");
      if (!g.ok()) { EXPECT_THAT(g.status().message(), StartsWith("u.json: ")); }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Streaming: the file read in pieces, calls handed on as they are read, identical argument lists shared, the errors
// of checking the whole document at once
// ------------------------------------------------------------------------------------------------

std::string TempFile(const std::string& name, const std::string& text) {
  std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("opprobe_trace_loader_test_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

// What a node holds, for comparing two loads.
std::string Describe(const Node& n) {
  return n.SignatureKey() + " @" + n.loc.file + ":" + std::to_string(n.loc.line) + " lib " + n.lib_loc.file + ":" +
         std::to_string(n.lib_loc.line) + " " + n.module_path + " " + n.phase + " x" + std::to_string(n.count) +
         " step " + std::to_string(n.step) + " " + (n.dynamic_shape ? "dynamic " : "") + n.note;
}

// LoadTrace in pieces of any size gives what ParseTrace gives from the text: the same nodes or the same error.
TEST(TraceStreaming, PiecesOfAnySizeLoadTheSame) {
  for (const char* f :
       {"samples/traces/unsupported.json", "samples/traces/supported.json", "tests/fixtures/traces/all_kinds.json"}) {
    const std::string text = ReadFile(Src(f));
    std::vector<std::string> variants = {text, text.substr(0, text.size() * 2 / 3)};
    std::string corrupt = text;
    corrupt[text.size() / 3] = '}';
    variants.push_back(corrupt);
    for (size_t v = 0; v < variants.size(); ++v) {
      const std::string path = TempFile("pieces.json", variants[v]);
      auto want = ParseTrace(variants[v], path);
      for (size_t piece : {1, 3, 8, 100, 1 << 20}) {
        Graph nodes;
        GraphNodes sink(nodes);
        auto got = LoadTrace(path, sink, piece);
        ASSERT_EQ(got.ok(), want.ok()) << f << " variant " << v << " piece " << piece << ": " << got.status().message();
        if (!want.ok()) {
          EXPECT_EQ(got.status().message(), want.status().message()) << f << " piece " << piece;
          continue;
        }
        EXPECT_EQ(got->model, want->model);
        EXPECT_EQ(got->torch_version, want->torch_version);
        EXPECT_EQ(got->capture, want->capture);
        ASSERT_EQ(nodes.nodes.size(), want->nodes.size()) << f;
        for (size_t i = 0; i < nodes.nodes.size(); ++i) EXPECT_EQ(Describe(nodes.nodes[i]), Describe(want->nodes[i]));
      }
      std::filesystem::remove(path);
    }
  }
}

// Calls whose arguments and outputs are written the same way hold one parsed copy of them.
TEST(TraceStreaming, IdenticalArgumentListsShareOneCopy) {
  const std::string call =
      std::string(R"({"op":"aten::relu","args":[)") + kGoodArg +
      R"(],"outputs":[{"kind":"tensor","dtype":"float32","shape":[4]}],"loc":{"file":"a.py","line":)";
  auto g =
      ParseTrace(WithCall(call + "1}}," + call + "2}}," + R"({"op":"aten::neg","args":[)" + kGoodArg + "]}"), "t.json");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->nodes.size(), 3u);
  EXPECT_NE(g->nodes[0].args.storage(), nullptr);
  EXPECT_EQ(g->nodes[0].args.storage(), g->nodes[1].args.storage());
  EXPECT_EQ(g->nodes[0].outputs.storage(), g->nodes[1].outputs.storage());
  EXPECT_EQ(g->nodes[1].loc.line, 2);
  EXPECT_NE(g->nodes[2].args.storage(), g->nodes[0].args.storage());  // no outputs: another text
  // A copy that changes its arguments gets its own; the others keep theirs.
  Node changed = g->nodes[0];
  changed.args[0].name = "x";
  EXPECT_EQ(g->nodes[0].args[0].name, "self");
  EXPECT_EQ(g->nodes[1].args[0].name, "self");
  EXPECT_NE(changed.args.storage(), g->nodes[0].args.storage());
}

// The nodes go to the sink as they are read, in order, skipped_ops' nodes after the calls.
TEST(TraceStreaming, NodesReachTheSinkInOrder) {
  struct Recorder : NodeSink {
    std::vector<std::string> ops;
    void Add(Node&& n) override { ops.push_back(n.op); }
  } sink;
  auto g = ParseTrace(R"({"format":"opprobe-trace","version":1,"skipped_ops":{"b::y":1,"a::x":2},"calls":[
      {"op":"aten::relu","args":[]},{"op":"aten::neg","args":[]}]})",
                      "t.json", sink);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(g->nodes.empty());
  EXPECT_EQ(sink.ops, (std::vector<std::string>{"aten::relu", "aten::neg", "a::x", "b::y"}));
}

// The error is the one checking the whole document at once finds first, whatever the order of the members.
TEST(TraceStreaming, ErrorsInTheOrderOfTheWholeDocument) {
  // A bad call before a bad format in the file: the format is checked first.
  EXPECT_EQ(ErrorOf(R"({"calls":[{"op":"mul","args":[]}],"format":"hlo","version":1})"),
            "trace.json: format: expected \"opprobe-trace\", got \"hlo\" (not an opprobe trace)");
  EXPECT_EQ(ErrorOf(R"({"calls":[{"op":"mul","args":[]}],"version":1})"), "trace.json: missing member \"format\"");
  EXPECT_EQ(ErrorOf(R"({"calls":7,"format":"opprobe-trace","version":3})"),
            "trace.json: version: trace format version 3 is newer than this opprobe reads (1); upgrade opprobe or "
            "capture again with this one");
  // A syntax error anywhere wins over an earlier bad call.
  EXPECT_THAT(ErrorOf(R"({"format":"opprobe-trace","version":1,"calls":[{"op":"mul","args":[]}], oops})"),
              StartsWith("trace.json: not valid JSON at line 1, column 73"));
  // Within a call, members are checked in one order whatever their order in the file.
  EXPECT_EQ(ErrorOf(WithCall(R"({"phase":"eval","count":0,"op":"mul","args":[]})")),
            "trace.json: calls[0].op: expected a qualified op name like \"aten::mul\", got \"mul\"");
  EXPECT_EQ(ErrorOf(WithCall(R"({"count":0,"phase":"eval","op":"aten::mul","args":[]})")),
            "trace.json: calls[0].phase: unknown phase 'eval' (expected forward, backward or optimizer)");
  // The capture status after the calls, skipped_ops last.
  EXPECT_EQ(ErrorOf(R"({"skipped_ops":[],"status":"maybe","format":"opprobe-trace","version":1,"calls":[]})"),
            "trace.json: status: expected \"ok\" or \"error\", got \"maybe\"");
  EXPECT_EQ(ErrorOf(R"({"format":"opprobe-trace","version":1,"calls":[],"skipped_ops":{"a::x":"2"}})"),
            "trace.json: skipped_ops.a::x: expected an integer, got the string \"2\"");
  // A repeated member counts once, the last one (as a JSON object read into a map); `calls` may not repeat.
  EXPECT_EQ(ErrorOf(R"({"format":"hlo","format":"opprobe-trace","version":1,"calls":[]})"), "(no error)");
  EXPECT_EQ(ErrorOf(WithCall(R"({"op":"mul","op":"aten::mul","args":[]})")), "(no error)");
  EXPECT_EQ(ErrorOf(R"({"format":"opprobe-trace","version":1,"calls":[],"calls":[]})"),
            "trace.json: calls: appears more than once (a trace has one array of calls)");
  // A byte order mark is skipped; a value that is not an object says what it is after it is read whole.
  EXPECT_EQ(ErrorOf("\xef\xbb\xbf{\"format\":\"opprobe-trace\",\"version\":1,\"calls\":[]}"), "(no error)");
  EXPECT_EQ(ErrorOf("\"a string\""), "trace.json: (root): expected a JSON object, got the string \"a string\"");
  EXPECT_THAT(ErrorOf("\"a string\" x"), StartsWith("trace.json: not valid JSON at line 1, column 12"));
}

// ------------------------------------------------------------------------------------------------
// JSON Schema validation of the samples (a validator for the subset of draft 2020-12 the schema uses;
// any other keyword fails the test, so the schema cannot silently use something unchecked).
// ------------------------------------------------------------------------------------------------

class MiniSchemaValidator {
 public:
  explicit MiniSchemaValidator(json root) : root_(std::move(root)) {}

  // Returns the first error (`path: reason`), or "" when `doc` is valid.
  std::string Validate(const json& doc) { return Check(root_, doc, "$"); }

 private:
  static bool IsType(const json& v, const std::string& t) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "integer")
      return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    if (t == "number") return v.is_number();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    ADD_FAILURE() << "schema uses unknown type " << t;
    return false;
  }

  const json& Resolve(const std::string& ref) {
    EXPECT_EQ(ref.rfind("#/$defs/", 0), 0u) << "unsupported $ref " << ref;
    return root_.at("$defs").at(ref.substr(8));
  }

  std::string Check(const json& s, const json& v, const std::string& path) {
    static const std::set<std::string> kKnown = {"$schema", "$id",  "title",      "description", "$defs",
                                                 "$ref",    "type", "properties", "required",    "additionalProperties",
                                                 "items",   "enum", "const",      "minimum",     "minLength",
                                                 "oneOf",   "anyOf"};
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!kKnown.count(it.key())) ADD_FAILURE() << "schema keyword not supported by the test validator: " << it.key();
    if (s.contains("$ref")) {
      std::string e = Check(Resolve(s["$ref"].get<std::string>()), v, path);
      if (!e.empty()) return e;
    }
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_array()) {
        for (const auto& t : s["type"]) ok = ok || IsType(v, t.get<std::string>());
      } else {
        ok = IsType(v, s["type"].get<std::string>());
      }
      if (!ok) return path + ": expected type " + s["type"].dump() + ", got " + v.dump().substr(0, 60);
    }
    if (s.contains("const") && v != s["const"]) return path + ": expected " + s["const"].dump();
    if (s.contains("enum")) {
      bool found = false;
      for (const auto& e : s["enum"]) found = found || e == v;
      if (!found) return path + ": " + v.dump() + " not in enum";
    }
    if (s.contains("minimum") && v.is_number() && v.get<double>() < s["minimum"].get<double>())
      return path + ": below minimum";
    if (s.contains("minLength") && v.is_string() && v.get<std::string>().size() < s["minLength"].get<size_t>())
      return path + ": too short";
    if (v.is_object()) {
      if (s.contains("required"))
        for (const auto& r : s["required"])
          if (!v.contains(r.get<std::string>())) return path + ": missing required " + r.get<std::string>();
      for (auto it = v.begin(); it != v.end(); ++it) {
        std::string sub = path + "." + it.key();
        if (s.contains("properties") && s["properties"].contains(it.key())) {
          std::string e = Check(s["properties"][it.key()], it.value(), sub);
          if (!e.empty()) return e;
        } else if (s.contains("additionalProperties")) {
          const json& ap = s["additionalProperties"];
          if (ap.is_boolean()) {
            if (!ap.get<bool>()) return sub + ": property not allowed";
          } else {
            std::string e = Check(ap, it.value(), sub);
            if (!e.empty()) return e;
          }
        }
      }
    }
    if (v.is_array() && s.contains("items")) {
      for (size_t i = 0; i < v.size(); ++i) {
        std::string e = Check(s["items"], v[i], path + "[" + std::to_string(i) + "]");
        if (!e.empty()) return e;
      }
    }
    if (s.contains("anyOf")) {
      std::string last;
      bool any = false;
      for (const auto& alt : s["anyOf"]) {
        last = Check(alt, v, path);
        if (last.empty()) {
          any = true;
          break;
        }
      }
      if (!any) return path + ": matches no anyOf alternative (last: " + last + ")";
    }
    if (s.contains("oneOf")) {
      int matches = 0;
      std::string errors;
      for (const auto& alt : s["oneOf"]) {
        std::string e = Check(alt, v, path);
        if (e.empty()) ++matches;
        else if (errors.size() < 400) errors += " | " + e;
      }
      if (matches != 1) return path + ": matches " + std::to_string(matches) + " oneOf alternatives" + errors;
    }
    return "";
  }

  json root_;
};

MiniSchemaValidator LoadSchema() {
  return MiniSchemaValidator(json::parse(ReadFile(Src("schemas/trace.schema.json"))));
}

TEST(TraceSchema, SamplesAndFixturesAreValid) {
  auto v = LoadSchema();
  for (const char* f : {"samples/traces/supported.json", "samples/traces/unsupported.json",
                        "samples/traces/resnet18_train.json", "tests/fixtures/traces/all_kinds.json",
                        "tests/fixtures/traces/xla_loop_print.json", "tests/fixtures/traces/decoder_program.json"}) {
    auto doc = json::parse(ReadFile(Src(f)));
    EXPECT_EQ(v.Validate(doc), "") << f;
  }
}

TEST(TraceSchema, RejectsWhatTheLoaderRejects) {
  auto v = LoadSchema();
  json doc = json::parse(ReadFile(Src("samples/traces/unsupported.json")));
  EXPECT_EQ(v.Validate(doc), "");
  json bad = doc;
  bad["version"] = 2;
  EXPECT_THAT(v.Validate(bad), HasSubstr("$.version"));
  bad = doc;
  bad["calls"][0]["phase"] = "eval";
  EXPECT_THAT(v.Validate(bad), HasSubstr("$.calls[0].phase"));
  bad = doc;
  bad["calls"][3]["args"][1]["value"]["dtype"] = "quint16";
  EXPECT_THAT(v.Validate(bad), HasSubstr("$.calls[3].args[1].value"));
  bad = doc;
  bad["calls"][0]["extra"] = 1;
  EXPECT_THAT(v.Validate(bad), HasSubstr("$.calls[0].extra: property not allowed"));
  bad = doc;
  bad["calls"][0]["count"] = 0;
  EXPECT_THAT(v.Validate(bad), HasSubstr("$.calls[0].count"));
}

// Every dtype name the schema allows is one the loader knows.
TEST(TraceSchema, DtypeEnumMatchesLoader) {
  json schema = json::parse(ReadFile(Src("schemas/trace.schema.json")));
  for (const auto& d : schema["$defs"]["dtype"]["enum"])
    EXPECT_TRUE(DtypeFromTorchName(d.get<std::string>()).has_value()) << d;
}

}  // namespace
}  // namespace opprobe::analyzer
