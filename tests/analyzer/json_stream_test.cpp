// The streaming JSON reader (analyzer/loaders/json_stream.h): it accepts exactly what nlohmann::json accepts and reads
// the same values (checked on hand-picked cases and on thousands of corrupted traces), reports the place of a syntax
// error, and reads a file in pieces of any size with the same results.
#include "analyzer/loaders/json_stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "opprobe_version.h"

namespace opprobe::analyzer::json {
namespace {

using nlohmann::json;  // NOLINT: the reference implementation
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Src(const std::string& rel) { return std::string(OPPROBE_SOURCE_DIR) + "/" + rel; }

// A scanned value as nlohmann::json, with nlohmann's number types (a repeated key keeps the last value, as parse does).
json ToJson(const Ref& r) {
  switch (r.type()) {
    case Type::kNull: return nullptr;
    case Type::kFalse: return false;
    case Type::kTrue: return true;
    case Type::kInt: return json(static_cast<json::number_integer_t>(r.int64()));
    case Type::kUint: return json(static_cast<json::number_unsigned_t>(r.uint64()));
    case Type::kFloat: return json(static_cast<json::number_float_t>(r.number()));
    case Type::kString: return std::string(r.str());
    case Type::kArray: {
      json a = json::array();
      for (Ref e : r) a.push_back(ToJson(e));
      return a;
    }
    case Type::kObject: {
      json o = json::object();
      for (auto it = r.begin(); it != r.end(); ++it) o[std::string(it.key())] = ToJson(it.value());
      return o;
    }
  }
  return nullptr;
}

// Equal values of the same JSON types (nlohmann's == takes 1 and 1.0 as equal; this does not).
bool Same(const json& a, const json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_number_float())
    return a.get<double>() == b.get<double>() || (std::isnan(a.get<double>()) && std::isnan(b.get<double>()));
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!Same(a[i], b[i])) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it)
      if (!b.contains(it.key()) || !Same(it.value(), b[it.key()])) return false;
    return true;
  }
  return a == b;
}

struct Outcome {
  bool ok = false;
  json value;
  std::string error;
};

// One whole document through a Stream: its value and the end.
Outcome ReadDocument(Stream stream) {
  Tape tape;
  Ref root;
  Outcome out;
  if (stream.Read(tape, &root)) {
    out.value = ToJson(root);  // before ExpectEnd: reading on may move the text the value's strings view
    if (stream.ExpectEnd()) {
      out.ok = true;
      return out;
    }
  }
  out.error = stream.error().message();
  return out;
}

Outcome ReadText(std::string_view text) { return ReadDocument(Stream::FromText(text)); }

// The same document written to a file and read in pieces of `piece` bytes.
Outcome ReadInPieces(const std::string& text, size_t piece) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("opprobe_json_stream_test_" + std::to_string(::getpid()) + ".json"))
          .string();
  std::ofstream(path, std::ios::binary) << text;
  auto reader = io::FileReader::Open(path);
  EXPECT_TRUE(reader.ok());
  Outcome out = ReadDocument(Stream::FromFile(std::move(reader).value(), piece));
  std::filesystem::remove(path);
  return out;
}

// Accepts exactly what nlohmann accepts, with the same value.
void ExpectLikeNlohmann(const std::string& text) {
  Outcome got = ReadText(text);
  const bool accepted = json::accept(text);
  ASSERT_EQ(got.ok, accepted) << "input: " << json(text).dump() << " error: " << got.error;
  if (accepted) {
    json want = json::parse(text);
    EXPECT_TRUE(Same(got.value, want)) << json(text).dump() << ": got " << got.value.dump() << ", want " << want.dump();
  } else {
    EXPECT_THAT(got.error, StartsWith("not valid JSON at line ")) << json(text).dump();
  }
}

TEST(JsonStream, AcceptsWhatNlohmannAcceptsWithTheSameValues) {
  const char* kCases[] = {
      // values
      "null",
      "true",
      "false",
      "0",
      "-0",
      "7",
      "-7",
      "18446744073709551615",
      "18446744073709551616",
      "-9223372036854775808",
      "-9223372036854775809",
      "1.5",
      "-1.5e-3",
      "1E+2",
      "1e999",
      "-1e999",
      "1e-999",
      "0.1",
      "123456789012345678901234567890",
      "\"\"",
      "\"abc\"",
      "[]",
      "{}",
      "[1,[2,[3,{}]]]",
      R"({"a":1,"b":[true,null],"c":{"d":"e"}})",
      R"({"a":1,"a":2})",
      " \t\r\n[ 1 , 2 ]\n ",
      // strings: escapes, UTF-8
      R"("\"\\\/\b\f\n\r\t")",
      R"("\u0041\u00e9\u4e2d")",
      R"("\ud83d\ude00")",
      R"("\u0000")",
      "\"\xc3\xa9\"",
      "\"\xe4\xb8\xad\"",
      "\"\xf0\x9f\x98\x80\"",
      "\xef\xbb\xbf{\"bom\":1}",
      // not JSON
      "",
      " ",
      "nul",
      "tru",
      "True",
      "01",
      "-",
      "1.",
      ".5",
      "1e",
      "1e+",
      "+1",
      "[1,]",
      "{\"a\":1,}",
      "{a:1}",
      "{\"a\" 1}",
      "[1 2]",
      "[",
      "{",
      "\"abc",
      "\"a\\x\"",
      "\"\\u12\"",
      "\"\\u12G4\"",
      R"("\ud83d")",
      R"("\ud83d\u0041")",
      R"("\ude00")",
      "\"a\nb\"",
      "\"a\tb\"",
      "\"\x01\"",
      "\"\x80\"",
      "\"\xc0\x80\"",
      "\"\xc3\"",
      "\"\xe0\x80\x80\"",
      "\"\xed\xa0\x80\"",
      "\"\xf4\x90\x80\x80\"",
      "\"\xf5\x80\x80\x80\"",
      "\"\xff\"",
      "[1] 2",
      "{} x",
      "\xef\xbb",
      "\xef\xbb\xbf",
      "\xef\xbb\xbf\xef\xbb\xbf{}",
      "[1]\x00",
      "nulll",
      "[-]",
      "[--1]",
      "{\"a\":}",
      "{,}",
      "[,1]",
      "]",
      "}",
  };
  for (const char* c : kCases) ExpectLikeNlohmann(c);
  ExpectLikeNlohmann(std::string("[1,\0 2]", 7));
  ExpectLikeNlohmann(std::string(5000, '[') + std::string(5000, ']'));  // deep nesting (the scanner does not recurse)
}

// Thousands of corrupted traces: one byte replaced, one byte removed, the text cut anywhere.
TEST(JsonStream, AgreesWithNlohmannOnCorruptedTraces) {
  const std::string text = ReadFile(Src("tests/fixtures/traces/all_kinds.json"));
  ASSERT_FALSE(text.empty());
  const char kBytes[] = {'"',  '{', '}',  '[',  ']',    ',',    ':',    '-',    '0',    '9',    'e',    '.',   'x',
                         '\\', ' ', '\n', '\0', '\x01', '\x7f', '\x80', '\xc3', '\xe4', '\xed', '\xf0', '\xff'};
  std::mt19937 rng(17);
  for (int k = 0; k < 3000; ++k) {
    std::string t = text;
    const size_t pos = rng() % t.size();
    switch (k % 3) {
      case 0: t[pos] = kBytes[rng() % sizeof kBytes]; break;
      case 1: t.erase(pos, 1); break;
      default: t.resize(pos); break;
    }
    ExpectLikeNlohmann(t);
  }
}

TEST(JsonStream, SyntaxErrorsNameLineColumnAndByte) {
  EXPECT_EQ(ReadText("{\"format\": \"opprobe-trace\",\n  oops").error,
            "not valid JSON at line 2, column 3 (byte 31): unexpected 'o'; expected a member name (a string)");
  EXPECT_EQ(ReadText("[1,\n2,\n]").error,
            "not valid JSON at line 3, column 1 (byte 8): unexpected ']'; expected a value");
  EXPECT_EQ(ReadText("[1, 2").error,
            "not valid JSON at line 1, column 6 (byte 6): unexpected end of input; expected ',' or ']'");
  EXPECT_EQ(
      ReadText("\"a\x01\"").error,
      "not valid JSON at line 1, column 3 (byte 3): control character U+0001 in a string (JSON needs it escaped)");
  EXPECT_EQ(ReadText("\"\xc3(\"").error,
            "not valid JSON at line 1, column 3 (byte 3): invalid UTF-8 byte 0x28 in a string");
  EXPECT_EQ(ReadText("[tru]").error, "not valid JSON at line 1, column 5 (byte 5): invalid literal; expected 'true'");
  EXPECT_EQ(ReadText("{} {}").error,
            "not valid JSON at line 1, column 4 (byte 4): unexpected '{' after the end of the document");
  // Input bytes in a message are escaped.
  EXPECT_EQ(ReadText("[\x02]").error,
            "not valid JSON at line 1, column 2 (byte 2): unexpected '\\x02'; expected a value");
}

TEST(JsonStream, StringsWithoutEscapesAreViewsOfTheText) {
  const std::string text = R"({"plain":"abc","escaped":"a\nb"})";
  Stream stream = Stream::FromText(text);
  Tape tape;
  Ref root;
  ASSERT_TRUE(stream.Read(tape, &root));
  EXPECT_EQ(root.Find("plain")->str().data(), text.data() + 10);
  EXPECT_EQ(root.Find("escaped")->str(), "a\nb");
  EXPECT_EQ(root.Find("escaped")->source(), R"("a\nb")");
  EXPECT_EQ(root.source(), text);
  EXPECT_FALSE(root.Find("missing").has_value());
  EXPECT_EQ(root.size(), 2u);
  // A tape that owns its strings keeps them after the text is gone.
  Tape owned(/*own_strings=*/true);
  std::string copy = text;
  Stream s2 = Stream::FromText(copy);
  Ref r2;
  ASSERT_TRUE(s2.Read(owned, &r2));
  copy.assign(copy.size(), 'x');
  EXPECT_EQ(r2.Find("plain")->str(), "abc");
}

TEST(JsonStream, ValuesInSequence) {
  Stream stream = Stream::FromText(" [1, {\"a\": [2, 3]}, \"x\"] ");
  ASSERT_TRUE(stream.Expect('[', "'['"));
  Tape tape;
  Ref v;
  ASSERT_TRUE(stream.Read(tape, &v));
  EXPECT_EQ(v.uint64(), 1u);
  EXPECT_EQ(stream.Peek(), ',');
  ASSERT_TRUE(stream.Expect(',', "','"));
  ASSERT_TRUE(stream.Read(tape, &v));
  ASSERT_TRUE(v.is_object());
  std::optional<Ref> a = v.Find("a");
  ASSERT_TRUE(a && a->is_array());
  std::vector<uint64_t> items;
  for (Ref e : *a) items.push_back(e.uint64());
  EXPECT_EQ(items, (std::vector<uint64_t>{2, 3}));
  ASSERT_TRUE(stream.Expect(',', "','"));
  ASSERT_TRUE(stream.Read(tape, &v));
  EXPECT_EQ(v.str(), "x");
  ASSERT_TRUE(stream.Expect(']', "']'"));
  EXPECT_TRUE(stream.ExpectEnd());
  EXPECT_FALSE(stream.Peek().has_value());
}

// A file read in pieces of 1 to 9 bytes (and more) gives the values and errors of the text in memory: every value,
// string, escape, UTF-8 character and number straddles a boundary somewhere.
TEST(JsonStream, PiecesOfAnySizeReadTheSame) {
  std::vector<std::string> texts = {ReadFile(Src("tests/fixtures/traces/all_kinds.json")),
                                    ReadFile(Src("samples/traces/unsupported.json")),
                                    "\xef\xbb\xbf [\"\\ud83d\\ude00\xc3\xa9\", 123456, -1.25e3, {\"k\":\"v\"}]\n"};
  std::string bad = texts[0];
  bad[bad.size() / 2] = '\x01';
  texts.push_back(bad);
  texts.push_back(texts[1].substr(0, texts[1].size() - 5));
  texts.push_back("  \n\n  ");
  texts.push_back("[1,\n2,\n]");
  for (const std::string& text : texts) {
    Outcome want = ReadText(text);
    for (size_t piece : {1, 2, 3, 4, 5, 7, 9, 64, 4096}) {
      Outcome got = ReadInPieces(text, piece);
      EXPECT_EQ(got.ok, want.ok) << "piece " << piece;
      EXPECT_EQ(got.error, want.error) << "piece " << piece;
      if (want.ok) { EXPECT_TRUE(Same(got.value, want.value)) << "piece " << piece; }
    }
  }
}

TEST(JsonStream, EmptyInput) {
  Stream stream = Stream::FromText(" \n\t");
  EXPECT_FALSE(stream.AtValue());
  EXPECT_FALSE(stream.failed());
  EXPECT_TRUE(stream.only_whitespace_so_far());
  Stream bom = Stream::FromText("\xef\xbb\xbf");
  EXPECT_FALSE(bom.AtValue());
  EXPECT_FALSE(bom.only_whitespace_so_far());
}

}  // namespace
}  // namespace opprobe::analyzer::json
