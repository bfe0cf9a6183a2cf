#include "analyzer/loaders/torch_xla_steps.h"

#include <fmt/format.h>

#include <map>
#include <regex>
#include <set>
#include <string_view>

#include "support/numbers.h"

namespace opprobe::analyzer {

namespace {

struct Frame {
  std::string function;
  std::string file;
  int line = 0;
};

struct Execution {
  std::vector<Frame> frames;      // innermost first
  std::string layout;             // the module's entry_computation_layout (its parameters and results)
  std::vector<std::string> body;  // instruction lines
  std::string hash;
};

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// `  mark_step (/path/xla_model.py:1032)`.
std::optional<Frame> ParseFrame(std::string_view line) {
  line = Trim(line);
  auto open = line.rfind(" (");
  if (open == std::string_view::npos || line.empty() || line.back() != ')') return std::nullopt;
  std::string_view where = line.substr(open + 2, line.size() - open - 3);
  auto colon = where.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto number = support::ParseInteger<int>(where.substr(colon + 1));
  if (!number) return std::nullopt;  // "(file:line)" with a line number, or not a frame
  Frame f;
  f.function = std::string(line.substr(0, open));
  f.file = std::string(where.substr(0, colon));
  f.line = *number;
  return f;
}

std::vector<Execution> Executions(const std::string& text) {
  std::vector<Execution> out;
  Execution cur;
  enum { kNone, kFrames, kGraph } state = kNone;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (StartsWith(line, "TensorsGraphInfo:")) {
      cur = Execution();
      state = kFrames;
      continue;
    }
    if (state == kFrames) {
      if (Trim(line).empty() || StartsWith(line, "Root Hashes")) {
        state = kNone;
      } else if (auto f = ParseFrame(line)) {
        cur.frames.push_back(std::move(*f));
      }
      continue;
    }
    if (StartsWith(line, "## BEGIN_GRAPH")) {
      state = kGraph;
      cur.body.clear();
      cur.layout.clear();
      continue;
    }
    if (state == kGraph) {
      if (StartsWith(line, "Graph Hash:")) {
        cur.hash = std::string(Trim(line.substr(11)));
      } else if (StartsWith(line, "## END_GRAPH")) {
        if (cur.hash.empty()) {  // an older torch_xla without the hash: the module's text stands for it
          std::string all = cur.layout;
          for (const auto& b : cur.body) all += b;
          cur.hash = fmt::format("{:x}", std::hash<std::string>()(all));
        }
        out.push_back(cur);
        state = kNone;
      } else if (StartsWith(line, "HloModule ")) {
        auto at = line.find("entry_computation_layout=");
        cur.layout = at == std::string_view::npos ? "" : std::string(line.substr(at));
      } else if (line.find(" = ") != std::string_view::npos) {
        cur.body.emplace_back(line);
      }
    }
    if (end == text.size()) break;
  }
  return out;
}

bool LibraryFile(const std::string& f) {
  return f.empty() || f.find("site-packages/") != std::string::npos || f.find("dist-packages/") != std::string::npos ||
         StartsWith(f, "<") || f.find("opprobe_capture/") != std::string::npos ||
         f.find("/lib/python3") != std::string::npos;
}

std::string Base(const std::string& f) {
  auto slash = f.rfind('/');
  return slash == std::string::npos ? f : f.substr(slash + 1);
}

// An instruction line as compared across graphs: its shape and opcode (`f32[4,16]{1,0} dot`), without its name.
std::string Shape(const std::string& line) {
  auto eq = line.find(" = ");
  auto paren = line.find('(', eq == std::string::npos ? 0 : eq + 3);
  if (eq == std::string::npos || paren == std::string::npos) return line;
  return line.substr(eq + 3, paren - eq - 3);
}

// `aten::addmm at functional.py 28` from an instruction's metadata (XLA_HLO_DEBUG), or "".
void Metadata(const std::string& line, std::string* op, SourceLoc* loc) {
  static const std::regex kOp("op_type=\"([A-Za-z0-9_]+?)__([A-Za-z0-9_.]+)\"");
  static const std::regex kFile("source_file=\"([^\"]*)\"");
  static const std::regex kLine("source_line=([0-9]+)");
  std::smatch m;
  if (std::regex_search(line, m, kOp)) *op = m[1].str() + "::" + m[2].str();
  if (std::regex_search(line, m, kFile)) loc->file = m[1].str();
  if (std::regex_search(line, m, kLine)) loc->line = support::ParseInteger<int>(m[1].str()).value_or(0);
}

}  // namespace

std::optional<StepGraphs> TorchXlaDumpSteps(const std::string& text, const std::vector<HostFallback>& fallbacks,
                                            const std::string& version) {
  std::vector<Execution> runs = Executions(text);
  if (runs.empty()) return std::nullopt;
  StepGraphs s;
  s.model = fmt::format("torch_xla {} (its own graphs, XLA_SAVE_TENSORS_FILE)", version.empty() ? "?" : version);
  s.executed_graphs = static_cast<int64_t>(runs.size());
  struct Trigger {
    std::string kind, op;
    SourceLoc loc;
  };
  auto trigger_of = [&](const Execution& e) {
    Trigger t;
    for (const auto& f : e.frames)
      if (!LibraryFile(f.file)) {
        t.loc = SourceLoc{f.file, f.line};
        break;
      }
    for (const char* name : {"mark_step", "sync"})  // xm.mark_step calls torch_xla.sync: the outer name first
      for (const auto& f : e.frames)
        if (f.file.find("torch_xla/") != std::string::npos && f.function == name) {
          t.kind = "step_end";
          t.op = f.function == "sync" ? "torch_xla.sync" : "xm.mark_step";
          return t;
        }
    t.kind = "value_read";
    t.op = "a value read";
    for (const auto& fb : fallbacks)
      if (fb.line == t.loc.line && (fb.file == t.loc.file || Base(fb.file) == Base(t.loc.file))) {
        t.op = fb.op;
        if (fb.op != "aten::_local_scalar_dense") t.kind = "cpu_fallback";
        break;
      }
    return t;
  };
  // What a cut was: `a CPU fallback (aten::nonzero) at train.py:37`.
  auto cut = [](const Trigger& t) {
    const std::string where = fmt::format("{}:{}", Base(t.loc.file), t.loc.line);
    if (t.kind == "cpu_fallback") return fmt::format("a CPU fallback ({}) at {}", t.op, where);
    return fmt::format("a value read on the host at {} (.item(), printing a tensor, a Python branch on one)", where);
  };
  std::map<std::string, int64_t> graph_of;  // hash -> distinct graph number
  std::vector<const Execution*> firsts;
  std::vector<Trigger> first_triggers;
  std::map<std::tuple<std::string, std::string, std::string, int>, std::pair<StepGraphs::Cut, std::set<int64_t>>>
      cuts_at;
  int64_t step = 0;
  for (const auto& e : runs) {
    const Trigger t = trigger_of(e);
    auto [it, is_new] = graph_of.emplace(e.hash, static_cast<int64_t>(firsts.size()));
    if (is_new) {
      firsts.push_back(&e);
      first_triggers.push_back(t);
      if (it->second > 0) {
        // The closest earlier graph: the longest common prefix of instructions (shape and opcode).
        size_t best = 0, best_n = 0;
        for (size_t k = 0; k + 1 < firsts.size(); ++k) {
          size_t n = 0;
          const auto& a = firsts[k]->body;
          while (n < a.size() && n < e.body.size() && Shape(a[n]) == Shape(e.body[n])) ++n;
          if (k == 0 || n > best_n) best = k, best_n = n;
        }
        StepGraphs::Recompilation r;
        r.step = step;
        r.graph = it->second;
        r.trigger_kind = t.kind;
        r.trigger_op = t.op;
        r.trigger_loc = t.loc;
        const Execution& old = *firsts[best];
        if (best_n < e.body.size()) {
          Metadata(e.body[best_n], &r.op, &r.loc);
          if (r.op.empty()) r.op = "(an instruction without metadata)";
          r.after = Shape(e.body[best_n]);
          if (best_n < old.body.size()) r.before = Shape(old.body[best_n]);
        }
        const Trigger& ot = first_triggers[best];
        auto params = [](const std::string& layout) { return layout.substr(0, layout.find(")->")); };
        if (t.kind == "step_end" && ot.kind != "step_end") r.cause = "the rest of the step after " + cut(ot);
        else if (t.kind != "step_end" && ot.kind == "step_end") r.cause = cut(t) + " cut the graph";
        else if (params(e.layout) != params(old.layout)) r.cause = "an input's shape changed";
        else r.cause = "the graph's calls differ (a size or value baked into the graph, or another code path)";
        s.recompilations.push_back(std::move(r));
      }
    }
    if (t.kind != "step_end") {
      auto& [c, graphs] = cuts_at[{t.kind, t.op, t.loc.file, t.loc.line}];
      c.kind = t.kind;
      c.op = t.op;
      c.loc = t.loc;
      ++c.count;
      graphs.insert(it->second);
    } else {
      ++step;
    }
  }
  s.steps = step;
  s.distinct_graphs = static_cast<int64_t>(firsts.size());
  for (auto& [key, value] : cuts_at) {
    value.first.extra_graphs = static_cast<int64_t>(value.second.size());
    s.cuts.push_back(value.first);
  }
  return s;
}

}  // namespace opprobe::analyzer
