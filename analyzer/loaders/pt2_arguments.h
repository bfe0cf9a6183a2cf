// Argument decoding for the ExportedProgram reader (analyzer/loaders/pt2_program.h): the serialized argument unions
// (`as_tensor`, `as_sym_ints`, `as_scalar_type`, ...), tensor metadata with symbolic sizes, and schema defaults for
// the arguments a saved program left out. research/formats.md A.6-A.8 describes the format.
// Internal to analyzer/loaders: the program decoder is its one user.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzer/graph/graph.h"
#include "analyzer/loaders/op_schemas.h"
#include "support/status.h"

namespace opprobe::analyzer::pt2 {

using json = nlohmann::json;

// Subgraphs (and arguments inside them) nest at most this deep.
inline constexpr int kMaxSubgraphDepth = 32;

// Bad input inside the decoder: thrown where it is found, caught by DecodeExportedProgram into its Status.
struct Failure {
  Status status;
};

// JSON access that fails with the file's place: every message is `<where>: <JSON path>: <what>`, one line.
class JsonAccess {
 public:
  explicit JsonAccess(std::string where) : where_(std::move(where)) {}

  [[noreturn]] void Fail(const std::string& path, const std::string& msg) const;
  // A member that must be present and not null.
  const json& Require(const json& obj, const char* key, const std::string& path) const;
  // A member, or nullptr when absent or null (or when `obj` is not an object).
  const json* Optional(const json& obj, const char* key) const;
  int64_t Int(const json& j, const std::string& path) const;
  // A number, or "inf" / "-inf" / "nan" (also "Infinity", "-Infinity", "NaN").
  double Float(const json& j, const std::string& path) const;
  const std::string& Str(const json& j, const std::string& path) const;
  const json& Array(const json& j, const std::string& path) const;
  // A union: schema 8.x writes exactly one key; schema 1 writes every member with the unused ones null.
  std::pair<std::string, const json*> Union(const json& j, const std::string& path) const;

 private:
  std::string where_;
};

// The ExportedProgram schema version of the file (`schema_version`).
struct SchemaVersion {
  int major = 0;
  int minor = 0;
};

// `range_constraints`: the bounds of each symbol (`s0`), for sizes recorded without a hint.
struct SymbolRange {
  std::optional<int64_t> min, max;
};
using SymbolRanges = std::map<std::string, SymbolRange>;

struct DecodedTensor {
  TensorMeta meta;
  std::string unhinted_note;  // set when a size is symbolic without a hint
};

// What decoding one node's arguments found out besides the values: dynamic sizes and notes for the report.
struct NodeState {
  bool dynamic = false;
  std::vector<std::string> notes;
  // The tensors decoded, by name, in the order decoded (a None of an optional list adds none): which value each
  // tensor argument and output is, for the program's data flow (Graph::program).
  std::vector<std::string> tensor_names;
  void Note(const std::string& n);
};

// One graph (the program's, or a higher-order op's subgraph) and the scopes around it: tensor and SymInt names
// resolve in the innermost graph that has them.
struct Scope {
  const json* graph = nullptr;
  std::string path;  // JSON path of the graph object
  const Scope* parent = nullptr;
  std::unordered_map<std::string, DecodedTensor>* cache = nullptr;  // decoded `tensor_values` of this graph
};

// Serialized ScalarType (torch/_export/serde/schema.py numbering, not c10's) -> XLA element type; nullopt when the
// value is unknown. `name` gets the torch name (a dtype without an XLA element type, complex32, gives its storage
// type: TorchDtypeWithoutXlaType(name) tells it apart).
std::optional<hlo::PrimitiveType> SerdeDtype(int64_t v, const SchemaVersion& version, std::string* name);

class ArgumentDecoder {
 public:
  // Called for a higher-order op's subgraph (`as_graph`): the program decoder decodes its nodes in the same program.
  using SubgraphDecoder =
      std::function<void(const json& graph, const std::string& path, const Scope* parent, int depth)>;

  ArgumentDecoder(const JsonAccess& access, const SchemaVersion& version, const SymbolRanges& ranges,
                  SubgraphDecoder decode_subgraph)
      : j_(access), version_(version), ranges_(ranges), decode_subgraph_(std::move(decode_subgraph)) {}

  // One serialized argument (or output) union at `path`, read as the schema's `declared` type (`int[2]`,
  // `float`; empty when there is no schema).
  Value Decode(const json& j, const std::string& path, const std::string& declared, const Scope& scope, NodeState& ns,
               int depth);
  // The schema default of an argument the file left out.
  Value Default(const OpSchemaArg& a, NodeState& ns) const;

 private:
  struct SymValue {
    int64_t value = 0;
    bool symbolic = false;
    std::string unhinted_note;  // set when symbolic without a hint
  };

  std::string SymbolOf(const std::string& expr) const;
  SymValue Unhinted(const std::string& expr, const std::string& what) const;
  SymValue DecodeSymInt(const json& j, const std::string& path) const;
  SymValue DecodeSymIntArgument(const json& j, const std::string& path, const Scope& scope) const;
  DecodedTensor DecodeTensorMeta(const json& j, const std::string& path) const;
  const DecodedTensor& Tensor(const std::string& name, const std::string& path, const Scope& scope) const;
  std::string TensorName(const json& j, const std::string& path) const;
  std::optional<TensorMeta> OptionalTensor(const json& j, const std::string& path, const Scope& scope,
                                           NodeState& ns) const;
  static void UseTensor(const DecodedTensor& t, NodeState& ns);

  const JsonAccess& j_;
  const SchemaVersion& version_;
  const SymbolRanges& ranges_;
  SubgraphDecoder decode_subgraph_;
};

}  // namespace opprobe::analyzer::pt2
