// Decoding of one torch.export ExportedProgram JSON into analyzer::Graph nodes: see pt2_program.h. Each node's
// arguments are decoded by pt2::ArgumentDecoder (pt2_arguments.h).
#include "analyzer/loaders/pt2_program.h"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "analyzer/loaders/op_schemas.h"
#include "analyzer/loaders/pt2_arguments.h"
#include "analyzer/loaders/split_top_level.h"
#include "support/quote.h"

namespace opprobe::analyzer {

namespace {

using pt2::json;

// The newest ExportedProgram schema major (torch/_export/serde/schema.py SCHEMA_VERSION, torch 2.9: 8.x).
constexpr int kNewestSchemaMajor = 8;

// Reads the program: its version and symbol ranges, then its graph, node by node (subgraphs through the argument
// decoder's `as_graph`).
class ProgramDecoder {
 public:
  ProgramDecoder(const std::string& where, const std::string& program, Graph& graph)
      : j_(where),
        where_(where),
        program_(program),
        graph_(graph),
        args_(j_, version_, ranges_,
              [this](const json& g, const std::string& path, const pt2::Scope* parent, int depth) {
                DecodeGraph(g, path, parent, depth);
              }) {}

  Status Run(std::string_view text);

 private:
  void DecodeGraph(const json& g, const std::string& path, const pt2::Scope* parent, int depth);
  void DecodeNode(const json& n, const std::string& path, const pt2::Scope& scope, int depth);
  // The program's inputs and outputs from its graph signature, what they are (parameters, buffers, user inputs;
  // outputs, mutated buffers), and the data flow its top-level nodes recorded: Graph::program.
  void DecodeSignature(const json& gm);
  int64_t ValueId(const std::string& tensor_name);
  // The tensor a signature's argument names: `{"name": N}` (TensorArgument) or `{"as_tensor": {"name": N}}`; empty
  // for any other argument (a constant, a SymInt, a token).
  std::string SpecTensor(const json& arg, const std::string& path) const;

  pt2::JsonAccess j_;
  std::string where_;
  std::string program_;
  Graph& graph_;
  pt2::SchemaVersion version_;
  pt2::SymbolRanges ranges_;
  pt2::ArgumentDecoder args_;
  std::vector<std::unique_ptr<std::unordered_map<std::string, pt2::DecodedTensor>>> caches_;
  StepDataFlow flow_;
  std::unordered_map<std::string, int64_t> ids_;
};

struct Target {
  bool skip = false;  // symbolic-int arithmetic on Python numbers, not a tensor op
  std::string ns, name, overload;
};

Target ParseTarget(const std::string& t) {
  Target out;
  std::string s = t;
  if (s.starts_with("#")) {  // registered extension `#<namespace>:<op_name>`
    auto colon = s.find(':');
    out.ns = s.substr(1, colon == std::string::npos ? std::string::npos : colon - 1);
    out.name = colon == std::string::npos ? "" : s.substr(colon + 1);
    out.overload = "default";
    return out;
  }
  for (const char* prefix : {"torch.ops.", "executorch.exir.dialects.edge.ops."}) {
    if (s.starts_with(prefix)) {
      s = s.substr(std::string_view(prefix).size());
      auto d1 = s.find('.');
      out.ns = s.substr(0, d1);
      std::string rest = d1 == std::string::npos ? "" : s.substr(d1 + 1);
      if (out.ns == "higher_order") {
        out.name = rest;
        out.overload = "default";
        return out;
      }
      auto d2 = rest.rfind('.');
      if (d2 == std::string::npos) {
        out.name = rest;
        out.overload = "default";
      } else {
        out.name = rest.substr(0, d2);
        out.overload = rest.substr(d2 + 1);
      }
      return out;
    }
  }
  // `_operator.add`, `math.trunc`, `torch.sym_max`, `builtins.getattr`: Python-level symbolic-int arithmetic.
  out.skip = true;
  return out;
}

}  // namespace

SourceLoc InnermostUserFrame(std::string_view trace) {
  SourceLoc best;
  size_t pos = 0;
  while ((pos = trace.find("File \"", pos)) != std::string_view::npos) {
    size_t fstart = pos + 6;
    size_t fend = trace.find('"', fstart);
    if (fend == std::string_view::npos) break;
    std::string_view file = trace.substr(fstart, fend - fstart);
    pos = fend + 1;
    std::string_view rest = trace.substr(pos);
    if (!rest.starts_with(", line ")) continue;
    int line = 0;
    size_t i = 7;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i])) && line < 100000000)
      line = line * 10 + (rest[i++] - '0');
    bool in_torch = file.starts_with("torch/") || file.find("/torch/") != std::string_view::npos;
    if (!in_torch) {
      best.file = std::string(file);
      best.line = line;
    }
  }
  return best;
}

std::string ModulePathFromNnModuleStack(std::string_view stack) {
  auto items = SplitTopLevel(stack, ';');
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    if (it->empty()) continue;
    auto fields = SplitTopLevel(*it, ',');
    std::string path = fields.size() >= 2 ? std::string(fields[1]) : "";
    // Older spellings: `L['self'].layer1[0].conv1`, `self.layer1.0`.
    for (const char* prefix : {"L['self']", "L[\"self\"]", "L__self__", "self"}) {
      if (path.starts_with(prefix) &&
          (path.size() == strlen(prefix) || path[strlen(prefix)] == '.' || path[strlen(prefix)] == '[')) {
        path = path.substr(strlen(prefix));
        break;
      }
    }
    std::string norm;
    for (size_t i = 0; i < path.size(); ++i) {
      char c = path[i];
      if (c == '[') {
        size_t close = path.find(']', i);
        if (close == std::string::npos) break;
        std::string inner = path.substr(i + 1, close - i - 1);
        if (inner.size() >= 2 && (inner.front() == '\'' || inner.front() == '"'))
          inner = inner.substr(1, inner.size() - 2);
        if (!norm.empty()) norm += '.';
        norm += inner;
        i = close;
      } else if (c == '.') {
        if (!norm.empty()) norm += '.';
      } else {
        norm += c;
      }
    }
    return norm;
  }
  return "";
}

void ProgramDecoder::DecodeNode(const json& n, const std::string& path, const pt2::Scope& scope, int depth) {
  if (!n.is_object()) j_.Fail(path, "expected a node object");
  const std::string& target = j_.Str(j_.Require(n, "target", path), path + ".target");
  Target t = ParseTarget(target);
  const json& inputs = j_.Array(j_.Require(n, "inputs", path), path + ".inputs");
  const json& outputs = j_.Array(j_.Require(n, "outputs", path), path + ".outputs");
  pt2::NodeState ns;
  Node node;
  node.op = t.skip ? target : t.ns + "::" + t.name;
  node.overload = t.overload;
  node.program = program_;

  struct In {
    std::string name;
    const json* arg;
    std::string path;
    bool keyword = false;
    bool used = false;
  };
  std::vector<In> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string ip = fmt::format("{}.inputs[{}]", path, i);
    const json& na = inputs[i];
    if (!na.is_object()) j_.Fail(ip, "expected a NamedArgument object");
    In in;
    if (const json* name = j_.Optional(na, "name")) in.name = j_.Str(*name, ip + ".name");
    in.arg = &j_.Require(na, "arg", ip);
    in.path = ip + ".arg";
    if (const json* kind = j_.Optional(na, "kind")) in.keyword = kind->is_number_integer() && kind->get<int>() == 2;
    ins.push_back(std::move(in));
  }

  const OpSchema* schema = (!t.skip && t.ns == "aten") ? FindAtenSchema(t.name, t.overload) : nullptr;
  if (schema) {
    for (size_t i = 0; i < schema->args.size(); ++i) {
      const OpSchemaArg& sa = schema->args[i];
      In* found = nullptr;
      for (auto& in : ins)
        if (!in.used && in.name == sa.name) {
          found = &in;
          break;
        }
      if (!found && i < ins.size() && !ins[i].used && ins[i].name.empty() && !ins[i].keyword) found = &ins[i];
      Argument arg;
      arg.name = sa.name;
      if (found) {
        found->used = true;
        arg.value = args_.Decode(*found->arg, found->path, sa.type, scope, ns, depth);
      } else if (sa.has_default) {
        arg.value = args_.Default(sa, ns);
      } else {
        ns.Note(fmt::format("argument '{}' is missing and has no default", sa.name));
      }
      node.args.push_back(std::move(arg));
    }
    for (auto& in : ins) {
      if (in.used) continue;
      ns.Note(fmt::format("argument '{}' is not in the torch {} schema of {}.{}", in.name, OpSchemaTableTorchVersion(),
                          node.op, node.overload));
      node.args.push_back({in.name, args_.Decode(*in.arg, in.path, "", scope, ns, depth)});
    }
  } else {
    for (auto& in : ins) node.args.push_back({in.name, args_.Decode(*in.arg, in.path, "", scope, ns, depth)});
    if (!t.skip)
      ns.Note(fmt::format("no schema for {}.{} in the op table (torch {}); arguments as named in the file", node.op,
                          node.overload, OpSchemaTableTorchVersion()));
  }

  const size_t tensors_read = ns.tensor_names.size();
  StepDataFlow::Call call;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const size_t before = ns.tensor_names.size();
    Value v = args_.Decode(outputs[i], fmt::format("{}.outputs[{}]", path, i), "", scope, ns, depth);
    if (v.is_none()) continue;
    if (ns.tensor_names.size() == before) call.outputs.push_back(-1);  // a SymInt, a scalar
    for (size_t k = before; k < ns.tensor_names.size(); ++k) call.outputs.push_back(ValueId(ns.tensor_names[k]));
    node.outputs.push_back(std::move(v));
  }

  if (const json* meta = j_.Optional(n, "metadata"); meta && meta->is_object()) {
    if (const json* st = j_.Optional(*meta, "stack_trace"); st && st->is_string())
      node.loc = InnermostUserFrame(st->get_ref<const std::string&>());
    if (const json* nm = j_.Optional(*meta, "nn_module_stack"); nm && nm->is_string())
      node.module_path = ModulePathFromNnModuleStack(nm->get_ref<const std::string&>());
  }
  if (t.skip) return;  // validated, but Python-number arithmetic is not an aten op
  node.dynamic_shape = ns.dynamic;
  for (const auto& note : ns.notes) node.note += (node.note.empty() ? "" : "; ") + note;
  if (depth == 0) {  // a subgraph's nodes belong to their higher-order op, which the program cannot hold
    call.node = static_cast<int64_t>(graph_.nodes.size());
    for (size_t k = 0; k < tensors_read; ++k) call.inputs.push_back(ValueId(ns.tensor_names[k]));
    if (flow_.calls.empty()) flow_.begin = node.loc;
    flow_.end = node.loc;
    flow_.calls.push_back(std::move(call));
  }
  graph_.nodes.push_back(std::move(node));
}

int64_t ProgramDecoder::ValueId(const std::string& tensor_name) {
  return ids_.emplace(tensor_name, static_cast<int64_t>(ids_.size())).first->second;
}

std::string ProgramDecoder::SpecTensor(const json& arg, const std::string& path) const {
  if (!arg.is_object()) return "";
  if (const json* name = j_.Optional(arg, "name"); name && name->is_string()) return name->get<std::string>();
  auto [key, v] = j_.Union(arg, path);
  if (key == "as_tensor" && v->is_object())
    if (const json* name = j_.Optional(*v, "name"); name && name->is_string()) return name->get<std::string>();
  return "";
}

void ProgramDecoder::DecodeSignature(const json& gm) {
  const json* sig = j_.Optional(gm, "signature");
  if (!sig || !sig->is_object()) return;  // no signature: no program
  const std::string sp = "$.graph_module.signature";
  const json* in_specs = j_.Optional(*sig, "input_specs");
  const json* out_specs = j_.Optional(*sig, "output_specs");
  if (!in_specs || !out_specs || !in_specs->is_array() || !out_specs->is_array()) return;
  std::unordered_map<std::string, int64_t> input_of;         // tensor name -> index in flow_.inputs
  std::unordered_map<std::string, std::string> input_named;  // buffer / user input name -> tensor name
  // One spec of either list: its kind (the union's member), the member, and the tensor its `arg` names (empty: no
  // tensor, skipped); `named(spec, key)` reads one of the member's name fields.
  struct Spec {
    std::string kind;
    const json* member = nullptr;
    std::string tensor;
  };
  auto spec_of = [&](const json& list, const char* what, size_t i) {
    const std::string path = fmt::format("{}.{}[{}]", sp, what, i);
    auto [kind, member] = j_.Union(list[i], path);
    Spec s{kind, member, ""};
    if (const json* arg = member->is_object() ? j_.Optional(*member, "arg") : nullptr)
      s.tensor = SpecTensor(*arg, path + "." + kind + ".arg");
    return s;
  };
  auto named = [&](const Spec& s, const char* key) {
    const json* n = j_.Optional(*s.member, key);
    return n && n->is_string() ? n->get<std::string>() : std::string();
  };
  for (size_t i = 0; i < in_specs->size(); ++i) {
    const Spec spec = spec_of(*in_specs, "input_specs", i);
    const std::string& kind = spec.kind;
    const std::string& tensor = spec.tensor;
    if (tensor.empty()) continue;
    StepDataFlow::Value v;
    v.value = ValueId(tensor);
    if (kind == "parameter") {
      v.kind = "parameter";
      v.name = named(spec, "parameter_name");
    } else if (kind == "buffer") {
      v.kind = "buffer";
      v.name = named(spec, "buffer_name");
    } else if (kind == "tensor_constant") {
      v.kind = "buffer";
      v.name = named(spec, "tensor_constant_name");
    } else {
      v.kind = "data";  // user_input, constant_input
      v.name = tensor;
    }
    input_named[v.name] = tensor;
    input_of[tensor] = static_cast<int64_t>(flow_.inputs.size());
    flow_.inputs.push_back(std::move(v));
  }
  for (size_t i = 0; i < out_specs->size(); ++i) {
    const Spec spec = spec_of(*out_specs, "output_specs", i);
    const std::string& kind = spec.kind;
    const std::string& tensor = spec.tensor;
    if (tensor.empty()) continue;
    StepDataFlow::Value v;
    v.value = ValueId(tensor);
    if (kind == "buffer_mutation" || kind == "user_input_mutation") {
      // The new value of a buffer (running statistics) or of an input the program writes: updated in place.
      v.kind = kind == "buffer_mutation" ? "buffer" : "data";
      v.name = named(spec, kind == "buffer_mutation" ? "buffer_name" : "user_input_name");
      if (auto t = input_named.find(v.name); t != input_named.end()) v.aliases = input_of[t->second];
    } else if (kind == "gradient_to_parameter" || kind == "gradient_to_user_input") {
      v.kind = "gradient";
      v.name = named(spec, kind == "gradient_to_parameter" ? "parameter_name" : "user_input_name");
    } else {
      v.kind = "output";  // user_output, loss_output
      v.name = tensor;
    }
    flow_.outputs.push_back(std::move(v));
  }
  flow_.scope = fmt::format("exported program {}", program_);
  flow_.end_kind = "program_end";
  if (!graph_.program) graph_.program = std::move(flow_);
}

void ProgramDecoder::DecodeGraph(const json& g, const std::string& path, const pt2::Scope* parent, int depth) {
  if (depth > pt2::kMaxSubgraphDepth)
    j_.Fail(path, fmt::format("subgraphs nested deeper than {}", pt2::kMaxSubgraphDepth));
  if (!g.is_object()) j_.Fail(path, "expected a graph object");
  const json& nodes = j_.Array(j_.Require(g, "nodes", path), path + ".nodes");
  const json& tv = j_.Require(g, "tensor_values", path);
  if (!tv.is_object()) j_.Fail(path + ".tensor_values", "expected an object");
  caches_.push_back(std::make_unique<std::unordered_map<std::string, pt2::DecodedTensor>>());
  pt2::Scope scope{&g, path, parent, caches_.back().get()};
  for (size_t i = 0; i < nodes.size(); ++i) DecodeNode(nodes[i], fmt::format("{}.nodes[{}]", path, i), scope, depth);
}

Status ProgramDecoder::Run(std::string_view text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    return InvalidInput(fmt::format("{}: invalid JSON: {}", where_, support::OneLine(e.what())));
  }
  try {
    if (!doc.is_object()) j_.Fail("$", "expected an ExportedProgram object");
    const json& version = j_.Require(doc, "schema_version", "$");
    if (version.is_number_integer()) {
      version_.major = version.get<int>();
    } else if (version.is_object()) {
      version_.major =
          static_cast<int>(j_.Int(j_.Require(version, "major", "$.schema_version"), "$.schema_version.major"));
      if (const json* minor = j_.Optional(version, "minor"))
        version_.minor = static_cast<int>(j_.Int(*minor, "$.schema_version.minor"));
    } else {
      j_.Fail("$.schema_version", "expected an integer or {\"major\", \"minor\"}");
    }
    // Majors 1-8 share one layout; early files write every union member (unused ones null), later ones
    // only the set one, and Union() reads both (real files: schema 2 of torch 2.3, 7.3/7.4 of torch 2.6).
    if (version_.major < 1 || version_.major > kNewestSchemaMajor)
      j_.Fail(version.is_object() ? "$.schema_version.major" : "$.schema_version",
              fmt::format("unknown schema major version {} (this reader knows 1 to {})", version_.major,
                          kNewestSchemaMajor));
    if (const json* tv = j_.Optional(doc, "torch_version"); tv && tv->is_string() && graph_.torch_version.empty())
      graph_.torch_version = tv->get<std::string>();
    if (const json* rc = j_.Optional(doc, "range_constraints"); rc && rc->is_object()) {
      for (auto it = rc->begin(); it != rc->end(); ++it) {
        pt2::SymbolRange r;
        if (const json* lo = j_.Optional(it.value(), "min_val"); lo && lo->is_number_integer())
          r.min = lo->get<int64_t>();
        // Some serializers write int_oo as a huge integer: treat anything past 2^31 as unbounded.
        if (const json* hi = j_.Optional(it.value(), "max_val");
            hi && hi->is_number_integer() && hi->get<int64_t>() < (int64_t{1} << 31))
          r.max = hi->get<int64_t>();
        ranges_[it.key()] = r;
      }
    }
    const json& gm = j_.Require(doc, "graph_module", "$");
    DecodeGraph(j_.Require(gm, "graph", "$.graph_module"), "$.graph_module.graph", nullptr, 0);
    DecodeSignature(gm);
  } catch (const pt2::Failure& f) { return f.status; } catch (const json::exception& e) {
    return InvalidInput(fmt::format("{}: malformed program: {}", where_, support::OneLine(e.what())));
  }
  return Status::Ok();
}

Status DecodeExportedProgram(std::string_view json_text, const std::string& program, const std::string& where,
                             Graph& graph) {
  ProgramDecoder d(where, program, graph);
  return d.Run(json_text);
}

}  // namespace opprobe::analyzer
