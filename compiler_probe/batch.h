// Many probe units judged with one compile: a compiler's fixed cost per program (loading passes, scheduling, a
// ptxas run) is paid once per batch instead of once per unit. A batch the compiler accepts makes every unit in it
// supported; a refused (or crashed, or timed-out) batch is split in halves until each unit that is refused is
// judged alone, so every verdict, reason and message is the one a compile of that unit alone gives.
#pragma once

#include <cstddef>
#include <vector>

#include "compiler_probe/backend.h"
#include "hlo/instruction.h"

namespace opprobe::compiler_probe {

struct BatchStats {
  size_t compiles = 0;          // programs compiled (batches and single units)
  size_t batched_compiles = 0;  // of them, batches of two or more units
  size_t splits = 0;            // batches that did not compile as a whole and were split
  BatchStats& operator+=(const BatchStats& o) {
    compiles += o.compiles;
    batched_compiles += o.batched_compiles;
    splits += o.splits;
    return *this;
  }
};

// What every backend that batches asks of a unit before it shares a program with others (each backend adds its own
// conditions, Backend::batchable): an entry whose parameters are arrays (PJRT refuses a tuple parameter beside
// others), no unknown opcode, sharding or dynamic shape, and nothing that talks to the host or the runtime or is
// the compiler's own output (custom-call, infeed, outfeed, send, recv and their -done, rng-get-and-update-state,
// fusion).
bool MayShareAProgram(const hlo::Module& unit);

// One verdict per unit of `units` (all of which `backend.batchable()` accepts), in order: batches of at most
// `limit` units (backend.batch_limit() when 0), split on anything but a clean supported verdict. A supported
// unit's seconds are its share of its batch's compile time. Adds to `stats` when given.
std::vector<Verdict> ProbeBatched(Backend& backend, const std::vector<const hlo::Module*>& units, size_t limit = 0,
                                  BatchStats* stats = nullptr);

}  // namespace opprobe::compiler_probe
