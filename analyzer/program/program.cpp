#include "analyzer/program/program.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analyzer/lowering/context.h"
#include "hlo/builder.h"
#include "hlo/verifier.h"

namespace opprobe::analyzer {
namespace {

// The tensors a call reads, in the order its lowering makes parameters for them (lowering/context.h).
std::vector<const TensorMeta*> TensorInputs(const Node& n) {
  std::vector<const TensorMeta*> out;
  for (const Argument& a : n.args) {
    if (a.value.kind == Value::Kind::kTensor) {
      out.push_back(&a.value.tensor);
    } else if (a.value.kind == Value::Kind::kTensorList) {
      for (const auto& t : a.value.tensors)
        if (t) out.push_back(&*t);
    }
  }
  return out;
}

int64_t BytesOf(const hlo::Shape& s) {
  if (!s.IsArray()) return 0;
  int64_t n = hlo::ByteWidth(s.element_type());
  for (int d = 0; d < s.rank(); ++d) n *= s.dimensions(d);
  return n;
}

bool SameArray(const hlo::Shape& a, const hlo::Shape& b) {
  if (!a.IsArray() || !b.IsArray() || a.element_type() != b.element_type() || a.rank() != b.rank()) return false;
  for (int d = 0; d < a.rank(); ++d)
    if (a.dimensions(d) != b.dimensions(d)) return false;
  return true;
}

TensorMeta MetaOf(const hlo::Shape& s) {
  TensorMeta m;
  if (!s.IsArray()) return m;
  m.dtype = s.element_type();
  for (int d = 0; d < s.rank(); ++d) m.sizes.push_back(s.dimensions(d));
  return m;
}

// Calls whose outputs are views of their first input's buffer (PyTorch's view ops, and detach/alias): they make
// no buffer of their own. XLA fuses most of them into their readers too.
bool IsViewCall(const Node& n) {
  static const char* const kViews[] = {
      "aten::t",       "aten::transpose", "aten::view",         "aten::_unsafe_view",    "aten::_reshape_alias",
      "aten::expand",  "aten::expand_as", "aten::permute",      "aten::slice",           "aten::select",
      "aten::alias",   "aten::detach",    "aten::unsqueeze",    "aten::squeeze",         "aten::as_strided",
      "aten::unfold",  "aten::diagonal",  "aten::narrow",       "aten::split",           "aten::split_with_sizes",
      "aten::unbind",  "aten::chunk",     "aten::view_as_real", "aten::view_as_complex", "aten::lift_fresh",
      "aten::numpy_T", "aten::mT",        "aten::movedim",      "aten::swapaxes",        "aten::unflatten",
      "aten::view_as"};
  for (const char* v : kViews)
    if (n.op == v) return true;
  return false;
}

// How the estimate models XLA's fusion of a call's computation (its lowering) with its neighbours. XLA fuses an
// elementwise producer into the one consumer that reads it when that consumer is itself a loop (elementwise) or
// input (reduction) fusion, and then never materializes the producer's result: the fused computation reads the
// producer's operands instead. A call whose lowering is made only of elementwise ops and the data movement XLA fuses
// with them (broadcast, reshape, bitcast, transpose, copy, iota, constants) is kElementwise; one that also reduces
// is kReduction (a fusible consumer, never a fused producer); anything else (a dot, a convolution, a gather, a
// scatter, a sort, a custom call, control flow) is kNone: its operands and results are buffers.
enum class Fusion { kNone, kElementwise, kReduction };

Fusion FusionOf(const hlo::Computation* c) {
  if (c == nullptr) return Fusion::kNone;
  bool reduces = false;
  for (const auto& i : c->instructions()) {
    switch (i->opcode) {
      case hlo::Opcode::kParameter:
      case hlo::Opcode::kConstant:
      case hlo::Opcode::kIota:
      case hlo::Opcode::kBroadcast:
      case hlo::Opcode::kReshape:
      case hlo::Opcode::kBitcast:
      case hlo::Opcode::kTranspose:
      case hlo::Opcode::kCopy:
      case hlo::Opcode::kTuple:
      case hlo::Opcode::kGetTupleElement: continue;
      case hlo::Opcode::kReduce: reduces = true; continue;
      default:
        if (hlo::IsElementwise(i->opcode)) continue;
        return Fusion::kNone;
    }
  }
  return reduces ? Fusion::kReduction : Fusion::kElementwise;
}

// One distinct call lowered once: the computation each call with its signature calls.
struct Lowered {
  hlo::Computation* callee = nullptr;  // null: the call lowers to nothing (detach, alias): its outputs are its inputs
  size_t outputs = 0;
  Fusion fusion = Fusion::kNone;
  Status error;
};

}  // namespace

Expected<BuiltStep> BuildStepProgram(const Graph& graph, const LoweringTable& table) {
  if (!graph.program)
    return InvalidInput(
        fmt::format("{}: the trace holds no program (capture it with --program, or analyze the script "
                    "with --fit)",
                    graph.model));
  const StepDataFlow& flow = *graph.program;
  BuiltStep out;
  out.scope = flow.scope;
  out.begin = flow.begin;
  out.end = flow.end;
  out.end_kind = flow.end_kind;
  out.calls = static_cast<int64_t>(flow.calls.size());
  out.untracked_writes = flow.untracked_writes;
  for (size_t i = 0; i < flow.calls.size(); ++i)
    if (flow.calls[i].node < 0 || static_cast<size_t>(flow.calls[i].node) >= graph.nodes.size())
      return InvalidInput(
          fmt::format("{}: program.calls[{}]: the trace has no call {}", graph.model, i, flow.calls[i].node));

  // Each input's dtype and sizes as its first reader recorded them.
  std::unordered_map<int64_t, size_t> input_index;
  for (size_t i = 0; i < flow.inputs.size(); ++i) input_index.emplace(flow.inputs[i].value, i);
  std::vector<const TensorMeta*> input_meta(flow.inputs.size(), nullptr);
  for (const auto& call : flow.calls) {
    auto metas = TensorInputs(graph.nodes[static_cast<size_t>(call.node)]);
    for (size_t k = 0; k < call.inputs.size() && k < metas.size(); ++k) {
      auto it = input_index.find(call.inputs[k]);
      if (it != input_index.end() && !input_meta[it->second]) input_meta[it->second] = metas[k];
    }
  }

  hlo::Builder b("step");
  std::unordered_map<int64_t, hlo::Instruction*> value;
  std::unordered_map<int64_t, int64_t> made_by;  // value -> the call that made it
  for (size_t i = 0; i < flow.inputs.size(); ++i) {
    const auto& in = flow.inputs[i];
    ProgramValue v;
    v.kind = in.kind;
    v.name = in.name;
    if (input_meta[i]) v.meta = *input_meta[i];
    hlo::Instruction* p = b.Parameter(static_cast<int64_t>(i), lowering::ShapeOf(v.meta));
    v.bytes = BytesOf(p->shape);
    out.estimate.argument_bytes += v.bytes;
    value[in.value] = p;
    out.inputs.push_back(std::move(v));
  }

  std::map<std::tuple<std::string, std::string, int, std::string>, int64_t> gaps;  // (op, file, line, reason)
  auto gap = [&](const Node& n, const std::string& reason) {
    ++gaps[{n.qualified_name(), n.loc.file, n.loc.line, reason}];
  };
  std::unordered_map<std::string, Lowered> lowered;
  std::vector<Fusion> fusion(flow.calls.size(), Fusion::kNone);  // each call's, once it is part of the program
  for (size_t ci = 0; ci < flow.calls.size(); ++ci) {
    const auto& call = flow.calls[ci];
    const Node& node = graph.nodes[static_cast<size_t>(call.node)];
    auto [it, fresh] = lowered.try_emplace(node.SignatureKey());
    Lowered& l = it->second;
    if (fresh) {
      Expected<LoweredModule> m = Lower(node, table);
      if (!m.ok()) {
        l.error = m.status();
      } else {
        hlo::Computation* entry = m->module->entry();
        const hlo::Instruction* root = entry->root();
        bool identity = root == nullptr || root->opcode == hlo::Opcode::kParameter;
        l.outputs = identity ? 0 : (root->opcode == hlo::Opcode::kTuple ? root->operands.size() : 1);
        l.callee = identity ? nullptr : b.Adopt(std::move(m->module), fmt::format("c{}", lowered.size()));
        l.fusion = FusionOf(l.callee);
      }
    }
    if (!l.error.ok()) {
      gap(node, l.error.message());
      continue;
    }
    std::vector<hlo::Instruction*> operands;
    bool missing = false;
    for (int64_t id : call.inputs) {
      auto v = value.find(id);
      if (v == value.end()) missing = true;  // made by a call the program cannot hold: that call's gap says why
      else operands.push_back(v->second);
    }
    if (missing) continue;
    std::vector<hlo::Instruction*> results;
    if (!l.callee) {
      results = operands;  // a call that lowers to nothing gives its inputs back
    } else {
      const auto& params = l.callee->parameters();
      if (params.size() != operands.size()) {
        gap(node, fmt::format("the capture saw {} tensor arguments where the lowering takes {}", operands.size(),
                              params.size()));
        continue;
      }
      bool fits = true;
      for (size_t k = 0; k < operands.size() && fits; ++k) {
        if (!SameArray(operands[k]->shape, params[k]->shape)) {
          gap(node, fmt::format("argument {} is {} in the recorded data flow where the call reads {}", k,
                                operands[k]->shape.ToString(false), params[k]->shape.ToString(false)));
          fits = false;
        }
      }
      if (!fits) continue;
      hlo::Instruction* c = b.Call(operands, l.callee);
      if (l.outputs == 1 && !c->shape.IsTuple()) {
        results.push_back(c);
      } else {
        for (size_t k = 0; k < l.outputs; ++k) results.push_back(b.GetTupleElement(c, static_cast<int64_t>(k)));
      }
    }
    if (results.size() != call.outputs.size()) {
      gap(node,
          fmt::format("the lowering gives {} outputs where the capture saw {}", results.size(), call.outputs.size()));
      continue;
    }
    for (size_t k = 0; k < results.size(); ++k) {
      if (call.outputs[k] < 0) continue;
      value[call.outputs[k]] = results[k];
      made_by[call.outputs[k]] = static_cast<int64_t>(ci);
    }
    fusion[ci] = l.fusion;
  }
  for (const auto& [key, n] : gaps) {
    const auto& [op, file, line, reason] = key;
    out.gaps.push_back(ProgramGap{op, SourceLoc{file, line}, reason, n});
  }
  std::stable_sort(out.gaps.begin(), out.gaps.end(),
                   [](const ProgramGap& a, const ProgramGap& c) { return a.calls > c.calls; });

  // The outputs, and what is aliased to what.
  std::vector<hlo::Instruction*> roots;
  std::vector<std::string> aliases;
  std::unordered_map<int64_t, bool> is_output;
  for (const auto& o : flow.outputs) {
    auto v = value.find(o.value);
    if (v == value.end()) continue;  // made by a call the program cannot hold (a gap)
    ProgramValue pv;
    pv.kind = o.kind;
    pv.name = o.name;
    pv.meta = MetaOf(v->second->shape);
    pv.bytes = BytesOf(v->second->shape);
    if (o.aliases >= 0 &&
        SameArray(v->second->shape, value[flow.inputs[static_cast<size_t>(o.aliases)].value]->shape)) {
      pv.aliases = o.aliases;
      aliases.push_back(fmt::format("{{{}}}: ({}, {{}}, may-alias)", roots.size(), o.aliases));
      out.estimate.alias_bytes += pv.bytes;
    }
    out.estimate.output_bytes += pv.bytes;
    is_output[o.value] = true;
    roots.push_back(v->second);
    out.outputs.push_back(std::move(pv));
  }

  // Liveness over buffers: a view (t, transpose, view, expand, slice, ...) makes no buffer of its own, it reads its
  // base's, and keeps that alive; each buffer lives from the call that makes it to the last read of it or of a view
  // of it. Buffers the program returns (or whose view it returns) and its inputs are its arguments and results,
  // counted apart.
  std::unordered_map<int64_t, int64_t> owner;  // value -> the value whose buffer it reads
  auto owner_of = [&](int64_t id) {
    auto o = owner.find(id);
    return o == owner.end() ? id : o->second;
  };
  for (size_t ci = 0; ci < flow.calls.size(); ++ci) {
    const auto& call = flow.calls[ci];
    if (!IsViewCall(graph.nodes[static_cast<size_t>(call.node)]) || call.inputs.empty()) continue;
    for (int64_t id : call.outputs)
      if (id >= 0) owner[id] = owner_of(call.inputs.front());
  }
  std::unordered_map<int64_t, bool> returned;  // buffers the program returns
  for (const auto& [id, yes] : is_output) returned[owner_of(id)] = yes;
  // Fusion (FusionOf): the buffer an elementwise call makes is not materialized when exactly one call that is not a
  // view reads it (itself or through views), that call is fusible (elementwise or a reduction), the program does not
  // return it, and it is not an activation (made in the forward, read in the backward: the estimate keeps what
  // autograd keeps). The fused call is then computed where its reader is, so what it reads is read there: `at` is the
  // call where each call's work is done (its reader's, transitively, when it is fused).
  std::unordered_map<int64_t, std::vector<int64_t>> readers;  // buffer -> the calls (not views) that read it
  for (size_t ci = 0; ci < flow.calls.size(); ++ci) {
    const auto& call = flow.calls[ci];
    if (IsViewCall(graph.nodes[static_cast<size_t>(call.node)])) continue;
    for (int64_t id : call.inputs) {
      std::vector<int64_t>& r = readers[owner_of(id)];
      if (r.empty() || r.back() != static_cast<int64_t>(ci)) r.push_back(static_cast<int64_t>(ci));
    }
  }
  std::unordered_map<int64_t, bool> fused;
  std::vector<int64_t> at(flow.calls.size());
  for (size_t ci = flow.calls.size(); ci-- > 0;) {
    at[ci] = static_cast<int64_t>(ci);
    const auto& call = flow.calls[ci];
    if (fusion[ci] != Fusion::kElementwise || call.outputs.size() != 1) continue;
    const int64_t id = call.outputs.front();
    if (id < 0 || !made_by.count(id) || made_by[id] != static_cast<int64_t>(ci) || owner.count(id) ||
        returned.count(id))
      continue;
    auto r = readers.find(id);
    if (r == readers.end() || r->second.size() != 1) continue;
    const auto reader = static_cast<size_t>(r->second.front());
    if (fusion[reader] == Fusion::kNone) continue;
    if (graph.nodes[static_cast<size_t>(call.node)].phase == "forward" &&
        graph.nodes[static_cast<size_t>(flow.calls[reader].node)].phase == "backward")
      continue;
    fused[id] = true;
    at[ci] = at[reader];
  }
  std::unordered_map<int64_t, int64_t> buffer_last;  // buffer -> the last call that reads it or a view of it
  for (size_t ci = 0; ci < flow.calls.size(); ++ci)
    for (int64_t id : flow.calls[ci].inputs) {
      int64_t o = owner_of(id);
      buffer_last[o] = std::max(buffer_last.count(o) ? buffer_last[o] : 0, at[ci]);
    }
  auto counted = [&](int64_t id) {
    return made_by.count(id) && !owner.count(id) && !returned.count(id) && !fused.count(id);
  };
  std::vector<std::vector<int64_t>> dies_after(flow.calls.size());
  for (const auto& [id, ci] : made_by) {
    if (!counted(id)) continue;
    auto r = buffer_last.find(id);
    int64_t last = r == buffer_last.end() ? ci : std::max(ci, r->second);
    dies_after[static_cast<size_t>(last)].push_back(id);
  }
  int64_t live = 0;
  std::map<std::pair<std::string, int>, ProgramActivation> kept;  // by the line that made them
  for (size_t ci = 0; ci < flow.calls.size(); ++ci) {
    for (int64_t id : flow.calls[ci].outputs) {
      if (id < 0 || !counted(id) || made_by[id] != static_cast<int64_t>(ci)) continue;
      live += BytesOf(value[id]->shape);
    }
    out.estimate.temp_bytes = std::max(out.estimate.temp_bytes, live);
    for (int64_t id : dies_after[ci]) live -= BytesOf(value[id]->shape);
  }
  // Activations: buffers made in the forward and read (themselves or through a view) in the backward, each once.
  std::unordered_map<int64_t, bool> seen;
  for (size_t ci = 0; ci < flow.calls.size(); ++ci) {
    const Node& reader = graph.nodes[static_cast<size_t>(flow.calls[ci].node)];
    if (reader.phase != "backward") continue;
    for (int64_t read : flow.calls[ci].inputs) {
      int64_t id = owner_of(read);
      if (!counted(id) || seen.count(id)) continue;
      seen[id] = true;
      const Node& maker = graph.nodes[static_cast<size_t>(flow.calls[static_cast<size_t>(made_by[id])].node)];
      if (maker.phase != "forward") continue;
      ProgramActivation& a = kept[{maker.loc.file, maker.loc.line}];
      int64_t bytes = BytesOf(value[id]->shape);
      if (a.values == 0 || bytes > a.largest) a.op = maker.qualified_name(), a.loc = maker.loc, a.largest = bytes;
      a.bytes += bytes;
      ++a.values;
    }
  }
  for (auto& [k, a] : kept) out.activations.push_back(std::move(a));
  std::stable_sort(out.activations.begin(), out.activations.end(),
                   [](const ProgramActivation& a, const ProgramActivation& c) { return a.bytes > c.bytes; });

  if (!out.gaps.empty()) return out;
  if (!b.ok()) return b.status().WithContext("building the step program");
  out.module = std::shared_ptr<hlo::Module>(b.Build(b.Tuple(roots)));
  if (!aliases.empty())
    out.module->header_attributes.emplace_back("input_output_alias", fmt::format("{{ {} }}", fmt::join(aliases, ", ")));
  if (auto v = hlo::FindViolation(*out.module, hlo::VerifyOptions{hlo::ShapeCheckOptions{false}}))
    return Internal(fmt::format("the step program is not valid HLO: {}", hlo::DescribeViolation(*v)));
  return out;
}

namespace {

int64_t CountInstructions(const hlo::Module& m) {
  int64_t n = 0;
  for (const auto& c : m.computations()) n += static_cast<int64_t>(c->instructions().size());
  return n;
}

void Judge(ProgramFit& fit) {
  const compiler_probe::ProgramCompile& c = fit.compile;
  fit.device_memory_bytes = c.device_memory_bytes;
  if (c.outcome == compiler_probe::ProgramCompile::Outcome::kCompiled && c.has_memory) {
    fit.required_bytes = c.required_bytes;
  } else if (c.outcome == compiler_probe::ProgramCompile::Outcome::kRefused && c.memory_refusal) {
    fit.required_bytes = c.required_bytes;
    fit.fits = false;
    return;
  } else if (c.outcome == compiler_probe::ProgramCompile::Outcome::kUnsupported && fit.built && !fit.step.calls) {
    return;
  } else if (c.outcome == compiler_probe::ProgramCompile::Outcome::kUnsupported && fit.built) {
    // No compiler to ask: opprobe's own liveness estimate, labelled so. It is of the step on one device: split over
    // several, what one of them holds is the partitioner's to say, so whether it fits is not known.
    fit.required_bytes = fit.step.estimate.total_bytes();
    fit.estimated = true;
    if (c.devices > 1) return;
  } else {
    return;  // refused for another reason, or no verdict: whether it would fit is not known
  }
  if (fit.device_memory_bytes > 0 && fit.required_bytes > 0) fit.fits = fit.required_bytes <= fit.device_memory_bytes;
}

}  // namespace

ProgramFit FitProgram(const std::shared_ptr<const hlo::Module>& module, std::string what,
                      compiler_probe::Backend& backend, const compiler_probe::ProgramOptions& options) {
  ProgramFit fit;
  fit.what = std::move(what);
  fit.built = module != nullptr;
  if (!module) return fit;
  fit.instructions = CountInstructions(*module);
  fit.compile = backend.compile_program(*module, options);
  Judge(fit);
  return fit;
}

ProgramFit FitStep(BuiltStep step, compiler_probe::Backend& backend, const compiler_probe::ProgramOptions& options) {
  ProgramFit fit;
  fit.what = step.scope.empty() ? "the step" : "the " + step.scope;
  if (!step.module) {
    int64_t calls = 0;
    for (const auto& g : step.gaps) calls += g.calls;
    fit.not_built = fmt::format("{} call{} of the step cannot be part of one program (first: {} at {}: {})", calls,
                                calls == 1 ? "" : "s", step.gaps.empty() ? "?" : step.gaps.front().op,
                                step.gaps.empty() ? "?" : step.gaps.front().loc.ToString(),
                                step.gaps.empty() ? "?" : step.gaps.front().reason);
    fit.step = std::move(step);
    return fit;
  }
  std::shared_ptr<hlo::Module> module = std::move(step.module);
  fit.step = std::move(step);
  fit.built = true;
  fit.instructions = CountInstructions(*module);
  fit.compile = backend.compile_program(*module, options);
  Judge(fit);
  return fit;
}

}  // namespace opprobe::analyzer
