// The table of input formats (analyzer/pipeline/pipeline.h InputFormats): each format has one row with its name, its
// level and the one loader of that level; each is told from the first bytes of a file alone, by one sniff only (a zip
// is a .pt2 whatever it holds, a JSON file of any size is told from its first kInputSniffBytes bytes); anything else
// is one error line.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "analyzer/pipeline/pipeline.h"
#include "opprobe_version.h"
#include "testing/temp_dir_test.h"

namespace opprobe::analyzer {
namespace {

namespace fs = std::filesystem;

class InputFormatsTest : public testing::TempDirTest {
 protected:
  std::string Write(const std::string& name, const std::string& bytes) {
    std::ofstream(Path(name), std::ios::binary) << bytes;
    return Path(name);
  }
};

Expected<InputKind> Sniff(std::string_view path, std::string_view bytes) { return SniffInput({path, false, bytes}); }

std::string Source(const std::string& relative) { return std::string(OPPROBE_SOURCE_DIR) + "/" + relative; }

TEST_F(InputFormatsTest, EveryKindHasOneRowWithItsLevelAndTheLoaderOfThatLevel) {
  const std::pair<InputKind, InputLevel> kinds[] = {{InputKind::kTrace, InputLevel::kAten},
                                                    {InputKind::kPt2, InputLevel::kAten},
                                                    {InputKind::kHlo, InputLevel::kHlo},
                                                    {InputKind::kStableHlo, InputLevel::kHlo}};
  EXPECT_EQ(InputFormats().size(), std::size(kinds));
  std::set<std::string_view> names;
  for (const auto& [kind, level] : kinds) {
    const InputFormat& f = FormatOf(kind);
    EXPECT_EQ(f.kind, kind);
    EXPECT_EQ(f.level, level) << f.name;
    EXPECT_EQ(InputKindName(kind), f.name);
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_NE(f.sniff, nullptr) << f.name;
    EXPECT_FALSE(f.label.empty() || f.expected.empty()) << f.name;
    EXPECT_EQ(f.load_graph != nullptr, level == InputLevel::kAten) << f.name;
    EXPECT_EQ(f.load_modules != nullptr, level == InputLevel::kHlo) << f.name;
  }
  EXPECT_EQ(names, (std::set<std::string_view>{"trace", "pt2", "hlo", "stablehlo"}));
}

TEST_F(InputFormatsTest, EachFormatIsToldFromItsFirstBytes) {
  struct Case {
    std::string path, bytes;
    InputKind kind;
  };
  // A torch_xla dump (XLA_SAVE_TENSORS_FILE) writes the frames of the sync before its graph.
  const std::string frames = "[ScheduleSyncTensorsGraph]\nTensorsGraphInfo:\n" + std::string(20000, ' ') + "\n";
  const Case cases[] = {
      {"trace.json", R"({"format": "opprobe-trace", "version": 1, "calls": [{"op": "aten::mu)", InputKind::kTrace},
      {"t", "\n  {\n  \"version\": 1, \"format\"\t:\n \"opprobe-trace\"", InputKind::kTrace},
      {"sorted.json", R"({"calls": [{"args": [], "count": 1, "op": "aten::add.Tensor"}, )", InputKind::kTrace},
      {"model.pt2", std::string("PK\x03\x04\x14\x00\x00\x00", 8) + "archive/", InputKind::kPt2},
      {"program.json", R"({"graph_module": {"graph": {"inputs": [)", InputKind::kPt2},
      // An ExportedProgram quoting the marker in a string is not a trace: the quotes are escaped there.
      {"program.json", R"({"graph_module": {"meta": "{\"format\": \"opprobe-trace\"}")", InputKind::kPt2},
      {"m.txt", "module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n", InputKind::kStableHlo},
      {"m.mlir", "// anything\n", InputKind::kStableHlo},
      {"m.bin", std::string("ML\xEFR\x00\x01", 6), InputKind::kStableHlo},
      {"m.hlo", "module @jit_f {\n", InputKind::kStableHlo},  // JAX's MLIR text saved as .hlo
      {"m.hlo", "HloModule m, entry_computation_layout={()->f32[]}\n", InputKind::kHlo},
      // A zip or a JSON object is a .pt2 or a trace, whatever its name.
      {"m.hlo", std::string("PK\x03\x04", 4), InputKind::kPt2},
      {"m.mlir", R"({"format": "opprobe-trace"})", InputKind::kTrace},
      {"m.txt", "HloModule m\n\nENTRY e {\n", InputKind::kHlo},
      {"dump.txt", frames + "## BEGIN_GRAPH\nHloModule SyncTensorsGraph.4\n", InputKind::kHlo},
      {"m.hlo.pb", std::string("\x0a\x01m\x12\x00", 5), InputKind::kHlo},
  };
  for (const Case& c : cases) {
    auto kind = Sniff(c.path, c.bytes);
    ASSERT_TRUE(kind.ok()) << c.path << ": " << kind.status().message();
    EXPECT_EQ(*kind, c.kind) << c.path << ": " << c.bytes.substr(0, 80);
    // One sniff alone accepts it, so the order they are tried in decides nothing.
    for (const InputFormat& f : InputFormats())
      EXPECT_EQ(f.sniff({c.path, false, c.bytes}), f.kind == c.kind) << f.name << " on " << c.path;
  }
  for (const InputFormat& f : InputFormats())  // any folder is a folder of HLO dumps, whatever its name
    EXPECT_EQ(f.sniff({"dumps.mlir", true, ""}), f.kind == InputKind::kHlo) << f.name;

  // The repository's own files, through DetectInput.
  const std::pair<std::string, InputKind> files[] = {
      {Source("samples/traces/supported.json"), InputKind::kTrace},
      {Source("tests/fixtures/pt2/linear.pt2"), InputKind::kPt2},
      {Source("tests/fixtures/hlo/while_with_constants.hlo"), InputKind::kHlo},
      {Source("tests/fixtures/stablehlo/jax/dots.mlir"), InputKind::kStableHlo},
      {Source("tests/fixtures/hlo"), InputKind::kHlo},
  };
  for (const auto& [path, kind] : files) {
    auto in = DetectInput(path);
    ASSERT_TRUE(in.ok()) << in.status().message();
    EXPECT_EQ(in->kind, kind) << path;
  }
}

// A .pt2 is a zip archive; what its entries say (here the trace's own marker, stored uncompressed so that it is in the
// file's bytes) never makes it a trace.
TEST_F(InputFormatsTest, AZipHoldingTheTraceMarkerIsAPt2) {
  const std::string path = Path("model.pt2");
  const std::string text = R"({"format": "opprobe-trace", "version": 1, "calls": []})";
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr);
  zip_source_t* src = zip_source_buffer(z, text.data(), text.size(), 0);
  zip_int64_t idx = zip_file_add(z, "opprobe-trace.json", src, ZIP_FL_ENC_UTF_8);
  ASSERT_GE(idx, 0);
  zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0);
  ASSERT_EQ(zip_close(z), 0);
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_NE(bytes.find("\"opprobe-trace\""), std::string::npos);
  auto in = DetectInput(path);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in->kind, InputKind::kPt2);
}

// A JSON file is told from its first kInputSniffBytes bytes, whatever its size: through a FIFO whose writer would
// give 64 MiB, DetectInput reads the first bytes and closes it, and the writer's next writes fail (EPIPE).
TEST_F(InputFormatsTest, AHugeJsonIsToldWithoutReadingItWhole) {
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &previous);
  constexpr size_t kTotal = size_t{64} << 20;
  for (const auto& [start, kind] :
       {std::pair<std::string, InputKind>{R"({"graph_module": {"graph": {"nodes": [)", InputKind::kPt2},
        {R"({"format": "opprobe-trace", "version": 1, "calls": [)", InputKind::kTrace}}) {
    const std::string path = Path("huge.json");
    fs::remove(path);
    ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
    std::atomic<size_t> written{0};
    std::thread writer([&, start = start] {
      int fd = -1;
      // Non-blocking until a reader opens it (ENXIO before), so that a reader that never comes cannot hang the test.
      for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
           fd < 0 && std::chrono::steady_clock::now() < deadline;
           std::this_thread::sleep_for(std::chrono::milliseconds(1)))
        fd = open(path.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd < 0) return;
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      std::string more;  // 64 KiB of array elements, written after `start` until kTotal or the reader is gone
      while (more.size() < (size_t{1} << 16)) more += R"({"name": "add", "target": "torch.ops.aten.add.Tensor"}, )";
      for (std::string_view chunk = start; written < kTotal; chunk = more) {
        ssize_t n = write(fd, chunk.data(), chunk.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // EPIPE: the reader is gone
        written += static_cast<size_t>(n);
      }
      close(fd);
    });
    auto in = DetectInput(path);
    writer.join();
    ASSERT_TRUE(in.ok()) << in.status().message();
    EXPECT_EQ(in->kind, kind) << start;
    EXPECT_LT(written.load(), kTotal) << "DetectInput read the whole FIFO";
  }
  sigaction(SIGPIPE, &previous, nullptr);
}

// The same for a regular file larger than any input may be read whole (a sparse file: no disk used).
TEST_F(InputFormatsTest, AJsonFileLargerThanTheReadCapIsStillTold) {
  const std::string path = Write("big.json", R"({"graph_module": {"graph": {"nodes": [)");
  fs::resize_file(path, (uintmax_t{3} << 30));
  auto in = DetectInput(path);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in->kind, InputKind::kPt2);
}

TEST_F(InputFormatsTest, AnUnknownFormatIsOneErrorLineNamingEveryFormat) {
  for (const std::string& bytes : {std::string("just some notes\n"), std::string(),
                                   std::string("\x7f"
                                               "ELF",
                                               4)}) {
    const std::string path = Write("notes.bin", bytes);
    auto in = DetectInput(path);
    ASSERT_FALSE(in.ok());
    const std::string& m = in.status().message();
    EXPECT_EQ(m,
              path +
                  ": not a recognised input (expected an opprobe trace .json, a torch.export .pt2 archive, an "
                  "ExecuTorch ETRecord, HLO text, an .hlo.pb proto, a folder of HLO dumps, or StableHLO .mlir text)");
    EXPECT_EQ(m.find('\n'), std::string::npos);
    // Built from the table: a fifth format's files join the list.
    for (const InputFormat& f : InputFormats())
      for (size_t at = 0, comma; at != std::string_view::npos;
           at = comma == std::string_view::npos ? comma : comma + 2) {
        comma = f.expected.find(", ", at);
        EXPECT_NE(m.find(f.expected.substr(at, comma == std::string_view::npos ? comma : comma - at)),
                  std::string::npos)
            << f.name;
      }
  }
  auto missing = DetectInput(Path("missing.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), Path("missing.json") + ": no such file or directory");
}

// Each input goes to its own format's loader, and the levels do not mix (the messages name the format).
TEST_F(InputFormatsTest, InputsOfTheTwoLevelsDoNotMix) {
  const std::string trace = Source("samples/traces/supported.json");
  for (const auto& [path, label] :
       {std::pair<std::string, std::string>{Source("tests/fixtures/hlo/while_with_constants.hlo"), "HLO"},
        {Source("tests/fixtures/stablehlo/jax/dots.mlir"), "StableHLO"}}) {
    auto g = LoadGraph(std::vector<std::string>{trace, path});
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().message(), path + ": " + label + " input cannot be mixed with aten inputs");
  }
  auto g = LoadGraph(std::vector<std::string>{trace, Source("tests/fixtures/pt2/linear.pt2")});
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->input_kind, "mixed");
  EXPECT_FALSE(g->nodes.empty());
}

}  // namespace
}  // namespace opprobe::analyzer
