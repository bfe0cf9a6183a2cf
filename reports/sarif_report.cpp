// SARIF 2.1.0: one result per unsupported aten call site, located at the user's source line so that
// code-scanning UIs annotate it. Paths under the working directory are relative to %SRCROOT%.
// Validated against schemas/third_party/sarif-2.1.0-subset.schema.json in the tests.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <tuple>

#include "hlo/probe_unit.h"
#include "opprobe_version.h"
#include "reports/report.h"
#include "reports/view.h"

namespace opprobe::reports {

using analyzer::AnalysisResult;

namespace {

struct Rule {
  const char* id;
  const char* name;
  const char* short_text;
  const char* full_text;
  const char* level;
};

// Indices are ruleIndex values.
constexpr Rule kRules[] = {
    {"opprobe/unsupported-op", "UnsupportedAtenOp", "aten op rejected by the backend",
     "An HLO instruction this aten op lowers to is rejected by the backend, so the model cannot run on it "
     "as written. The message names the instruction's reason; `opprobe lower` shows the HLO.",
     "error"},
    {"opprobe/no-lowering", "NoLowering", "opprobe cannot analyze these yet (aten op without an HLO lowering)",
     "opprobe has no lowering for this aten op (or its arguments), so whether the backend supports it is unknown. "
     "This is opprobe's gap, not the backend's verdict; the analysis is incomplete.",
     "warning"},
    {"opprobe/backend-error", "BackendError", "backend failed while probing the op",
     "The backend crashed, timed out or failed internally while compiling an instruction of this aten op.", "error"},
    {"opprobe/dynamic-shape", "DynamicShape", "aten op with a data-dependent output shape",
     "The output shape of this aten op depends on data; XLA backends need a bounded or static form.", "warning"},
    {"opprobe/custom-op", "CustomOp", "op outside aten without an XLA lowering",
     "A call outside the aten namespace (torchvision::nms, quantized::linear_dynamic, a torch.library op) has no "
     "XLA lowering: an XLA backend needs a custom call or a CPU fallback for it.",
     "error"},
    {"opprobe/partial-analysis", "PartialAnalysis", "the captured script failed: partial analysis",
     "The script raised or exited non-zero while it was captured; only the calls before that were analyzed.", "error"},
    {"opprobe/internal-error", "InternalError", "opprobe failed on this call (a bug in opprobe)",
     "opprobe's lowering of this aten op threw or built invalid HLO: a bug in opprobe, neither a gap nor the "
     "backend's verdict. The analysis is incomplete and no gate passes on it; please report it.",
     "error"},
};

// Percent-encodes what may not appear in a URI path (RFC 3986 unreserved, `/` and sub-delims kept).
std::string UriPath(const std::string& path) {
  std::string out;
  for (unsigned char c : ValidUtf8(path)) {
    if (std::isalnum(c) || std::string_view("-._~/!$&'()*+,;=:@").find(static_cast<char>(c)) != std::string_view::npos)
      out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

// artifactLocation for a recorded source path.
Json ArtifactLocation(const std::string& file, const std::string& cwd) {
  Json a;
  std::string rel = RelativeToCwd(file, cwd);
  if (!rel.empty() && rel[0] == '/') {
    a["uri"] = "file://" + UriPath(rel);
  } else {
    a["uri"] = UriPath(rel);
    a["uriBaseId"] = "%SRCROOT%";
  }
  return a;
}

}  // namespace

std::string RenderSarif(const AnalysisResult& result, const RenderOptions& options) {
  if (result.target_count() > 1) return RenderSarifTargets(result, options);
  Json rules = Json::array();
  for (const Rule& r : kRules) {
    Json rule;
    rule["id"] = r.id;
    rule["name"] = r.name;
    rule["shortDescription"] = {{"text", r.short_text}};
    rule["fullDescription"] = {{"text", r.full_text}};
    rule["defaultConfiguration"] = {{"level", r.level}};
    rule["help"] = {{"text", r.full_text}};
    rules.push_back(std::move(rule));
  }
  Json driver;
  driver["name"] = "opprobe";
  driver["version"] = OPPROBE_VERSION;
  driver["semanticVersion"] = OPPROBE_VERSION;
  driver["rules"] = std::move(rules);

  Json results = Json::array();
  auto add_result = [&](int rule, const std::string& message, const std::string& file, int line,
                        const std::string& module_path, const std::string& key, Json properties) {
    Json res;
    res["ruleId"] = kRules[rule].id;
    res["ruleIndex"] = rule;
    res["level"] = kRules[rule].level;
    res["message"] = {{"text", message}};
    std::string where = !file.empty() ? file : result.model;
    if (!where.empty()) {
      Json physical;
      physical["artifactLocation"] = ArtifactLocation(where, options.cwd);
      if (!file.empty() && line > 0) physical["region"] = {{"startLine", line}};
      Json location;
      location["physicalLocation"] = std::move(physical);
      if (!module_path.empty())
        location["logicalLocations"] = Json::array({{{"fullyQualifiedName", module_path}, {"kind", "module"}}});
      res["locations"] = Json::array({std::move(location)});
    }
    res["partialFingerprints"] = {{"opprobeResult/v1", hlo::Fnv1a64Hex(key)}};
    res["properties"] = std::move(properties);
    results.push_back(std::move(res));
  };

  if (result.partial()) {
    const auto& c = *result.capture;
    Json props;
    props["exit_status"] = c.exit_code;
    if (!c.exception_type.empty()) props["exception_type"] = c.exception_type;
    add_result(5, result.IncompleteReasons().front(), c.location.file, c.location.line, "",
               fmt::format("5|{}|{}", RelativeToCwd(c.location.file, options.cwd), c.exception_type), std::move(props));
  }
  for (const auto& u : UnsupportedOps(result)) {
    int rule = u.internal_error              ? 6
               : u.failure_at == "lowering"  ? 1
               : u.failure_at == "custom_op" ? 4
               : u.error                     ? 2
                                             : 0;
    std::string message =
        rule == 6 ? fmt::format("opprobe failed on {} ({}), a bug in opprobe: {}", u.kind, u.signature, u.reason)
        : rule == 1
            ? fmt::format("{}: {} ({}) has no HLO lowering: {}", kLoweringGapTitle, u.kind, u.signature, u.reason)
        : rule == 4 ? fmt::format("{}", u.reason)
                    : fmt::format("{} ({}) is not supported by {}: {}", u.kind, u.signature, u.failure_at, u.reason);
    if (!u.part_of.empty()) message += fmt::format(" (part of the lowering of {})", u.part_of);
    const std::string origin = CallOrigin(u);
    if (!origin.empty()) message += " (" + origin + ")";
    if (u.count > 1) message += fmt::format(" ({} calls)", u.count);
    if (std::string suggestion = VerifiedSuggestionText(u); !suggestion.empty()) message += "\n" + suggestion;
    Json props;
    props["aten_op"] = u.kind;
    if (!u.lib_place.empty()) props["library_place"] = u.lib_place;
    if (!u.forward_op.empty()) props["forward_call"] = ForwardCallJson(u);
    props["signature"] = u.signature;
    props["failureAt"] = u.failure_at;
    props["count"] = u.count;
    if (!u.part_of.empty()) props["part_of"] = u.part_of;
    if (!u.program.empty() && result.programs.size() > 1) props["program"] = u.program;
    if (!u.phase.empty()) props["phase"] = u.phase;
    Json instrs = Json::array();
    for (size_t p : u.failing_probes) {
      Json e;
      e["hlo_instruction"] = result.probes[p].signature;
      e["verdict"] = std::string(compiler_probe::VerdictKindName(result.probes[p].verdict.kind));
      e["reason"] = result.probes[p].verdict.reason;
      if (!result.probes[p].repro_path.empty()) e["repro"] = result.probes[p].repro_path;
      instrs.push_back(std::move(e));
    }
    props["hlo_instructions"] = std::move(instrs);
    add_result(rule, message, u.file, u.line, u.module_path,
               fmt::format("{}|{}|{}|{}|{}{}", rule, u.kind, u.signature, RelativeToCwd(u.file, options.cwd),
                           u.module_path, origin.empty() ? "" : "|" + origin),
               std::move(props));
  }
  // Dynamic-shape ops the backend accepted in their bounded form still deserve a warning.
  std::vector<const analyzer::OpRecord*> dynamic;
  for (const auto& op : result.ops)
    if (op.dynamic_shape && result.OpSupported(op)) dynamic.push_back(&op);
  std::stable_sort(dynamic.begin(), dynamic.end(), [](auto* a, auto* b) {
    return std::tie(a->op, a->loc.file, a->loc.line, a->signature) <
           std::tie(b->op, b->loc.file, b->loc.line, b->signature);
  });
  for (auto* op : dynamic) {
    Json props;
    props["aten_op"] = op->op;
    props["signature"] = op->signature;
    props["count"] = op->count;
    add_result(
        3, fmt::format("{} ({}) has a data-dependent output shape: {}", op->op, op->signature, op->note), op->loc.file,
        op->loc.line, op->module_path,
        fmt::format("3|{}|{}|{}|{}", op->op, op->signature, RelativeToCwd(op->loc.file, options.cwd), op->module_path),
        std::move(props));
  }

  Json run;
  run["tool"] = {{"driver", std::move(driver)}};
  if (!options.cwd.empty()) {
    std::string root = options.cwd;
    if (root.back() != '/') root += '/';
    run["originalUriBaseIds"] = {{"%SRCROOT%", {{"uri", "file://" + UriPath(root)}}}};
  }
  run["results"] = std::move(results);
  run["properties"] = {{"backend", result.backend_id},
                       {"backend_version", result.backend_version},
                       {"model", result.model},
                       {"complete", !result.incomplete()},
                       {"incomplete_reasons", result.IncompleteReasons()},
                       {"support_percentage", PercentLabel(result, result.SupportPercentage())},
                       {"aten_support_percentage", PercentLabel(result, result.AtenSupportPercentage())},
                       {"analyzed_percentage", PercentLabel(result, result.AnalyzedPercentage())}};

  Json log;
  log["$schema"] = "https://json.schemastore.org/sarif-2.1.0.json";
  log["version"] = "2.1.0";
  log["runs"] = Json::array({std::move(run)});
  return log.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace opprobe::reports
