// Probe units and backends for the tests of compiler backends (xla:cpu, iree:llvm-cpu, ...): a unit built with the
// Builder or parsed from text, and a built-in backend that must be creatable.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler_probe/registry.h"
#include "hlo/builder.h"
#include "hlo/probe_unit.h"
#include "testing/parse_module.h"

namespace opprobe::testing {

// The probe unit of `op` applied to two parameters of `type` and `dims`.
inline std::unique_ptr<hlo::Module> BinaryUnit(hlo::Opcode op, hlo::PrimitiveType type, std::vector<int64_t> dims) {
  hlo::Builder b("m");
  auto* x = b.Parameter(0, hlo::Shape::Array(type, dims));
  auto* y = b.Parameter(1, hlo::Shape::Array(type, dims));
  auto module = b.Build(b.Binary(op, x, y));
  return hlo::MakeProbeModule(*module->entry()->root());
}

// The built-in backend `spec`; a failure to create it fails the test (and gives nullptr).
inline std::unique_ptr<compiler_probe::Backend> MustCreateBackend(const std::string& spec) {
  auto b = compiler_probe::Registry::Builtin().Create(spec);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return b.ok() ? std::move(b).value() : nullptr;
}

}  // namespace opprobe::testing
