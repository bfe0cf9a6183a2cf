#include "reports/diff.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "support/file_io.h"
#include "support/quote.h"

namespace opprobe::reports {

namespace {

// Checks one report's structure, stopping at the first problem; messages name the JSON path.
class Checker {
 public:
  explicit Checker(std::string name) : name_(std::move(name)) {}
  bool ok() const { return status_.ok(); }
  Status status() const { return status_; }

  bool Fail(const std::string& path, const std::string& what) {
    if (status_.ok())
      status_ = InvalidInput(support::OneLine(fmt::format("{}: {}: {}{}", name_, path, what, version_note_), 1000));
    return false;
  }
  // Said after every failure: the report's version, when it is not the one this opprobe writes.
  void SetVersionNote(std::string note) { version_note_ = std::move(note); }
  bool IsObject(const Json& j, const std::string& path) { return j.is_object() || Fail(path, "expected an object"); }
  bool IsArray(const Json& j, const std::string& path) { return j.is_array() || Fail(path, "expected an array"); }
  bool IsString(const Json& j, const std::string& path) { return j.is_string() || Fail(path, "expected a string"); }
  bool IsInteger(const Json& j, const std::string& path) {
    return j.is_number_integer() || Fail(path, "expected an integer");
  }
  // A required member of an object.
  const Json* Member(const Json& obj, const std::string& key, const std::string& path) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      Fail(path, fmt::format("missing \"{}\"", key));
      return nullptr;
    }
    return &*it;
  }
  bool IsPercent(const Json& j, const std::string& path) {
    if (!IsString(j, path)) return false;
    std::string s = j.get<std::string>();
    char* end = nullptr;
    if (s.size() < 2 || s.back() != '%')
      return Fail(path, fmt::format("expected a percentage like \"60.00%\", got \"{}\"", s));
    std::string num = s.substr(0, s.size() - 1);
    double v = std::strtod(num.c_str(), &end);
    if (end != num.c_str() + num.size() || v < 0 || v > 100)
      return Fail(path, fmt::format("expected a percentage like \"60.00%\", got \"{}\"", s));
    return true;
  }

 private:
  std::string name_;
  std::string version_note_;
  Status status_;
};

// A member, or null when `obj` is not an object or lacks it (iterating null visits nothing).
const Json& Get(const Json& obj, const char* key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

double ParsePercent(const Json& j) {
  if (!j.is_string()) return 0;
  std::string s = j.get<std::string>();
  if (!s.empty() && s.back() == '%') s.pop_back();
  return std::strtod(s.c_str(), nullptr);
}

std::string Str(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

struct OpInfo {
  std::set<std::string> calls;
  std::string reason;
};
using OpMap = std::map<std::pair<std::string, std::string>, OpInfo>;  // (kind, signature)

OpMap UnsupportedOpMap(const Json& report) {
  OpMap out;
  for (const auto& e : Get(Get(report, "unsupported_operators"), "aten")) {
    auto& info = out[{Str(e, "kind"), Str(e, "signature")}];
    std::string call = Str(e, "call");
    if (!call.empty()) info.calls.insert(call);
    if (info.reason.empty()) info.reason = Str(e, "reason");
  }
  return out;
}

std::set<std::string> SupportedOps(const Json& report) {
  std::set<std::string> out;
  for (const auto& [op, count] : Get(Get(report, "supported_operators"), "aten").items()) out.insert(op);
  return out;
}

bool HasXla(const Json& report) {
  return Get(report, "unsupported_operators").contains("xla") && Get(report, "supported_operators").contains("xla");
}

struct InstrInfo {
  std::set<std::string> ops;
  std::string reason;
};

std::map<std::string, InstrInfo> UnsupportedInstrMap(const Json& report) {
  std::map<std::string, InstrInfo> out;
  for (const auto& e : Get(Get(report, "unsupported_operators"), "xla")) {
    auto& info = out[Str(e, "hlo_instruction")];
    std::string op = Str(e, "aten_op");
    if (!op.empty()) info.ops.insert(op);
    if (info.reason.empty()) info.reason = Str(e, "reason");
  }
  return out;
}

std::set<std::string> SupportedInstr(const Json& report) {
  std::set<std::string> out;
  for (const auto& s : Get(Get(report, "supported_operators"), "xla"))
    if (s.is_string()) out.insert(s.get<std::string>());
  return out;
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string OpLine(const ReportDiff::OpChange& c) {
  std::string line = fmt::format("  - {} ({})", c.kind, c.signature.empty() ? "?" : c.signature);
  if (!c.calls.empty()) line += " at " + Join(c.calls, ", ");
  if (!c.reason.empty()) line += ": " + c.reason;
  if (c.allowed) line += " [allowed]";
  return line;
}

}  // namespace

Status CheckReport(const Json& report, const std::string& name) {
  Checker c(name);
  if (!report.is_object()) return InvalidInput(name + ": not an opprobe report (not a JSON object)");
  if (!report.contains("schema_version")) {
    if (report.contains("torch_neuronx_version") || report.contains("neuronx_cc_version"))
      return InvalidInput(name + ": a Neuron analyze result.json, not an opprobe report (no schema_version)");
    return InvalidInput(name + ": not an opprobe report (no schema_version)");
  }
  if (!report.contains("opprobe_version")) return InvalidInput(name + ": not an opprobe report (no opprobe_version)");
  const Json& sv = report["schema_version"];
  if (!sv.is_number_integer() || sv.get<int64_t>() < 1)
    return InvalidInput(name + ": not an opprobe report (schema_version is not a positive integer)");
  // A report of another version is read by its fields, not refused by its number: what the comparison needs is
  // checked below, member by member, and a report that lacks one says which, and its version.
  const int64_t version = sv.get<int64_t>();
  if (version != kSchemaVersion) c.SetVersionNote(fmt::format(" (a schema_version {} report)", version));

  if (const Json* p = c.Member(report, "support_percentage", "/")) c.IsPercent(*p, "/support_percentage");
  if (c.ok() && report.contains("aten_support_percentage"))
    c.IsPercent(report["aten_support_percentage"], "/aten_support_percentage");
  const Json* sup = c.ok() ? c.Member(report, "supported_operators", "/") : nullptr;
  if (sup && c.IsObject(*sup, "/supported_operators")) {
    if (const Json* aten = c.Member(*sup, "aten", "/supported_operators");
        aten && c.IsObject(*aten, "/supported_operators/aten"))
      for (const auto& [op, count] : aten->items())
        if (!c.IsInteger(count, "/supported_operators/aten/" + op)) break;
    if (c.ok() && sup->contains("xla") && c.IsArray((*sup)["xla"], "/supported_operators/xla")) {
      size_t i = 0;
      for (const auto& s : (*sup)["xla"])
        if (!c.IsString(s, fmt::format("/supported_operators/xla/{}", i++))) break;
    }
  }
  const Json* uns = c.ok() ? c.Member(report, "unsupported_operators", "/") : nullptr;
  if (uns && c.IsObject(*uns, "/unsupported_operators")) {
    if (const Json* aten = c.Member(*uns, "aten", "/unsupported_operators");
        aten && c.IsArray(*aten, "/unsupported_operators/aten")) {
      for (size_t i = 0; i < aten->size() && c.ok(); ++i) {
        std::string path = fmt::format("/unsupported_operators/aten/{}", i);
        const Json& e = (*aten)[i];
        if (!c.IsObject(e, path)) break;
        if (const Json* k = c.Member(e, "kind", path)) c.IsString(*k, path + "/kind");
        for (const char* key : {"call", "reason", "signature", "failureAt"})
          if (c.ok() && e.contains(key)) c.IsString(e[key], path + "/" + key);
      }
    }
    if (c.ok() && uns->contains("xla") && c.IsArray((*uns)["xla"], "/unsupported_operators/xla")) {
      const Json& xla = (*uns)["xla"];
      for (size_t i = 0; i < xla.size() && c.ok(); ++i) {
        std::string path = fmt::format("/unsupported_operators/xla/{}", i);
        const Json& e = xla[i];
        if (!c.IsObject(e, path)) break;
        if (const Json* h = c.Member(e, "hlo_instruction", path)) c.IsString(*h, path + "/hlo_instruction");
        for (const char* key : {"aten_op", "reason", "call"})
          if (c.ok() && e.contains(key)) c.IsString(e[key], path + "/" + key);
      }
    }
  }
  return c.status();
}

Expected<Json> LoadReport(const std::string& path) {
  OPPROBE_ASSIGN_OR_RETURN(std::string text, io::ReadFile(path));
  Json report;
  try {
    report = Json::parse(text);
  } catch (const Json::parse_error& e) {
    // Locate the byte offset as line:column.
    size_t line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    if (text.empty()) return InvalidInput(fmt::format("{}: not an opprobe report (empty file)", path));
    return InvalidInput(
        fmt::format("{}: not an opprobe report (not JSON: syntax error at line {}:{})", path, line, col));
  } catch (const Json::exception& e) {  // out_of_range (a number like 1e999) and the like: never escape
    return InvalidInput(
        fmt::format("{}: not an opprobe report (unreadable JSON: {})", path, support::OneLine(e.what())));
  }
  OPPROBE_RETURN_IF_ERROR(CheckReport(report, path));
  return report;
}

bool IsAllowed(const std::string& aten_op, const std::vector<std::string>& allow) {
  for (const auto& a : allow)
    if (a == aten_op || "aten::" + a == aten_op) return true;
  return false;
}

bool ReportDiff::Regression() const { return !RegressionReasons().empty(); }

std::vector<std::string> ReportDiff::RegressionReasons() const {
  std::vector<std::string> out;
  for (const auto& c : newly_unsupported) {
    if (c.allowed) continue;
    out.push_back(fmt::format(
        "{} ({}) {}unsupported{}{}", c.kind, c.signature, c.was_supported ? "was supported, now " : "newly ",
        c.calls.empty() ? "" : " at " + Join(c.calls, ", "), c.reason.empty() ? "" : ": " + c.reason));
  }
  for (const auto& c : newly_unsupported_instructions) {
    if (c.allowed) continue;
    out.push_back(fmt::format("HLO instruction `{}` ({}) {}unsupported", c.signature, Join(c.aten_ops, ", "),
                              c.was_supported ? "was supported, now " : "newly "));
  }
  if (percentage_dropped)
    out.push_back(
        fmt::format("support percentage dropped from {} to {}", FormatPercent(old_pct), FormatPercent(new_pct)));
  return out;
}

ReportDiff DiffReports(const Json& old_report, const Json& new_report, const DiffOptions& options) {
  ReportDiff d;
  d.old_backend = Str(old_report, "backend");
  d.new_backend = Str(new_report, "backend");
  d.old_backend_version = Str(old_report, "backend_version");
  d.new_backend_version = Str(new_report, "backend_version");
  d.old_percentage = Str(old_report, "support_percentage");
  d.new_percentage = Str(new_report, "support_percentage");
  d.old_aten_percentage = Str(old_report, "aten_support_percentage");
  d.new_aten_percentage = Str(new_report, "aten_support_percentage");
  d.old_pct = RoundPercent(ParsePercent(Get(old_report, "support_percentage")));
  d.new_pct = options.new_percentage ? RoundPercent(*options.new_percentage)
                                     : RoundPercent(ParsePercent(Get(new_report, "support_percentage")));
  d.percentage_dropped = d.new_pct + 1e-9 < d.old_pct;

  OpMap old_uns = UnsupportedOpMap(old_report), new_uns = UnsupportedOpMap(new_report);
  std::set<std::string> old_sup = SupportedOps(old_report), new_sup = SupportedOps(new_report);
  auto to_change = [&](const std::pair<std::string, std::string>& key, const OpInfo& info) {
    ReportDiff::OpChange c;
    c.kind = key.first;
    c.signature = key.second;
    c.calls.assign(info.calls.begin(), info.calls.end());
    c.reason = info.reason;
    c.allowed = IsAllowed(c.kind, options.allow);
    return c;
  };
  for (const auto& [key, info] : new_uns) {
    if (old_uns.count(key)) continue;
    auto c = to_change(key, info);
    c.was_supported = old_sup.count(key.first) > 0;
    d.newly_unsupported.push_back(std::move(c));
  }
  for (const auto& [key, info] : old_uns) {
    if (new_uns.count(key)) continue;
    auto c = to_change(key, info);
    c.was_supported = old_sup.count(key.first) > 0;
    (new_sup.count(key.first) ? d.fixed : d.gone).push_back(std::move(c));
  }

  std::set<std::string> old_used = old_sup, new_used = new_sup;
  for (const auto& [key, info] : old_uns) old_used.insert(key.first);
  for (const auto& [key, info] : new_uns) new_used.insert(key.first);
  for (const auto& op : new_used)
    if (!old_used.count(op)) d.ops_added.push_back(op);
  for (const auto& op : old_used)
    if (!new_used.count(op)) d.ops_removed.push_back(op);

  d.instructions_compared = HasXla(old_report) && HasXla(new_report);
  if (d.instructions_compared) {
    auto old_ui = UnsupportedInstrMap(old_report), new_ui = UnsupportedInstrMap(new_report);
    auto old_si = SupportedInstr(old_report), new_si = SupportedInstr(new_report);
    for (const auto& [sig, info] : new_ui) {
      if (old_ui.count(sig)) continue;
      ReportDiff::InstructionChange c;
      c.signature = sig;
      c.aten_ops.assign(info.ops.begin(), info.ops.end());
      c.reason = info.reason;
      c.was_supported = old_si.count(sig) > 0;
      c.allowed = !c.aten_ops.empty();
      for (const auto& op : c.aten_ops) c.allowed = c.allowed && IsAllowed(op, options.allow);
      d.newly_unsupported_instructions.push_back(std::move(c));
    }
    for (const auto& [sig, info] : old_ui) {
      if (new_ui.count(sig) || !new_si.count(sig)) continue;
      ReportDiff::InstructionChange c;
      c.signature = sig;
      c.aten_ops.assign(info.ops.begin(), info.ops.end());
      c.reason = info.reason;
      d.fixed_instructions.push_back(std::move(c));
    }
  }
  return d;
}

std::string FormatDiff(const ReportDiff& d, const std::string& old_name, const std::string& new_name) {
  std::string out = fmt::format("opprobe diff {} -> {}\n", old_name, new_name);
  // What was compared with what: another backend, or the same one at another version (a compiler upgrade, whose
  // newly unsupported entries below are what the new version newly refuses, and the now supported ones what it
  // newly accepts).
  if (d.old_backend != d.new_backend) out += fmt::format("backend: {} -> {}\n", d.old_backend, d.new_backend);
  else if (d.old_backend_version != d.new_backend_version)
    out += fmt::format("backend: {}, version changed:\n  old: {}\n  new: {}\n", d.new_backend, d.old_backend_version,
                       d.new_backend_version);
  double delta = d.new_pct - d.old_pct;
  out += fmt::format("support: {} -> {} ({}{:.2f})\n", FormatPercent(d.old_pct), FormatPercent(d.new_pct),
                     delta >= 0 ? "+" : "", delta);
  if (!d.old_aten_percentage.empty() || !d.new_aten_percentage.empty())
    out += fmt::format("aten support: {} -> {}\n", d.old_aten_percentage.empty() ? "?" : d.old_aten_percentage,
                       d.new_aten_percentage.empty() ? "?" : d.new_aten_percentage);
  auto section = [&](const char* title, const std::vector<ReportDiff::OpChange>& list) {
    if (list.empty()) return;
    out += fmt::format("{} ({}):\n", title, list.size());
    for (const auto& c : list) out += OpLine(c) + "\n";
  };
  section("newly unsupported aten ops", d.newly_unsupported);
  section("now supported aten ops", d.fixed);
  section("unsupported aten ops no longer used", d.gone);
  auto instr_section = [&](const char* title, const std::vector<ReportDiff::InstructionChange>& list) {
    if (list.empty()) return;
    out += fmt::format("{} ({}):\n", title, list.size());
    for (const auto& c : list)
      out += fmt::format("  - {} [{}]{}{}\n", c.signature, Join(c.aten_ops, ", "),
                         c.reason.empty() ? "" : ": " + c.reason, c.allowed ? " [allowed]" : "");
  };
  instr_section("newly unsupported HLO instructions", d.newly_unsupported_instructions);
  instr_section("now supported HLO instructions", d.fixed_instructions);
  if (!d.instructions_compared)
    out += "HLO instructions not compared (a report was written with --verbosity 2; use --verbosity 1 or 0)\n";
  if (!d.ops_added.empty()) out += "aten ops added: " + Join(d.ops_added, ", ") + "\n";
  if (!d.ops_removed.empty()) out += "aten ops removed: " + Join(d.ops_removed, ", ") + "\n";
  auto reasons = d.RegressionReasons();
  if (reasons.empty()) {
    out += "result: no regression\n";
  } else {
    out += fmt::format("result: REGRESSION ({})\n", reasons.size());
    for (const auto& r : reasons) out += "  * " + r + "\n";
  }
  return out;
}

}  // namespace opprobe::reports
