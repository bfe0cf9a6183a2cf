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
  std::vector<bool> supported(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) supported[i] = OpSupported(ops[i]);
  for (const auto& op : ops)
    if (op.part_of >= 0 && !OpSupported(op)) supported[static_cast<size_t>(op.part_of)] = false;
  int64_t total = 0, ok = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].part_of >= 0) continue;
    total += ops[i].count;
    if (supported[i]) ok += ops[i].count;
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
