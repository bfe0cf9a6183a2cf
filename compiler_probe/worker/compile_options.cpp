#include "compiler_probe/worker/compile_options.h"

#include <algorithm>

#include "hlo/instruction.h"

namespace opprobe::compiler_probe::worker {

namespace {

// Protocol-buffer wire format: a field's tag, varints and length-delimited fields.
void Varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void VarintField(std::string& out, int field, uint64_t v) {
  Varint(out, static_cast<uint64_t>(field) << 3);
  Varint(out, v);
}
void BytesField(std::string& out, int field, const std::string& bytes) {
  Varint(out, (static_cast<uint64_t>(field) << 3) | 2);
  Varint(out, bytes.size());
  out += bytes;
}

// xla.DeviceAssignmentProto: replica_count (1), computation_count (2), computation_devices (3) each
// { replica_device_ids (1, packed) }; device r * partitions + p runs replica r of partition p.
std::string DeviceAssignment(const CompileConfig& c) {
  std::string out;
  VarintField(out, 1, static_cast<uint64_t>(c.replicas));
  VarintField(out, 2, static_cast<uint64_t>(c.partitions));
  for (int64_t p = 0; p < c.partitions; ++p) {
    std::string ids;
    for (int64_t r = 0; r < c.replicas; ++r) Varint(ids, static_cast<uint64_t>(r * c.partitions + p));
    std::string devices;
    BytesField(devices, 1, ids);
    BytesField(out, 3, devices);
  }
  return out;
}

int64_t DevicesOfSharding(const hlo::Sharding& s, bool& named) {
  switch (s.type) {
    case hlo::Sharding::Type::kMaximal: return s.device + 1;
    case hlo::Sharding::Type::kTiled: {
      int64_t n = 1;
      for (int64_t d : s.tile_dims) n *= std::max<int64_t>(d, 1);
      for (int64_t d : s.devices) n = std::max(n, d + 1);
      return n;
    }
    case hlo::Sharding::Type::kTuple: {
      int64_t n = 1;
      for (const auto& e : s.tuple) n = std::max(n, DevicesOfSharding(e, named));
      return n;
    }
    case hlo::Sharding::Type::kNamed: named = true; return 1;
    default: return 1;
  }
}

int64_t DevicesOfGroups(const hlo::CollectiveDeviceList& l) {
  if (l.iota) return std::max<int64_t>(1, l.num_groups * l.group_size);
  int64_t n = 1;
  for (const auto& g : l.groups)
    for (int64_t id : g) n = std::max(n, id + 1);
  return n;
}

}  // namespace

CompileConfig CompileConfigFor(const hlo::Module& unit) {
  CompileConfig c;
  bool named = false;
  for (const auto& comp : unit.computations())
    for (const auto& in : comp->instructions()) {
      const hlo::RareAttributes& rare = in->rare();
      c.replicas = std::max(c.replicas, DevicesOfGroups(rare.replica_groups));
      for (const auto& pair : rare.source_target_pairs)
        for (int64_t id : pair) c.replicas = std::max(c.replicas, id + 1);
      if (in->sharding) c.partitions = std::max(c.partitions, DevicesOfSharding(*in->sharding, named));
    }
  c.spmd = c.partitions > 1;
  c.shardy = named;
  return c;
}

std::string SerializeCompileOptions(const CompileConfig& c) {
  std::string build;
  VarintField(build, 4, static_cast<uint64_t>(c.replicas));
  VarintField(build, 5, static_cast<uint64_t>(c.partitions));
  if (c.spmd) VarintField(build, 6, 1);
  if (c.partitions > 1) BytesField(build, 9, DeviceAssignment(c));
  if (c.shardy) VarintField(build, 19, 1);
  std::string out;
  BytesField(out, 3, build);  // CompileOptionsProto.executable_build_options
  return out;
}

CompileConfig CompileConfigFor(const hlo::Module& program, int64_t partitions) {
  CompileConfig config = CompileConfigFor(program);
  if (partitions > 1) {
    config.partitions = partitions;
    config.spmd = true;
  }
  return config;
}

}  // namespace opprobe::compiler_probe::worker
