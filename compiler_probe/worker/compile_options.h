// The compile options a probe unit needs (xla.CompileOptionsProto, serialized by hand: opprobe links no XLA
// protos), so that a collective is compiled with as many replicas as its groups name and a sharded instruction
// with SPMD partitioning over as many partitions as its sharding names, instead of being misconfigured
// (research/deviceless-compilers.md: a collective whose groups exceed num_replicas fails with an internal
// RET_CHECK, a configuration error of the caller, not a verdict).
#pragma once

#include <cstdint>
#include <string>

#include "hlo/instruction.h"

namespace opprobe::compiler_probe::worker {

struct CompileConfig {
  int64_t replicas = 1;
  int64_t partitions = 1;
  bool spmd = false;    // use_spmd_partitioning (set when partitions > 1)
  bool shardy = false;  // use_shardy_partitioner: the module carries Shardy (named) shardings
  int64_t devices() const { return replicas * partitions; }
  bool operator==(const CompileConfig&) const = default;
};

// Replicas from the largest device id any collective names (replica groups, iota lists, source-target pairs);
// partitions from the devices its shardings tile over (a maximal sharding's device id + 1 at least).
CompileConfig CompileConfigFor(const hlo::Module& unit);
// A whole program's: CompileConfigFor's, or, when a strategy splits it over `partitions` > 1 devices, that many
// partitions with SPMD partitioning (ProgramOptions::partitions).
CompileConfig CompileConfigFor(const hlo::Module& program, int64_t partitions);

// Serialized CompileOptionsProto: executable_build_options { num_replicas, num_partitions, and with partitions
// use_spmd_partitioning, a replicas x partitions device assignment and use_shardy_partitioner when set }.
// One replica and one partition is the six bytes 1a 04 20 01 28 01.
std::string SerializeCompileOptions(const CompileConfig& config);

}  // namespace opprobe::compiler_probe::worker
