// GitHub Actions workflow commands: `::error file=…,line=…,title=…::message` per unsupported call site
// (shown inline on the pull request's diff), a warning per accepted dynamic-shape op, and a notice with the
// percentages. Paths under the working directory (the checkout) are made relative to it.
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "reports/report.h"
#include "reports/view.h"

namespace opprobe::reports {

using analyzer::AnalysisResult;

namespace {

// Workflow-command escaping: the message escapes % CR LF; property values also : and ,.
std::string EscapeData(const std::string& s) {
  std::string out;
  for (char c : ValidUtf8(s)) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else out += c;
  }
  return out;
}

std::string EscapeProperty(const std::string& s) {
  std::string out;
  for (char c : EscapeData(s)) {
    if (c == ':') out += "%3A";
    else if (c == ',') out += "%2C";
    else out += c;
  }
  return out;
}

std::string Command(const char* level, const std::string& file, int line, const std::string& title,
                    const std::string& message) {
  std::string props;
  if (!file.empty()) {
    props += "file=" + EscapeProperty(file);
    if (line > 0) props += fmt::format(",line={}", line);
  }
  if (!title.empty()) props += (props.empty() ? "" : ",") + std::string("title=") + EscapeProperty(title);
  return fmt::format("::{}{}{}::{}\n", level, props.empty() ? "" : " ", props, EscapeData(message));
}

}  // namespace

std::string RenderGithub(const AnalysisResult& result, const RenderOptions& options) {
  if (result.target_count() > 1) return RenderGithubTargets(result, options);
  std::string out;
  if (result.partial()) {
    const auto& c = *result.capture;
    out += Command("error", RelativeToCwd(c.location.file, options.cwd), c.location.line, "opprobe: partial analysis",
                   result.IncompleteReasons().front());
  }
  auto unsupported = UnsupportedOps(result);
  for (const auto& u : unsupported) {
    // opprobe's own gaps are warnings in their own words: they are not the backend's verdict.
    bool gap = u.lowering_gap();
    bool custom = u.failure_at == "custom_op";
    bool internal = u.internal_error;
    std::string title = internal ? fmt::format("opprobe internal error on {}", u.kind)
                        : gap    ? fmt::format("opprobe cannot analyze {} yet", u.kind)
                        : custom ? fmt::format("opprobe: {} has no XLA lowering", u.kind)
                                 : fmt::format("opprobe: {} unsupported on {}", u.kind, u.failure_at);
    std::string message =
        internal ? fmt::format("{} ({}): a bug in opprobe (not a gap, not a device verdict): {}", u.kind, u.signature,
                               u.reason)
        : gap    ? fmt::format("{} ({}): {}: opprobe has no HLO lowering for it (not a device verdict): {}", u.kind,
                               u.signature, kLoweringGapTitle, u.reason)
        : custom ? fmt::format("{} ({}): {}", u.kind, u.signature, u.reason)
                 : fmt::format("{} ({}) is not supported by {}: {}", u.kind, u.signature, u.failure_at, u.reason);
    if (!u.part_of.empty()) message += fmt::format(" (part of the lowering of {})", u.part_of);
    if (u.count > 1) message += fmt::format(" ({} calls)", u.count);
    if (!u.module_path.empty()) message += " in module " + u.module_path;
    if (std::string origin = CallOrigin(u); !origin.empty()) message += " (" + origin + ")";
    if (u.failing_probes.size() > 0) {
      message += "\nrejected HLO instructions:";
      for (size_t p : u.failing_probes)
        message += "\n  " + result.probes[p].signature + ": " + result.probes[p].verdict.reason;
    }
    if (std::string suggestion = VerifiedSuggestionText(u); !suggestion.empty()) message += "\n" + suggestion;
    out += Command(gap ? "warning" : "error", RelativeToCwd(u.file, options.cwd), u.line, title, message);
  }
  std::vector<const analyzer::OpRecord*> dynamic;
  for (const auto& op : result.ops)
    if (op.dynamic_shape && result.OpSupported(op)) dynamic.push_back(&op);
  std::stable_sort(dynamic.begin(), dynamic.end(), [](auto* a, auto* b) {
    return std::tie(a->op, a->loc.file, a->loc.line, a->signature) <
           std::tie(b->op, b->loc.file, b->loc.line, b->signature);
  });
  for (auto* op : dynamic)
    out += Command("warning", RelativeToCwd(op->loc.file, options.cwd), op->loc.line,
                   fmt::format("opprobe: {} has a data-dependent shape", op->op),
                   fmt::format("{} ({}): {}", op->op, op->signature, op->note));
  for (const auto& r : result.IncompleteReasons())
    if (!result.partial() || r != result.IncompleteReasons().front()) out += Command("warning", "", 0, "opprobe", r);
  size_t gaps = 0;
  for (const auto& u : unsupported) gaps += u.lowering_gap();
  out += Command("notice", "", 0, "opprobe",
                 fmt::format("{}: {} of HLO instructions supported on {} ({} of aten calls, {} analyzed); {} "
                             "unsupported entr{}, {} of them opprobe cannot analyze yet",
                             result.model, PercentLabel(result, result.SupportPercentage()), result.backend_id,
                             PercentLabel(result, result.AtenSupportPercentage()),
                             PercentLabel(result, result.AnalyzedPercentage()), unsupported.size(),
                             unsupported.size() == 1 ? "y" : "ies", gaps));
  return out;
}

}  // namespace opprobe::reports
