#include "analyzer/driver/result.h"

namespace opprobe::analyzer {

bool AnalysisResult::OpSupported(const OpRecord& op) const {
  if (op.lowering != OpRecord::Lowering::kOk) return false;
  for (size_t p : op.probes)
    if (!probes[p].verdict.supported()) return false;
  return true;
}

double AnalysisResult::SupportPercentage() const {
  int64_t total = 0, ok = 0;
  for (const auto& op : ops) {
    if (op.lowering != OpRecord::Lowering::kOk) {
      total += op.count;
      continue;
    }
    for (size_t p : op.probes) {
      total += op.count;
      if (probes[p].verdict.supported()) ok += op.count;
    }
  }
  return total == 0 ? 100.0 : 100.0 * static_cast<double>(ok) / static_cast<double>(total);
}

double AnalysisResult::AtenSupportPercentage() const {
  int64_t total = 0, ok = 0;
  for (const auto& op : ops) {
    total += op.count;
    if (OpSupported(op)) ok += op.count;
  }
  return total == 0 ? 100.0 : 100.0 * static_cast<double>(ok) / static_cast<double>(total);
}

std::string AnalysisResult::FailureReason(const OpRecord& op) const {
  if (op.lowering != OpRecord::Lowering::kOk) return op.lowering_error;
  for (size_t p : op.probes)
    if (!probes[p].verdict.supported()) return probes[p].verdict.reason;
  return "";
}

std::string AnalysisResult::FailureAt(const OpRecord& op) const {
  return op.lowering != OpRecord::Lowering::kOk ? "lowering" : backend_id;
}

}  // namespace opprobe::analyzer
