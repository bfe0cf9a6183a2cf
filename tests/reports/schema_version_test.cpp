// The report schema is versioned for real: the required keys of schemas/report.schema.json are pinned for each
// kSchemaVersion in tests/reports/schema_versions/vN.txt (one "pointer-of-the-object-schema key" per line). A change
// to them without a new version fails here: bump kSchemaVersion (reports/report.h) and the schema's
// `schema_version` const, and add the new version's file beside the old ones, which never change.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "reports/report.h"

namespace opprobe::reports {
namespace {

using nlohmann::json;

// Every required key of every object schema in the document, as "POINTER KEY" (the pointer of the schema object
// that requires it), sorted.
void RequiredKeys(const json& node, const std::string& pointer, std::set<std::string>& out) {
  if (node.is_object()) {
    if (auto it = node.find("required"); it != node.end() && it->is_array())
      for (const auto& key : *it) out.insert((pointer.empty() ? "/" : pointer) + " " + key.get<std::string>());
    for (const auto& [k, v] : node.items()) RequiredKeys(v, pointer + "/" + k, out);
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) RequiredKeys(node[i], pointer + "/" + std::to_string(i), out);
  }
}

std::string ReadText(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SchemaVersion, TheSchemasVersionIsTheCodes) {
  json schema = json::parse(ReadText("schemas/report.schema.json"));
  EXPECT_EQ(schema["properties"]["schema_version"]["const"], kSchemaVersion);
  EXPECT_NE(schema["title"].get<std::string>().find("schema_version " + std::to_string(kSchemaVersion)),
            std::string::npos);
}

TEST(SchemaVersion, RequiredKeysArePinnedForTheVersion) {
  std::set<std::string> keys;
  RequiredKeys(json::parse(ReadText("schemas/report.schema.json")), "", keys);
  ASSERT_FALSE(keys.empty());
  std::string now;
  for (const auto& k : keys) now += k + "\n";
  const std::filesystem::path pinned = "tests/reports/schema_versions/v" + std::to_string(kSchemaVersion) + ".txt";
  ASSERT_TRUE(std::filesystem::exists(pinned))
      << pinned << " is missing: a new kSchemaVersion pins its required keys there (these):\n"
      << now;
  EXPECT_EQ(now, ReadText(pinned))
      << "schemas/report.schema.json's required keys changed under schema_version " << kSchemaVersion
      << ": bump kSchemaVersion (reports/report.h) and the schema's const, and pin the new keys in a new file";
}

// Every earlier version's file is still there: a version's keys are history, not a golden to regenerate.
TEST(SchemaVersion, EveryVersionUpToThisOneIsPinned) {
  for (int v = 1; v <= kSchemaVersion; ++v)
    EXPECT_TRUE(std::filesystem::exists("tests/reports/schema_versions/v" + std::to_string(v) + ".txt")) << v;
}

}  // namespace
}  // namespace opprobe::reports
