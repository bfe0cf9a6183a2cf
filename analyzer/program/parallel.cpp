#include "analyzer/program/parallel.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <unordered_map>

namespace opprobe::analyzer {
namespace {

enum Axis { kDp = 0, kFsdp = 1, kTp = 2 };

// Which mesh axes split which dimension of a tensor (dims[d]: axes, in mesh order).
struct Split {
  std::vector<std::vector<int>> dims;
};

// A device mesh: its axes' sizes and its devices in row-major order (empty: 0..n-1, written as an iota).
struct MeshAxes {
  std::vector<int64_t> shape;
  std::vector<int64_t> devices;
};

hlo::Sharding ShardingOf(const Split& split, const MeshAxes& mesh) {
  const int rank = static_cast<int>(mesh.shape.size());
  std::vector<int> perm;
  std::vector<int64_t> tile;
  bool any = false;
  for (const auto& axes : split.dims) {
    int64_t n = 1;
    for (int a : axes) perm.push_back(a), n *= mesh.shape[static_cast<size_t>(a)], any = true;
    tile.push_back(n);
  }
  hlo::Sharding s;
  if (!any) return s;  // replicated
  int64_t rest = 1;
  for (int a = 0; a < rank; ++a)
    if (std::find(perm.begin(), perm.end(), a) == perm.end())
      perm.push_back(a), rest *= mesh.shape[static_cast<size_t>(a)];
  s.type = hlo::Sharding::Type::kTiled;
  s.tile_dims = tile;
  if (rest > 1) {
    s.tile_dims.push_back(rest);
    s.last_tile_dim_replicate = true;
  }
  std::vector<int64_t> p(perm.begin(), perm.end());
  if (mesh.devices.empty()) {
    s.iota = true;
    s.iota_reshape_dims = mesh.shape;
    std::vector<int64_t> identity(static_cast<size_t>(rank));
    for (int a = 0; a < rank; ++a) identity[static_cast<size_t>(a)] = a;
    if (p != identity) s.iota_transpose_perm = p;
    return s;
  }
  // The mesh's devices transposed so that the axes run in `perm` order: tile k holds devices[index of k].
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
  for (int a = rank - 2; a >= 0; --a)
    strides[static_cast<size_t>(a)] = strides[static_cast<size_t>(a) + 1] * mesh.shape[static_cast<size_t>(a) + 1];
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  for (size_t k = 0; k < mesh.devices.size(); ++k) {
    int64_t at = 0;
    for (int j = 0; j < rank; ++j)
      at += idx[static_cast<size_t>(j)] * strides[static_cast<size_t>(p[static_cast<size_t>(j)])];
    s.devices.push_back(mesh.devices[static_cast<size_t>(at)]);
    for (int j = rank - 1; j >= 0; --j) {  // the next index over the permuted axes, last fastest
      if (++idx[static_cast<size_t>(j)] < mesh.shape[static_cast<size_t>(p[static_cast<size_t>(j)])]) break;
      idx[static_cast<size_t>(j)] = 0;
    }
  }
  return s;
}

bool RowSplitName(const std::string& name) {
  static const char* const kRow[] = {"o_proj",        "out_proj", "down_proj", "fc2",      "c_proj",
                                     "dense_4h_to_h", "wo.",      "w2.",       "proj_out", "dense.weight"};
  for (const char* k : kRow)
    if (name.find(k) != std::string::npos) return true;
  return false;
}

std::string Owner(const std::string& name, const std::string& kind) {
  // `layers.0.mlp.weight.grad` / `.exp_avg` -> `layers.0.mlp.weight`
  if (kind == "gradient" && name.size() > 5 && name.ends_with(".grad")) return name.substr(0, name.size() - 5);
  if (kind == "optimizer_state") {
    size_t dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(0, dot);
  }
  return name;
}

}  // namespace

std::string Parallelism::ToString() const {
  std::vector<std::string> parts;
  if (dp > 1) parts.push_back(fmt::format("dp={}", dp));
  if (fsdp > 1) parts.push_back(fmt::format("fsdp={}", fsdp));
  if (tp > 1) parts.push_back(fmt::format("tp={}", tp));
  return parts.empty() ? "dp=1" : fmt::format("{}", fmt::join(parts, ","));
}

Expected<Parallelism> ParseParallelism(const std::string& spec) {
  Parallelism p;
  bool seen[3] = {false, false, false};
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string part = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = part.find('=');
    std::string axis = part.substr(0, eq);
    int which = axis == "dp" ? 0 : axis == "fsdp" ? 1 : axis == "tp" ? 2 : -1;
    if (which < 0 || eq == std::string::npos)
      return InvalidInput(fmt::format("--parallel {}: '{}' is not AXIS=N with AXIS dp, fsdp or tp", spec, part));
    if (seen[which]) return InvalidInput(fmt::format("--parallel {}: {} is given twice", spec, axis));
    seen[which] = true;
    std::string n = part.substr(eq + 1);
    if (n.empty() || n.size() > 6 || !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoll(n) < 1)
      return InvalidInput(fmt::format("--parallel {}: {} needs a count of devices, not '{}'", spec, axis, n));
    (which == 0 ? p.dp : which == 1 ? p.fsdp : p.tp) = std::stoll(n);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return p;
}

namespace {

// Annotates the step's parameters and outputs: `choose` gives each input's split (i: its index) and each output's that
// is no update of an input (i: nullopt); `by_name` holds the parameters' splits made so far, by name.
using SplitChooser = std::function<Expected<Split>(const ProgramValue& v, std::optional<size_t> i,
                                                   const std::unordered_map<std::string, Split>& by_name)>;

Status Annotate(BuiltStep& step, const MeshAxes& mesh, const SplitChooser& choose) {
  auto params = step.module->entry()->parameters();
  if (params.size() != step.inputs.size()) return Internal("the step's parameters do not match its inputs");
  std::unordered_map<std::string, Split> by_name;
  for (size_t i = 0; i < params.size(); ++i) {
    const ProgramValue& v = step.inputs[i];
    OPPROBE_ASSIGN_OR_RETURN(Split s, choose(v, i, by_name));
    if (v.kind == "parameter") by_name.emplace(v.name, s);
    params[i]->sharding = ShardingOf(s, mesh);
  }
  // The outputs: an update of an input keeps the input's split; others by their kind.
  hlo::Instruction* root = step.module->entry()->root();
  if (!root || root->opcode != hlo::Opcode::kTuple || root->operands.size() != step.outputs.size())
    return Internal("the step's root does not match its outputs");
  hlo::Sharding tuple;
  tuple.type = hlo::Sharding::Type::kTuple;
  for (const auto& o : step.outputs) {
    if (o.aliases >= 0) {
      tuple.tuple.push_back(*params[static_cast<size_t>(o.aliases)]->sharding);
      continue;
    }
    OPPROBE_ASSIGN_OR_RETURN(Split s, choose(o, std::nullopt, by_name));
    tuple.tuple.push_back(ShardingOf(s, mesh));
  }
  root->sharding = tuple;
  return Status::Ok();
}

}  // namespace

Status ShardStep(BuiltStep& step, const Parallelism& p) {
  if (p.devices() == 1 || !step.module) return Status::Ok();
  const std::array<int64_t, 3> mesh = {p.dp, p.fsdp, p.tp};
  auto divides = [&](const TensorMeta& m, size_t d, int64_t n) {
    return d < m.sizes.size() && m.sizes[d] % n == 0 && m.sizes[d] >= n;
  };
  return Annotate(step, MeshAxes{{p.dp, p.fsdp, p.tp}, {}},
                  [&](const ProgramValue& v, std::optional<size_t>,
                      const std::unordered_map<std::string, Split>& by_name) -> Expected<Split> {
                    Split s;
                    s.dims.resize(v.meta.sizes.size());
                    if (v.meta.sizes.empty()) return s;
                    if (v.kind == "data" || v.kind == "output") {
                      // The batch: its first dimension over every data-parallel axis that divides it.
                      for (int a : {kDp, kFsdp})
                        if (mesh[static_cast<size_t>(a)] > 1) {
                          int64_t n = mesh[static_cast<size_t>(a)];
                          for (int b : s.dims[0]) n *= mesh[static_cast<size_t>(b)];
                          if (divides(v.meta, 0, n)) s.dims[0].push_back(a);
                        }
                      return s;
                    }
                    std::string owner = Owner(v.name, v.kind);
                    if (v.kind != "parameter" && v.kind != "buffer") {
                      auto it = by_name.find(owner);
                      if (it != by_name.end() && it->second.dims.size() == s.dims.size()) return it->second;
                    }
                    if (p.tp > 1 && v.kind != "buffer") {
                      if (v.meta.sizes.size() == 2) {
                        bool row = RowSplitName(owner) || v.meta.sizes[0] < v.meta.sizes[1];
                        size_t d = row ? 1 : 0;
                        if (divides(v.meta, d, p.tp)) s.dims[d].push_back(kTp);
                      } else if (v.meta.sizes.size() == 1 && owner.ends_with(".bias")) {
                        // A column-split layer's bias is split with its weight.
                        auto w = by_name.find(owner.substr(0, owner.size() - 5) + ".weight");
                        if (w != by_name.end() && w->second.dims.size() == 2 && !w->second.dims[0].empty() &&
                            w->second.dims[0].front() == kTp && divides(v.meta, 0, p.tp))
                          s.dims[0].push_back(kTp);
                      }
                    }
                    if (p.fsdp > 1 && v.kind != "buffer") {
                      for (size_t d = 0; d < s.dims.size(); ++d) {
                        if (!s.dims[d].empty()) continue;
                        if (divides(v.meta, d, p.fsdp)) {
                          s.dims[d].push_back(kFsdp);
                          break;
                        }
                      }
                    }
                    return s;
                  });
}

Status ShardStepAsMarked(BuiltStep& step, const StepDataFlow& flow) {
  if (flow.mesh.shape.empty() || !step.module) return Status::Ok();
  if (flow.inputs.size() != step.inputs.size()) return Internal("the step's inputs do not match its data flow");
  return Annotate(
      step, MeshAxes{flow.mesh.shape, flow.mesh.devices},
      [&](const ProgramValue& v, std::optional<size_t> i,
          const std::unordered_map<std::string, Split>& by_name) -> Expected<Split> {
        Split s;
        s.dims.resize(v.meta.sizes.size());
        if (i && !flow.inputs[*i].sharding.empty()) {
          const auto& marked = flow.inputs[*i].sharding;
          if (marked.size() != v.meta.sizes.size())
            return InvalidInput(fmt::format("xs.mark_sharding of {} {} names {} dimensions; the tensor has {}", v.kind,
                                            v.name.empty() ? "(unnamed)" : v.name, marked.size(), v.meta.sizes.size()));
          for (size_t d = 0; d < marked.size(); ++d)
            for (int64_t a : marked[d]) s.dims[d].push_back(static_cast<int>(a));
          return s;
        }
        // Unmarked: a gradient or optimizer state follows its parameter, anything else is replicated, as torch_xla
        // leaves what the script did not mark to the partitioner's propagation from the marked ones.
        if (v.kind == "gradient" || v.kind == "optimizer_state") {
          auto it = by_name.find(Owner(v.name, v.kind));
          if (it != by_name.end() && it->second.dims.size() == s.dims.size()) return it->second;
        }
        return s;
      });
}

}  // namespace opprobe::analyzer
