// Tests of the .pt2 loader (analyzer/loaders/pt2_loader.h): the real corpus files, the fixtures written by
// tests/tools/write_pt2.py (regenerate: /usr/bin/python3 tests/tools/write_pt2.py --all tests/fixtures/pt2),
// and every kind of bad input (built here, byte by byte or with libzip).
#include "analyzer/loaders/pt2_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <zip.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "analyzer/loaders/op_schemas.h"
#include "analyzer/loaders/pt2_program.h"
#include "analyzer/loaders/trace_loader.h"
#include "analyzer/loaders/zip_reader.h"
#include "opprobe_version.h"
#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe::analyzer {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kCorpus = std::string(OPPROBE_SOURCE_DIR) + "/../shared/corpus/pt2";
const std::string kFixtures = std::string(OPPROBE_SOURCE_DIR) + "/tests/fixtures/pt2";

#define SKIP_IF_MISSING(path) \
  if (!fs::exists(path)) GTEST_SKIP() << "corpus file " << (path) << " is absent"

const Node* FindNode(const Graph& g, const std::string& op, const std::string& program = "") {
  for (const auto& n : g.nodes)
    if (n.op == op && (program.empty() || n.program == program)) return &n;
  return nullptr;
}

TensorMeta F32(std::vector<int64_t> sizes) {
  TensorMeta m;
  m.dtype = hlo::PrimitiveType::F32;
  m.sizes = std::move(sizes);
  return m;
}

std::string TempPath(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("opprobe_pt2_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// --- A tiny stored-zip writer that can lie (names, sizes), for bad-input cases. ----------------------
uint32_t Crc32(std::string_view data) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

struct RawEntry {
  std::string name;
  std::string data;
  std::optional<uint32_t> declared_size;  // central-directory sizes to claim instead of data.size()
  std::optional<uint32_t> declared_compressed;
};

void Put16(std::string& s, uint16_t v) { s += static_cast<char>(v & 0xFF), s += static_cast<char>(v >> 8); }
void Put32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}

std::string StoredZip(const std::vector<RawEntry>& entries) {
  std::string out, central;
  for (const auto& e : entries) {
    uint32_t offset = static_cast<uint32_t>(out.size());
    uint32_t crc = Crc32(e.data);
    uint32_t size = e.declared_size.value_or(static_cast<uint32_t>(e.data.size()));
    uint32_t csize = e.declared_compressed.value_or(size);
    Put32(out, 0x04034b50), Put16(out, 20), Put16(out, 0), Put16(out, 0), Put16(out, 0), Put16(out, 0);
    Put32(out, crc), Put32(out, csize), Put32(out, size), Put16(out, static_cast<uint16_t>(e.name.size())),
        Put16(out, 0);
    out += e.name + e.data;
    Put32(central, 0x02014b50), Put16(central, 20), Put16(central, 20), Put16(central, 0), Put16(central, 0);
    Put16(central, 0), Put16(central, 0), Put32(central, crc), Put32(central, csize), Put32(central, size);
    Put16(central, static_cast<uint16_t>(e.name.size())), Put16(central, 0), Put16(central, 0), Put16(central, 0);
    Put16(central, 0), Put32(central, 0), Put32(central, offset);
    central += e.name;
  }
  uint32_t cd_offset = static_cast<uint32_t>(out.size());
  out += central;
  Put32(out, 0x06054b50), Put16(out, 0), Put16(out, 0), Put16(out, static_cast<uint16_t>(entries.size()));
  Put16(out, static_cast<uint16_t>(entries.size())), Put32(out, static_cast<uint32_t>(central.size()));
  Put32(out, cd_offset), Put16(out, 0);
  return out;
}

// A deflated zip written by libzip.
void DeflatedZip(const std::string& path, const std::string& name, const std::string& data) {
  int err = 0;
  fs::remove(path);
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr);
  zip_source_t* src = zip_source_buffer(z, data.data(), data.size(), 0);
  zip_int64_t idx = zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8);
  ASSERT_GE(idx, 0);
  zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), ZIP_CM_DEFLATE, 9);
  ASSERT_EQ(zip_close(z), 0);
}

// The minimal valid ExportedProgram (schema 8.x): one aten.mul.Tensor node.
std::string MinimalProgram(const std::string& schema_version = R"({"major": 8, "minor": 12})") {
  return R"({"graph_module": {"graph": {"inputs": [], "outputs": [], "nodes": [{"target": "torch.ops.aten.mul.Tensor",
  "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}, "kind": 1},
             {"name": "other", "arg": {"as_tensor": {"name": "x"}}, "kind": 1}],
  "outputs": [{"as_tensor": {"name": "mul"}}], "metadata": {}}],
  "tensor_values": {"x": {"dtype": 7, "sizes": [{"as_int": 2}]}, "mul": {"dtype": 7, "sizes": [{"as_int": 2}]}}}},
  "schema_version": )" +
         schema_version + "}";
}

Status LoadError(const std::string& path) {
  auto g = LoadPt2(path);
  EXPECT_FALSE(g.ok()) << "expected " << path << " to be rejected";
  if (g.ok()) return Status::Ok();
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(g.status().message().find('\n'), std::string::npos) << "one line: " << g.status().message();
  return g.status();
}

// --- Real corpus files ---------------------------------------------------------------------------------

TEST(Pt2LoaderCorpus, ExecutorchLinearArchive) {
  const std::string path = kCorpus + "/executorch_linear.pt2";
  SKIP_IF_MISSING(path);
  auto g = LoadPt2(path);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->input_kind, "pt2");
  EXPECT_EQ(g->model, "executorch_linear.pt2");
  EXPECT_EQ(g->torch_version, "2.9.0a0+fb");
  ASSERT_EQ(g->programs, std::vector<std::string>{"model"});
  ASSERT_EQ(g->nodes.size(), 1u);
  const Node& n = g->nodes[0];
  EXPECT_EQ(n.op, "aten::linear");
  EXPECT_EQ(n.overload, "default");
  EXPECT_EQ(n.program, "model");
  ASSERT_EQ(n.args.size(), 3u);
  EXPECT_EQ(n.args[0].name, "input");
  EXPECT_EQ(n.args[0].value, Value::Tensor(F32({3})));
  EXPECT_EQ(n.args[1].name, "weight");
  EXPECT_EQ(n.args[1].value, Value::Tensor(F32({3, 3})));
  EXPECT_EQ(n.args[2].name, "bias");
  EXPECT_EQ(n.args[2].value, Value::Tensor(F32({3})));
  ASSERT_EQ(n.outputs.size(), 1u);
  EXPECT_EQ(n.outputs[0], Value::Tensor(F32({3})));
  EXPECT_EQ(n.module_path, "linear");
  EXPECT_THAT(n.loc.file, HasSubstr("test_serialize.py"));  // the torch/nn/modules/linear.py frame is skipped
  EXPECT_EQ(n.loc.line, 694);
  EXPECT_FALSE(n.dynamic_shape);
  EXPECT_TRUE(n.note.empty()) << n.note;
}

TEST(Pt2LoaderCorpus, ExtractedProgramJsonSchema8) {
  const std::string path = kCorpus + "/executorch_linear.model.json";
  SKIP_IF_MISSING(path);
  auto g = LoadPt2(path);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->nodes.size(), 1u);
  EXPECT_EQ(g->nodes[0].op, "aten::linear");
  EXPECT_EQ(g->programs, std::vector<std::string>{"executorch_linear.model"});
}

TEST(Pt2LoaderCorpus, EtRecordSchema1) {
  const std::string path = kCorpus + "/executorch_etrecord_schema_v1.bin";
  SKIP_IF_MISSING(path);
  auto g = LoadPt2(path);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->input_kind, "pt2");
  EXPECT_EQ(g->programs, (std::vector<std::string>{"aten_dialect_output/forward", "edge_dialect_exported_program"}));
  ASSERT_EQ(g->nodes.size(), 2u);
  for (const auto& n : g->nodes) {
    EXPECT_EQ(n.op, "aten::mul");  // also the edge dialect's executorch.exir.dialects.edge.ops.aten.mul.Tensor
    EXPECT_EQ(n.overload, "Tensor");
    ASSERT_EQ(n.args.size(), 2u);
    EXPECT_EQ(n.args[0].name, "self");
    EXPECT_EQ(n.args[0].value, Value::Tensor(F32({3, 2})));
    EXPECT_EQ(n.args[1].name, "other");
    EXPECT_EQ(n.args[1].value, Value::Tensor(F32({3, 2})));
    ASSERT_EQ(n.outputs.size(), 1u);
    EXPECT_EQ(n.outputs[0], Value::Tensor(F32({3, 2})));
    EXPECT_THAT(n.loc.file, HasSubstr("toy_model/model.py"));
    EXPECT_EQ(n.loc.line, 18);
  }
  EXPECT_EQ(g->nodes[0].program, "aten_dialect_output/forward");
  EXPECT_EQ(g->nodes[1].program, "edge_dialect_exported_program");
}

TEST(Pt2LoaderCorpus, ExtractedProgramJsonSchema1) {
  for (const char* name :
       {"etrecord_aten_dialect_forward.schema_v1.json", "etrecord_edge_dialect_exported_program.schema_v1.json"}) {
    const std::string path = kCorpus + "/" + name;
    SKIP_IF_MISSING(path);
    auto g = LoadPt2(path);
    ASSERT_TRUE(g.ok()) << g.status().message();
    ASSERT_EQ(g->nodes.size(), 1u) << name;
    EXPECT_EQ(g->nodes[0].qualified_name(), "aten::mul.Tensor") << name;
  }
}

// --- Helpers ---------------------------------------------------------------------------------------------

TEST(Pt2Helpers, InnermostUserFrameSkipsTorch) {
  std::string trace =
      "  File \"/home/u/train.py\", line 12, in main\n    model(x)\n"
      "  File \"/home/u/model.py\", line 30, in forward\n    return self.fc(x)\n"
      "  File \"/usr/lib/python3/dist-packages/torch/nn/modules/linear.py\", line 114, in forward\n";
  SourceLoc loc = InnermostUserFrame(trace);
  EXPECT_EQ(loc.file, "/home/u/model.py");
  EXPECT_EQ(loc.line, 30);
  EXPECT_TRUE(InnermostUserFrame("  File \"torch/nn/functional.py\", line 3, in f").empty());
  EXPECT_TRUE(InnermostUserFrame("").empty());
}

TEST(Pt2Helpers, ModulePath) {
  EXPECT_EQ(ModulePathFromNnModuleStack("L__self__,,M;L__self__linear,linear,torch.nn.modules.linear.Linear"),
            "linear");
  EXPECT_EQ(ModulePathFromNnModuleStack(
                "L__self__,,M;L__self___layer1,layer1,S;L__self___layer1_0_conv1,layer1.0.conv1,torch.nn.Conv2d"),
            "layer1.0.conv1");
  EXPECT_EQ(ModulePathFromNnModuleStack("a,L['self'].layer1[0].conv1,torch.nn.Conv2d"), "layer1.0.conv1");
  EXPECT_EQ(ModulePathFromNnModuleStack("L__self__,,M"), "");
  EXPECT_EQ(ModulePathFromNnModuleStack(""), "");
}

TEST(Pt2Helpers, OpSchemaTable) {
  const OpSchema* conv2d = FindAtenSchema("conv2d", "default");
  ASSERT_NE(conv2d, nullptr);
  ASSERT_EQ(conv2d->args.size(), 7u);
  EXPECT_EQ(conv2d->args[3].name, "stride");
  EXPECT_EQ(conv2d->args[3].type, "int[2]");
  EXPECT_TRUE(conv2d->args[3].has_default);
  EXPECT_EQ(conv2d->args[3].default_value, nlohmann::json::array({1, 1}));
  EXPECT_FALSE(conv2d->args[0].has_default);
  const OpSchema* add = FindAtenSchema("add", "Tensor");
  ASSERT_NE(add, nullptr);
  EXPECT_TRUE(add->args[2].kwarg_only);
  EXPECT_EQ(FindAtenSchema("no_such_op", "default"), nullptr);
}

// --- Schema decoding details ----------------------------------------------------------------------------

Expected<Graph> DecodeText(const std::string& text) {
  Graph g;
  Status s = DecodeExportedProgram(text, "p", "test.json", g);
  if (!s.ok()) return s;
  return g;
}

TEST(Pt2Decode, FillsOmittedDefaultsFromSchema) {
  // aten.conv2d.default with only input/weight: bias, stride, padding, dilation, groups come from the schema.
  auto g = DecodeText(R"({"schema_version": {"major": 8, "minor": 17}, "graph_module": {"graph": {"nodes": [
    {"target": "torch.ops.aten.conv2d.default", "inputs": [{"name": "input", "arg": {"as_tensor": {"name": "x"}}},
      {"name": "weight", "arg": {"as_tensor": {"name": "w"}}}], "outputs": [{"as_tensor": {"name": "y"}}],
     "metadata": {}},
    {"target": "torch.ops.aten.add.Tensor", "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "y"}}},
      {"name": "other", "arg": {"as_tensor": {"name": "y"}}}], "outputs": [{"as_tensor": {"name": "z"}}]},
    {"target": "torch.ops.aten.sum.dim_IntList", "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "z"}}},
      {"name": "dim", "arg": {"as_ints": [1]}}], "outputs": [{"as_tensor": {"name": "s"}}]}],
    "tensor_values": {"x": {"dtype": 7, "sizes": [{"as_int": 1}, {"as_int": 3}, {"as_int": 8}, {"as_int": 8}]},
                      "w": {"dtype": 7, "sizes": [{"as_int": 4}, {"as_int": 3}, {"as_int": 3}, {"as_int": 3}]},
                      "y": {"dtype": 7, "sizes": [{"as_int": 1}, {"as_int": 4}, {"as_int": 6}, {"as_int": 6}]},
                      "z": {"dtype": 7, "sizes": [{"as_int": 1}, {"as_int": 4}, {"as_int": 6}, {"as_int": 6}]},
                      "s": {"dtype": 7, "sizes": [{"as_int": 1}, {"as_int": 6}, {"as_int": 6}]}}}}})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->nodes.size(), 3u);
  const Node& conv = g->nodes[0];
  ASSERT_EQ(conv.args.size(), 7u);
  std::vector<std::string> names;
  for (const auto& a : conv.args) names.push_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"input", "weight", "bias", "stride", "padding", "dilation", "groups"}));
  EXPECT_TRUE(conv.args[2].value.is_none());
  EXPECT_EQ(conv.args[3].value, Value::IntList({1, 1}));
  EXPECT_EQ(conv.args[4].value, Value::IntList({0, 0}));
  EXPECT_EQ(conv.args[5].value, Value::IntList({1, 1}));
  EXPECT_EQ(conv.args[6].value, Value::Int(1));
  const Node& add = g->nodes[1];
  ASSERT_EQ(add.args.size(), 3u);
  EXPECT_EQ(add.args[2].name, "alpha");
  EXPECT_EQ(add.args[2].value, Value::Int(1));
  const Node& sum = g->nodes[2];
  ASSERT_EQ(sum.args.size(), 4u);
  EXPECT_EQ(sum.args[2].value, Value::Bool(false));  // keepdim
  EXPECT_TRUE(sum.args[3].value.is_none());          // dtype
}

TEST(Pt2Decode, EveryArgumentKind) {
  auto g = DecodeText(R"({"schema_version": {"major": 8, "minor": 20}, "graph_module": {"graph": {"nodes": [
    {"target": "torch.ops.my_ns.everything.default", "inputs": [
      {"name": "none", "arg": {"as_none": true}},
      {"name": "t", "arg": {"as_tensor": {"name": "x"}}},
      {"name": "ts", "arg": {"as_tensors": [{"name": "x"}, {"name": "x"}]}},
      {"name": "i", "arg": {"as_int": -3}},
      {"name": "is", "arg": {"as_ints": [1, 2]}},
      {"name": "f", "arg": {"as_float": 0.5}},
      {"name": "finf", "arg": {"as_float": "-Infinity"}},
      {"name": "fs", "arg": {"as_floats": [1.5, 2.0]}},
      {"name": "s", "arg": {"as_string": "mean"}},
      {"name": "ss", "arg": {"as_strings": ["a", "b"]}},
      {"name": "si", "arg": {"as_sym_int": {"as_name": "sym"}}},
      {"name": "sis", "arg": {"as_sym_ints": [{"as_int": 2}, {"as_name": "sym"}]}},
      {"name": "dt", "arg": {"as_scalar_type": 13}},
      {"name": "mf", "arg": {"as_memory_format": 2}},
      {"name": "lay", "arg": {"as_layout": 7}},
      {"name": "dev", "arg": {"as_device": {"type": "cuda", "index": 1}}},
      {"name": "b", "arg": {"as_bool": true}},
      {"name": "bs", "arg": {"as_bools": [true, false]}},
      {"name": "sb", "arg": {"as_sym_bool": {"as_bool": true}}},
      {"name": "sbs", "arg": {"as_sym_bools": [{"as_bool": false}]}},
      {"name": "ots", "arg": {"as_optional_tensors": [{"as_tensor": {"name": "x"}}, {"as_none": true}]}},
      {"name": "ot", "arg": {"as_optional_tensor": {"as_none": true}}},
      {"name": "co", "arg": {"as_custom_obj": {"name": "obj0", "class_fqn": "__torch__.Foo"}}},
      {"name": "op", "arg": {"as_operator": "aten.add.Tensor"}},
      {"name": "sf", "arg": {"as_sym_float": {"as_float": 1.25}}},
      {"name": "sfs", "arg": {"as_sym_floats": [{"as_float": 2.5}]}},
      {"name": "c", "arg": {"as_complex": {"real": 1.0, "imag": -2.0}}},
      {"name": "nt", "arg": {"as_nested_tensors": [[{"name": "x"}], [{"name": "x"}]]}},
      {"name": "il", "arg": {"as_int_lists": [[1, 2], [3]]}},
      {"name": "fl", "arg": {"as_float_lists": [[0.5], [1.5]]}},
      {"name": "sta", "arg": {"as_string_to_argument": {"k": {"as_int": 1}}}},
      {"name": "g", "arg": {"as_graph": {"name": "true_graph_0", "graph": {"nodes": [
         {"target": "torch.ops.aten.neg.default", "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}}],
          "outputs": [{"as_tensor": {"name": "neg"}}]}],
         "tensor_values": {"neg": {"dtype": 7, "sizes": [{"as_int": 4}]}}}}}}],
     "outputs": [{"as_tensor": {"name": "x"}}, {"as_none": true}]}],
    "tensor_values": {"x": {"dtype": 7, "sizes": [{"as_int": 4}]}},
    "sym_int_values": {"sym": {"as_expr": {"expr_str": "s0", "hint": {"as_int": 6}}}}}}})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->nodes.size(), 2u);  // the subgraph's node comes first (visited while decoding the argument)
  EXPECT_EQ(g->nodes[0].op, "aten::neg");
  const Node& n = g->nodes[1];
  EXPECT_EQ(n.op, "my_ns::everything");
  EXPECT_THAT(n.note, HasSubstr("no schema for my_ns::everything.default"));
  std::map<std::string, Value> a;
  for (const auto& arg : n.args) a[arg.name] = arg.value;
  EXPECT_TRUE(a["none"].is_none());
  EXPECT_EQ(a["t"], Value::Tensor(F32({4})));
  EXPECT_EQ(a["ts"].kind, Value::Kind::kTensorList);
  EXPECT_EQ(a["ts"].tensors.size(), 2u);
  EXPECT_EQ(a["i"], Value::Int(-3));
  EXPECT_EQ(a["is"], Value::IntList({1, 2}));
  EXPECT_EQ(a["f"], Value::Float(0.5));
  EXPECT_EQ(a["finf"].f, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(a["fs"].floats, (std::vector<double>{1.5, 2.0}));
  EXPECT_EQ(a["s"], Value::String("mean"));
  EXPECT_EQ(a["ss"].s, "a,b");
  EXPECT_EQ(a["si"].i, 6);
  EXPECT_TRUE(a["si"].symbolic);
  EXPECT_EQ(a["sis"].ints, (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(a["dt"], Value::Dtype(hlo::PrimitiveType::BF16));
  EXPECT_EQ(a["mf"].s, "channels_last");
  EXPECT_EQ(a["lay"].s, "strided");
  EXPECT_EQ(a["dev"].s, "cuda:1");
  EXPECT_EQ(a["b"], Value::Bool(true));
  EXPECT_EQ(a["bs"].bools, (std::vector<bool>{true, false}));
  EXPECT_EQ(a["sb"], Value::Bool(true));
  EXPECT_EQ(a["sbs"].bools, (std::vector<bool>{false}));
  ASSERT_EQ(a["ots"].tensors.size(), 2u);
  EXPECT_TRUE(a["ots"].tensors[0].has_value());
  EXPECT_FALSE(a["ots"].tensors[1].has_value());
  EXPECT_TRUE(a["ot"].is_none());
  EXPECT_EQ(a["co"].s, "__torch__.Foo");
  EXPECT_EQ(a["op"].s, "aten.add.Tensor");
  EXPECT_EQ(a["sf"], Value::Float(1.25));
  EXPECT_EQ(a["sfs"].floats, (std::vector<double>{2.5}));
  EXPECT_EQ(a["c"].c, std::complex<double>(1.0, -2.0));
  EXPECT_EQ(a["nt"].tensors.size(), 2u);
  EXPECT_EQ(a["il"].ints, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(a["fl"].floats, (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(a["sta"].s, "k");
  EXPECT_EQ(a["g"].s, "true_graph_0");
  EXPECT_EQ(n.outputs.size(), 1u);  // the None output is dropped
  EXPECT_FALSE(n.dynamic_shape);
}

TEST(Pt2Decode, SymIntSizes) {
  auto g = DecodeText(R"j({"schema_version": {"major": 8, "minor": 14},
    "range_constraints": {"s0": {"min_val": 2, "max_val": 64}, "s1": {"min_val": 2, "max_val": null}},
    "graph_module": {"graph": {"nodes": [
      {"target": "torch.ops.aten.relu.default", "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "a"}}}],
       "outputs": [{"as_tensor": {"name": "b"}}]},
      {"target": "torch.ops.aten.relu.default", "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "c"}}}],
       "outputs": [{"as_tensor": {"name": "d"}}]},
      {"target": "torch.ops.aten.relu.default", "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "e"}}}],
       "outputs": [{"as_tensor": {"name": "e"}}]}],
    "tensor_values": {
      "a": {"dtype": 7, "sizes": [{"as_expr": {"expr_str": "Symbol('s0', integer=True, positive=True)",
                                                "hint": {"as_int": 8}}}, {"as_int": 3}]},
      "b": {"dtype": 7, "sizes": [{"as_expr": {"expr_str": "s0", "hint": {"as_int": 8}}}, {"as_int": 3}]},
      "c": {"dtype": 7, "sizes": [{"as_expr": {"expr_str": "Symbol('s0', integer=True, positive=True)",
                                                "hint": null}}, {"as_int": 3}]},
      "d": {"dtype": 7, "sizes": [{"as_expr": {"expr_str": "s0", "hint": null}}, {"as_int": 3}]},
      "e": {"dtype": 5, "sizes": [{"as_expr": {"expr_str": "s1", "hint": null}}]}}}}})j");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->nodes.size(), 3u);
  // With a hint: its value, flagged dynamic in the TensorMeta, the node is not dynamic-shape.
  const Value& a = g->nodes[0].args[0].value;
  EXPECT_EQ(a.tensor.sizes, (std::vector<int64_t>{8, 3}));
  EXPECT_EQ(a.tensor.dynamic, (std::vector<bool>{true, false}));
  EXPECT_FALSE(g->nodes[0].dynamic_shape);
  // Without a hint: the upper bound from range_constraints, and the node is marked with the symbol named.
  const Node& n1 = g->nodes[1];
  EXPECT_EQ(n1.args[0].value.tensor.sizes, (std::vector<int64_t>{64, 3}));
  EXPECT_TRUE(n1.args[0].value.tensor.is_dynamic());
  EXPECT_TRUE(n1.dynamic_shape);
  EXPECT_THAT(n1.note, HasSubstr("s0"));
  EXPECT_THAT(n1.note, HasSubstr("no hint"));
  const Node& n2 = g->nodes[2];
  EXPECT_TRUE(n2.dynamic_shape);
  EXPECT_THAT(n2.note, HasSubstr("s1"));
  EXPECT_EQ(n2.args[0].value.tensor.dtype, hlo::PrimitiveType::S64);
}

TEST(Pt2Decode, SchemaOneUnionsWithNulls) {
  auto g = DecodeText(R"({"schema_version": 1, "graph_module": {"graph": {"nodes": [
    {"target": "torch.ops.aten.add.Tensor", "inputs": [
      {"name": "self", "arg": {"as_none": null, "as_tensor": {"name": "x"}, "as_int": null}},
      {"name": "other", "arg": {"as_none": null, "as_tensor": {"name": "x"}, "as_int": null}},
      {"name": "alpha", "arg": {"as_none": null, "as_tensor": null, "as_int": 2}}],
     "outputs": [{"as_none": null, "as_tensor": {"name": "y"}}]},
    {"target": "torch.ops.aten.clamp.default", "inputs": [
      {"name": "self", "arg": {"as_none": null, "as_tensor": {"name": "y"}}},
      {"name": "min", "arg": {"as_none": [], "as_tensor": null}}],
     "outputs": [{"as_none": null, "as_tensor": {"name": "y"}}]}],
    "tensor_values": {"x": {"meta": {"dtype": 6, "sizes": [{"as_int": 5}], "storage_offset": 0}},
                      "y": {"meta": {"dtype": 6, "sizes": [{"as_int": 5}], "storage_offset": 0}}}}}})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[0].args[2].value, Value::Int(2));
  EXPECT_EQ(g->nodes[0].args[0].value.tensor.dtype, hlo::PrimitiveType::F16);
  EXPECT_TRUE(g->nodes[1].args[1].value.is_none());
  EXPECT_TRUE(g->nodes[1].args[2].value.is_none());  // max: default None
}

TEST(Pt2Decode, OpNewerThanTheSchemaTable) {
  auto g = DecodeText(R"({"schema_version": {"major": 8, "minor": 20}, "graph_module": {"graph": {"nodes": [
    {"target": "torch.ops.aten._brand_new_op.default", "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}},
      {"name": "scale", "arg": {"as_float": 2.0}}], "outputs": [{"as_tensor": {"name": "x"}}]},
    {"target": "_operator.mul", "inputs": [{"name": "", "arg": {"as_int": 2}}], "outputs": [{"as_int": 4}]}],
    "tensor_values": {"x": {"dtype": 7, "sizes": []}}}}})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->nodes.size(), 1u);  // Python-number arithmetic (_operator.mul) is not an aten op
  const Node& n = g->nodes[0];
  EXPECT_EQ(n.qualified_name(), "aten::_brand_new_op");
  ASSERT_EQ(n.args.size(), 2u);
  EXPECT_EQ(n.args[1].name, "scale");
  EXPECT_THAT(n.note, HasSubstr("no schema for aten::_brand_new_op.default"));
}

// --- Fixtures from tests/tools/write_pt2.py -----------------------------------------------------------------

TEST(Pt2LoaderFixtures, LinearLayoutMatchesRealArchive) {
  // Same container shape as the real corpus archive: root folder, STORED, 0x0808, 64-byte aligned data.
  auto zip = ZipReader::Open(kFixtures + "/linear.pt2");
  ASSERT_TRUE(zip.ok()) << zip.status().message();
  std::set<std::string> names;
  for (const auto& e : (*zip)->entries()) {
    names.insert(e.name);
    EXPECT_EQ(e.method, 0) << e.name;
  }
  for (const char* want :
       {"linear/models/model.json", "linear/archive_format", "linear/archive_version", "linear/.data/version",
        "linear/byteorder", "linear/.data/serialization_id", "linear/data/weights/model_weights_config.json",
        "linear/data/constants/model_constants_config.json"})
    EXPECT_TRUE(names.count(want)) << want;
  std::string bytes = ReadFile(kFixtures + "/linear.pt2");
  size_t pos = 0;
  int headers = 0;
  while ((pos = bytes.find(std::string("PK\x03\x04", 4), pos)) != std::string::npos) {
    uint16_t flags = static_cast<uint8_t>(bytes[pos + 6]) | static_cast<uint8_t>(bytes[pos + 7]) << 8;
    uint16_t name_len = static_cast<uint8_t>(bytes[pos + 26]) | static_cast<uint8_t>(bytes[pos + 27]) << 8;
    uint16_t extra_len = static_cast<uint8_t>(bytes[pos + 28]) | static_cast<uint8_t>(bytes[pos + 29]) << 8;
    EXPECT_EQ(flags, 0x0808);
    EXPECT_EQ(bytes.substr(pos + 30 + name_len, 2), "FB");
    EXPECT_EQ((pos + 30 + name_len + extra_len) % 64, 0u);
    ++headers;
    pos += 4;
  }
  EXPECT_EQ(headers, static_cast<int>(names.size()));
}

// The writer's JSON has the real file's structure: the same keys at every level that both have.
TEST(Pt2LoaderFixtures, ProgramJsonKeysMatchRealArchive) {
  const std::string real_path = kCorpus + "/executorch_linear.pt2";
  SKIP_IF_MISSING(real_path);
  auto real_zip = ZipReader::Open(real_path);
  auto ours_zip = ZipReader::Open(kFixtures + "/linear.pt2");
  ASSERT_TRUE(real_zip.ok() && ours_zip.ok());
  auto real_text = (*real_zip)->Read(*(*real_zip)->Find("linear_3/models/model.json"));
  auto ours_text = (*ours_zip)->Read(*(*ours_zip)->Find("linear/models/model.json"));
  ASSERT_TRUE(real_text.ok() && ours_text.ok());
  auto real = nlohmann::json::parse(*real_text), ours = nlohmann::json::parse(*ours_text);
  auto keys = [](const nlohmann::json& j) {
    std::set<std::string> k;
    for (auto it = j.begin(); it != j.end(); ++it) k.insert(it.key());
    return k;
  };
  EXPECT_EQ(keys(ours), keys(real));
  EXPECT_EQ(keys(ours["graph_module"]), keys(real["graph_module"]));
  EXPECT_EQ(keys(ours["graph_module"]["graph"]), keys(real["graph_module"]["graph"]));
  EXPECT_EQ(keys(ours["graph_module"]["signature"]), keys(real["graph_module"]["signature"]));
  EXPECT_EQ(keys(ours["graph_module"]["graph"]["nodes"][0]), keys(real["graph_module"]["graph"]["nodes"][0]));
  EXPECT_EQ(keys(ours["graph_module"]["graph"]["nodes"][0]["inputs"][0]),
            keys(real["graph_module"]["graph"]["nodes"][0]["inputs"][0]));
  EXPECT_EQ(keys(ours["graph_module"]["graph"]["tensor_values"]["x"]),
            keys(real["graph_module"]["graph"]["tensor_values"]["x"]));
  EXPECT_EQ(ours["schema_version"], real["schema_version"]);
  EXPECT_EQ(ours["opset_version"], real["opset_version"]);
  // Container records other than the payload are the same set (sample inputs are not written).
  auto records = [](const ZipReader& z) {
    std::set<std::string> r;
    for (const auto& e : z.entries()) {
      std::string rel = e.name.substr(e.name.find('/') + 1);
      if (!rel.starts_with("data/weights/weight_") && !rel.starts_with("data/sample_inputs/")) r.insert(rel);
    }
    return r;
  };
  EXPECT_EQ(records(**ours_zip), records(**real_zip));
}

TEST(Pt2LoaderFixtures, LinearAndZip64) {
  for (const char* name : {"linear.pt2", "linear_zip64.pt2"}) {
    auto g = LoadPt2(kFixtures + "/" + name);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->torch_version.substr(0, 4), "1.13");
    std::vector<std::string> ops;
    for (const auto& n : g->nodes) ops.push_back(n.qualified_name());
    // torch 1.13's make_fx decomposes linear on a 1-d input.
    EXPECT_EQ(ops, (std::vector<std::string>{"aten::t", "aten::unsqueeze", "aten::mm", "aten::squeeze_.dim",
                                             "aten::add.Tensor"}))
        << name;
    EXPECT_EQ(g->nodes[2].outputs[0], Value::Tensor(F32({1, 3})));
    EXPECT_EQ(g->nodes[4].args[2].name, "alpha");  // omitted in the file, filled from the schema
  }
}

TEST(Pt2LoaderFixtures, DefaultsAndPlaces) {
  auto g = LoadPt2(kFixtures + "/defaults.pt2");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Node* pool = FindNode(*g, "aten::max_pool2d_with_indices");
  ASSERT_NE(pool, nullptr);
  ASSERT_EQ(pool->args.size(), 6u);
  EXPECT_EQ(pool->args[1].value, Value::IntList({2, 2}));
  EXPECT_EQ(pool->args[2].value, Value::IntList({}));  // stride=[] default
  EXPECT_EQ(pool->args[3].value, Value::IntList({0, 0}));
  EXPECT_EQ(pool->args[4].value, Value::IntList({1, 1}));
  EXPECT_EQ(pool->args[5].value, Value::Bool(false));
  EXPECT_EQ(pool->outputs.size(), 2u);
  EXPECT_EQ(pool->loc.file, "tests/tools/write_pt2.py");  // the model's forward, not torch/nn/functional.py
  const Node* conv = FindNode(*g, "aten::convolution");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->module_path, "conv");
  EXPECT_EQ(conv->args.size(), 9u);
}

TEST(Pt2LoaderFixtures, TwoPrograms) {
  auto g = LoadPt2(kFixtures + "/two_programs.pt2");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->programs, (std::vector<std::string>{"linear", "mlp"}));
  std::set<std::string> progs;
  for (const auto& n : g->nodes) progs.insert(n.program);
  EXPECT_EQ(progs, (std::set<std::string>{"linear", "mlp"}));
  EXPECT_NE(FindNode(*g, "aten::gelu", "mlp"), nullptr);
  EXPECT_EQ(FindNode(*g, "aten::gelu", "linear"), nullptr);
}

// resnet18: the .pt2 written from make_fx of resnet18's forward against the capture of
// samples/scripts/resnet18_train.py (forward phase only).
TEST(Pt2LoaderFixtures, Resnet18MatchesCaptureForward) {
  auto g = LoadPt2(kFixtures + "/resnet18.pt2");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::string trace_path = std::string(OPPROBE_SOURCE_DIR) + "/samples/traces/resnet18_train.json";
  if (!fs::exists(trace_path)) GTEST_SKIP() << trace_path << " is absent";
  auto trace = LoadTrace(trace_path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();

  std::map<std::string, int64_t> pt2_ops, capture_ops, capture_module_ops;
  for (const auto& n : g->nodes) pt2_ops[n.qualified_name()] += n.count;
  for (const auto& n : trace->nodes) {
    if (n.phase != "forward") continue;
    capture_ops[n.qualified_name()] += n.count;
    if (!n.module_path.empty()) capture_module_ops[n.qualified_name()] += n.count;
  }
  // Every op of the program is an op the capture saw in the forward phase.
  for (const auto& [op, count] : pt2_ops) EXPECT_TRUE(capture_ops.count(op)) << op << " is not in the capture";
  // Every op the capture attributes to a submodule is in the program, as many times.
  for (const auto& [op, count] : capture_module_ops) {
    EXPECT_TRUE(pt2_ops.count(op)) << op << " missing from the .pt2";
    EXPECT_GE(pt2_ops[op], count) << op;
  }
  for (const char* op : {"aten::convolution", "aten::native_batch_norm", "aten::relu_", "aten::addmm"})
    EXPECT_EQ(pt2_ops[op], capture_ops[op]) << op;
  // What the capture's forward phase has beyond the model's forward: weight initialisation in the
  // constructor, the random batch, and the loss; none of it is part of the model program.
  const std::set<std::string> outside_the_model = {
      "aten::uniform_",    "aten::normal_",      "aten::fill_.Scalar",    "aten::zero_",
      "aten::zeros",       "aten::ones",         "aten::lift_fresh",      "aten::rand",
      "aten::randint.low", "aten::_log_softmax", "aten::nll_loss_forward"};
  for (const auto& [op, count] : capture_ops)
    if (!pt2_ops.count(op)) { EXPECT_TRUE(outside_the_model.count(op)) << op << " unexplained difference"; }
  const Node* conv1 = nullptr;
  for (const auto& n : g->nodes)
    if (n.op == "aten::convolution" && n.module_path == "conv1") conv1 = &n;
  ASSERT_NE(conv1, nullptr);
  EXPECT_EQ(conv1->args[0].value, Value::Tensor(F32({2, 3, 64, 64})));
  EXPECT_EQ(conv1->args[3].value, Value::IntList({2, 2}));
  EXPECT_THAT(conv1->loc.file, HasSubstr("torchvision/models/resnet.py"));
}

// Larger models (written by tests/tools/write_pt2.py --model resnet50|vit_b_16): every node decodes with
// every schema argument, a source line and no note.
TEST(Pt2LoaderFixtures, LargeModels) {
  struct Want {
    const char* file;
    size_t nodes;
    std::map<std::string, int64_t> ops;
  };
  const std::vector<Want> wants = {
      {"resnet50.pt2", 331, {{"aten::convolution", 53}, {"aten::native_batch_norm", 53}, {"aten::addmm", 1}}},
      {"vit_b_16.pt2",
       503,
       {{"aten::bmm", 24},
        {"aten::_softmax", 12},
        {"aten::native_layer_norm", 25},
        {"aten::split.Tensor", 12},
        {"aten::gelu", 12}}},
  };
  for (const auto& want : wants) {
    auto g = LoadPt2(kFixtures + "/" + want.file);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->nodes.size(), want.nodes) << want.file;
    std::map<std::string, int64_t> ops;
    for (const auto& n : g->nodes) {
      ops[n.qualified_name()] += n.count;
      EXPECT_TRUE(n.note.empty()) << want.file << " " << n.qualified_name() << ": " << n.note;
      EXPECT_FALSE(n.loc.empty()) << want.file << " " << n.qualified_name();
      const OpSchema* schema = FindAtenSchema(n.op.substr(6), n.overload);
      ASSERT_NE(schema, nullptr) << n.qualified_name();
      EXPECT_EQ(n.args.size(), schema->args.size()) << n.qualified_name();
    }
    for (const auto& [op, count] : want.ops) EXPECT_EQ(ops[op], count) << want.file << " " << op;
  }
  auto vit = LoadPt2(kFixtures + "/vit_b_16.pt2");
  ASSERT_TRUE(vit.ok());
  const Node* split = FindNode(*vit, "aten::split");
  ASSERT_NE(split, nullptr);
  ASSERT_EQ(split->outputs.size(), 1u);
  EXPECT_EQ(split->outputs[0].kind, Value::Kind::kTensorList);  // one Tensor[] output (as_tensors)
  EXPECT_EQ(split->outputs[0].tensors.size(), 3u);
  const Node* gelu = FindNode(*vit, "aten::gelu");
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->module_path, "encoder.layers.encoder_layer_0.mlp.1");
  EXPECT_EQ(gelu->args[1].name, "approximate");
  EXPECT_EQ(gelu->args[1].value, Value::String("none"));  // filled from the schema default
}

// Bounded cost on a multi-gigabyte archive: tests/tools/write_pt2.py (Debian's PyTorch) writes a .pt2 whose extra
// all-zero weight record of 5 GiB is a hole in a sparse file (a few KiB on disk, zip64 offsets past 4 GiB), and
// loading it must not grow the peak RSS anywhere near the weights' size.
class Pt2LoaderBig : public ::opprobe::testing::TempDirTest {};

TEST_F(Pt2LoaderBig, MemoryIndependentOfWeights) {
  const std::string path = Path("big.pt2");
  auto written =
      ::opprobe::testing::RunProgram({"/usr/bin/python3", std::string(OPPROBE_SOURCE_DIR) + "/tests/tools/write_pt2.py",
                                      "--model", "linear", "--big-weight-gib", "5", "--out", path});
  ASSERT_EQ(written.exit_code, 0) << written.out << written.err;
  ASSERT_GT(fs::file_size(path), 5ull << 30);
  struct rusage before {};
  getrusage(RUSAGE_SELF, &before);
  auto g = LoadPt2(path);
  ASSERT_TRUE(g.ok()) << g.status().message();
  struct rusage after {};
  getrusage(RUSAGE_SELF, &after);
  const long grown_mib = (after.ru_maxrss - before.ru_maxrss) / 1024;
  std::printf("loaded %zu nodes from %s (%llu bytes); peak RSS grew by %ld MiB\n", g->nodes.size(), path.c_str(),
              static_cast<unsigned long long>(fs::file_size(path)), grown_mib);
  EXPECT_FALSE(g->nodes.empty());
  EXPECT_LT(grown_mib, 256);
}

// --- Bad input -----------------------------------------------------------------------------------------

TEST(Pt2LoaderBadInput, MissingFile) {
  Status s = LoadError(TempPath("does_not_exist.pt2"));
  EXPECT_EQ(s.message(), TempPath("does_not_exist.pt2") + ": no such file");
}

TEST(Pt2LoaderBadInput, NotAZip) {
  std::string path = TempPath("not_a_zip.pt2");
  WriteFile(path, "this is plain text, not an archive\n");
  EXPECT_THAT(LoadError(path).message(), HasSubstr("not a zip archive"));
  WriteFile(path, "");
  EXPECT_THAT(LoadError(path).message(), HasSubstr("not_a_zip.pt2"));
  WriteFile(path, "PYTORCH1 old format");
  EXPECT_THAT(LoadError(path).message(), HasSubstr("PYTORCH1"));
}

TEST(Pt2LoaderBadInput, TruncatedArchive) {
  std::string bytes = ReadFile(kFixtures + "/linear.pt2");
  ASSERT_FALSE(bytes.empty());
  std::string path = TempPath("truncated.pt2");
  WriteFile(path, bytes.substr(0, bytes.size() / 2));
  LoadError(path);
}

TEST(Pt2LoaderBadInput, ZipWithoutProgram) {
  std::string path = TempPath("no_program.pt2");
  WriteFile(path, StoredZip({{"readme.txt", "hello", {}, {}}}));
  EXPECT_THAT(LoadError(path).message(), HasSubstr("without a program"));
  WriteFile(path, StoredZip({{"m/archive_format", "pt2", {}, {}}, {"m/data/weights/weight_0", "", {}, {}}}));
  EXPECT_THAT(LoadError(path).message(), HasSubstr("m/models/"));
  WriteFile(path, StoredZip({{"ETRECORD_V0", "", {}, {}}, {"debug_handle_map", "{}", {}, {}}}));
  EXPECT_THAT(LoadError(path).message(), HasSubstr("ETRecord without a program"));
}

TEST(Pt2LoaderBadInput, UnknownSchemaMajor) {
  std::string path = TempPath("major.pt2");
  WriteFile(path,
            StoredZip({{"serialized_exported_program.json", MinimalProgram(R"({"major": 99, "minor": 0})"), {}, {}}}));
  Status s = LoadError(path);
  EXPECT_THAT(s.message(), HasSubstr("serialized_exported_program.json"));
  EXPECT_THAT(s.message(), HasSubstr("$.schema_version.major"));
  EXPECT_THAT(s.message(), HasSubstr("unknown schema major version 99"));
  // And a valid one loads, as a legacy (torch 2.1-2.7) zip.
  WriteFile(path, StoredZip({{"serialized_exported_program.json", MinimalProgram(), {}, {}}}));
  auto g = LoadPt2(path);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->programs, std::vector<std::string>{"model"});
  EXPECT_EQ(g->nodes.at(0).qualified_name(), "aten::mul.Tensor");
}

TEST(Pt2LoaderBadInput, MissingRequiredFields) {
  struct Case {
    std::string json, want;
  };
  std::string p = MinimalProgram();
  auto without = [&](const std::string& cut) {
    std::string s = p;
    auto pos = s.find(cut);
    EXPECT_NE(pos, std::string::npos) << cut;
    return s.erase(pos, cut.size());
  };
  std::vector<Case> cases = {
      {without(R"("target": "torch.ops.aten.mul.Tensor",)"),
       "$.graph_module.graph.nodes[0]: missing required field 'target'"},
      {R"({"schema_version": {"major": 8, "minor": 1}})", "$: missing required field 'graph_module'"},
      {R"({"graph_module": {}})", "$: missing required field 'schema_version'"},
      {without(R"("dtype": 7, )"), "missing required field 'dtype'"},
      {[&] {
         std::string s = p;
         const std::string from = R"({"name": "x"}}, "kind": 1})";
         return s.replace(s.find(from), from.size(), R"({"name": "nope"}}, "kind": 1})");
       }(),
       "$.graph_module.graph.nodes[0].inputs[0].arg.as_tensor: tensor 'nope' is not in tensor_values"},
      {"{\"schema_version\": ", "invalid JSON"},
      {"[1, 2]", "$: expected an ExportedProgram object"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string path = TempPath("fields.pt2");
    WriteFile(path, StoredZip({{"m/archive_format", "pt2", {}, {}}, {"m/models/model.json", cases[i].json, {}, {}}}));
    Status s = LoadError(path);
    EXPECT_THAT(s.message(), HasSubstr("entry 'm/models/model.json'")) << i;
    EXPECT_THAT(s.message(), HasSubstr(cases[i].want)) << i;
  }
}

TEST(Pt2LoaderBadInput, UnsafeEntryNames) {
  for (const std::string name : {"../evil.json", "m/../../etc/passwd", "/etc/passwd", "C:\\x.json", "a\\..\\b"}) {
    std::string path = TempPath("names.pt2");
    WriteFile(path, StoredZip({{"serialized_exported_program.json", MinimalProgram(), {}, {}}, {name, "x", {}, {}}}));
    Status s = LoadError(path);
    EXPECT_THAT(s.message(), HasSubstr("unsafe entry name")) << name;
    EXPECT_THAT(s.message(), HasSubstr(name)) << name;
  }
}

TEST(Pt2LoaderBadInput, DeclaredSizesDoNotMatch) {
  std::string path = TempPath("sizes.pt2");
  std::string prog = MinimalProgram();
  // Stored entry whose compressed and uncompressed sizes differ.
  WriteFile(path, StoredZip({{"serialized_exported_program.json", prog, static_cast<uint32_t>(prog.size()),
                              static_cast<uint32_t>(prog.size() - 10)}}));
  Status s = LoadError(path);
  EXPECT_THAT(s.message(), HasSubstr("serialized_exported_program.json"));
  // Stored entry that claims more bytes than it holds (the read runs into the next header: CRC error).
  WriteFile(path, StoredZip({{"serialized_exported_program.json", prog, static_cast<uint32_t>(prog.size() + 40),
                              static_cast<uint32_t>(prog.size() + 40)}}));
  s = LoadError(path);
  EXPECT_THAT(s.message(), HasSubstr("serialized_exported_program.json"));
  // Deflated entry whose central directory claims a larger uncompressed size than the stream holds.
  DeflatedZip(path, "serialized_exported_program.json", prog);
  std::string bytes = ReadFile(path);
  size_t cd = bytes.find(std::string("PK\x01\x02", 4));
  ASSERT_NE(cd, std::string::npos);
  uint32_t bigger = static_cast<uint32_t>(prog.size() + 100);
  for (int i = 0; i < 4; ++i) bytes[cd + 24 + i] = static_cast<char>((bigger >> (8 * i)) & 0xFF);
  WriteFile(path, bytes);
  s = LoadError(path);
  EXPECT_THAT(s.message(), HasSubstr("serialized_exported_program.json"));
}

TEST(Pt2LoaderBadInput, ZipBomb) {
  std::string path = TempPath("bomb.pt2");
  // 8 MiB of spaces deflates ~1000:1: over the 500:1 ratio cap.
  DeflatedZip(path, "serialized_exported_program.json", std::string(8 << 20, ' '));
  Status s = LoadError(path);
  EXPECT_THAT(s.message(), HasSubstr("compression ratio"));
  EXPECT_THAT(s.message(), HasSubstr("serialized_exported_program.json"));
  // A declared size over the 512 MiB cap is refused before anything is decompressed.
  DeflatedZip(path, "serialized_exported_program.json", MinimalProgram());
  std::string bytes = ReadFile(path);
  size_t cd = bytes.find(std::string("PK\x01\x02", 4));
  ASSERT_NE(cd, std::string::npos);
  uint32_t huge = 0xF0000000u;
  for (int i = 0; i < 4; ++i) bytes[cd + 24 + i] = static_cast<char>((huge >> (8 * i)) & 0xFF);
  WriteFile(path, bytes);
  s = LoadError(path);
  EXPECT_THAT(s.message(), HasSubstr("exceeds the"));
}

TEST(Pt2LoaderBadInput, DeeplyNestedJsonDoesNotCrash) {
  std::string path = TempPath("deep.pt2");
  std::string deep = R"({"schema_version": {"major": 8, "minor": 1}, "graph_module": )" + std::string(200000, '[') +
                     std::string(200000, ']') + "}";
  WriteFile(path, StoredZip({{"serialized_exported_program.json", deep, {}, {}}}));
  EXPECT_THAT(LoadError(path).message(), HasSubstr("serialized_exported_program.json"));
}

TEST(Pt2LoaderBadInput, DeeplyNestedArgumentsDoNotCrash) {
  std::string arg = R"({"as_int": 1})";
  std::string open, close;
  for (int i = 0; i < 100000; ++i) open += R"({"as_string_to_argument": {"k": )", close += "}}";
  std::string prog = MinimalProgram();
  const std::string from = R"({"as_tensor": {"name": "x"}}, "kind": 1})";
  prog.replace(prog.find(from), from.size(), open + arg + close + "}");
  std::string path = TempPath("deep_args.pt2");
  WriteFile(path, StoredZip({{"serialized_exported_program.json", prog, {}, {}}}));
  EXPECT_THAT(LoadError(path).message(), HasSubstr("nested deeper than"));
}

TEST(Pt2LoaderBadInput, BadArchiveFormat) {
  std::string path = TempPath("format.pt2");
  WriteFile(path, StoredZip({{"m/archive_format", "zip", {}, {}}, {"m/models/model.json", MinimalProgram(), {}, {}}}));
  EXPECT_THAT(LoadError(path).message(), HasSubstr("m/archive_format"));
}

TEST(Pt2LoaderBadInput, WeightsAreNeverRead) {
  // A 64 MiB weight record (over no cap, but never touched) next to a small program: loads, and a damaged
  // weight (bad CRC) does not matter because it is never read.
  std::string path = TempPath("weights.pt2");
  RawEntry weight{"m/data/weights/weight_0", std::string(1 << 20, 'w'), {}, {}};
  std::string zip =
      StoredZip({{"m/archive_format", "pt2", {}, {}}, weight, {"m/models/model.json", MinimalProgram(), {}, {}}});
  size_t data = zip.find(std::string(1 << 10, 'w'));
  ASSERT_NE(data, std::string::npos);
  zip[data + 5] = 'X';  // CRC of the weight no longer matches
  WriteFile(path, zip);
  auto g = LoadPt2(path);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->nodes.size(), 1u);
}

}  // namespace
}  // namespace opprobe::analyzer
