// `--parallel dp=N,fsdp=N,tp=N`: a built step split over devices the way a strategy splits it, by annotating the
// program's parameters and outputs with shardings (XLA's SPMD partitioner lays out the rest and inserts the
// collectives) and compiling it with as many partitions as the strategy uses devices.
//   dp    data parallel: every parameter, gradient and optimizer state replicated; the batch (each `data` input's
//         first dimension) split
//   fsdp  fully sharded: parameters, their gradients and optimizer state split along their first dimension (where it
//         divides), the batch split too
//   tp    Megatron-style tensor parallel for 2-D weights: column-split (output features) by default, row-split (input
//         features) for the layers that follow a column-split one (names such as o_proj, out_proj, down_proj, fc2,
//         c_proj, dense_4h_to_h, wo, w2, or a weight with fewer outputs than inputs); a column-split layer's bias split
//         with it
// The axes make one device mesh [dp, fsdp, tp]; their product is the number of devices.
#pragma once

#include <cstdint>
#include <string>

#include "analyzer/program/program.h"
#include "support/status.h"

namespace opprobe::analyzer {

struct Parallelism {
  int64_t dp = 1, fsdp = 1, tp = 1;
  int64_t devices() const { return dp * fsdp * tp; }
  std::string ToString() const;  // `fsdp=8`, `dp=2,tp=4`
};

// `dp=2,fsdp=4`: each axis at most once, each a positive count. kInvalidInput naming what is wrong.
Expected<Parallelism> ParseParallelism(const std::string& spec);

// Annotates `step.module` (built, not yet compiled) for the strategy. Nothing to do for one device.
Status ShardStep(BuiltStep& step, const Parallelism& p);

// Annotates `step.module` as the script shards it itself (torch_xla SPMD's xs.mark_sharding, recorded in the data
// flow with its mesh): each marked input as marked; a gradient or optimizer state of a marked parameter as its
// parameter; the rest replicated; updates as what they update. Nothing to do when the script marked nothing. A mark
// whose dimensions do not match its tensor is kInvalidInput.
Status ShardStepAsMarked(BuiltStep& step, const StepDataFlow& flow);

}  // namespace opprobe::analyzer
