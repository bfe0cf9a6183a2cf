#include "compiler_probe/batch.h"

#include <algorithm>
#include <chrono>

namespace opprobe::compiler_probe {
namespace {

Verdict ProbeAlone(Backend& backend, const hlo::Module& unit, BatchStats& stats) {
  ++stats.compiles;
  auto start = std::chrono::steady_clock::now();
  Verdict v = backend.probe(unit);
  if (v.seconds == 0) v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return v;
}

// Judges units [lo, hi) of `units` into `out`.
void Judge(Backend& backend, const std::vector<const hlo::Module*>& units, size_t lo, size_t hi,
           std::vector<Verdict>& out, BatchStats& stats) {
  if (hi - lo == 1) {
    out[lo] = ProbeAlone(backend, *units[lo], stats);
    return;
  }
  std::vector<const hlo::Module*> part(units.begin() + static_cast<std::ptrdiff_t>(lo),
                                       units.begin() + static_cast<std::ptrdiff_t>(hi));
  ++stats.compiles;
  ++stats.batched_compiles;
  auto start = std::chrono::steady_clock::now();
  std::optional<std::vector<Verdict>> verdicts = backend.probe_batch(part);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (verdicts && verdicts->size() == part.size()) {
    for (size_t i = lo; i < hi; ++i) {
      out[i] = std::move((*verdicts)[i - lo]);
      out[i].seconds = seconds / static_cast<double>(hi - lo);
    }
    return;
  }
  // The batch's own compile time is spent on no one unit: it is not in any verdict's seconds.
  ++stats.splits;
  size_t mid = lo + (hi - lo) / 2;
  Judge(backend, units, lo, mid, out, stats);
  Judge(backend, units, mid, hi, out, stats);
}

}  // namespace

bool MayShareAProgram(const hlo::Module& unit) {
  if (!unit.entry() || !unit.entry()->root()) return false;
  for (const auto* p : unit.entry()->parameters())
    if (!p->shape.IsArray()) return false;
  for (const auto& comp : unit.computations())
    for (const auto& in : comp->instructions()) {
      if (!in->unknown_opcode.empty() || in->sharding || in->shape.is_dynamic()) return false;
      switch (in->opcode) {
        case hlo::Opcode::kCustomCall:
        case hlo::Opcode::kInfeed:
        case hlo::Opcode::kOutfeed:
        case hlo::Opcode::kSend:
        case hlo::Opcode::kSendDone:
        case hlo::Opcode::kRecv:
        case hlo::Opcode::kRecvDone:
        case hlo::Opcode::kRngGetAndUpdateState:
        case hlo::Opcode::kFusion: return false;
        default: break;
      }
    }
  return true;
}

std::vector<Verdict> ProbeBatched(Backend& backend, const std::vector<const hlo::Module*>& units, size_t limit,
                                  BatchStats* stats) {
  BatchStats local;
  BatchStats& s = stats ? *stats : local;
  if (limit == 0) limit = backend.batch_limit();
  limit = std::max<size_t>(limit, 1);
  std::vector<Verdict> out(units.size());
  for (size_t lo = 0; lo < units.size(); lo += limit)
    Judge(backend, units, lo, std::min(units.size(), lo + limit), out, s);
  return out;
}

}  // namespace opprobe::compiler_probe
