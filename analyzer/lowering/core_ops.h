// The Core ATen opset and lookups of the lowering table by `name.overload` (core_ops.cpp).
#pragma once

#include <string>
#include <vector>

#include "analyzer/lowering/lowering.h"

namespace opprobe::analyzer {

// The 193 core aten ops as `name` or `name.overload` (no `aten::` prefix), sorted.
const std::vector<std::string>& CoreAtenOps();

// The table entry that lowers `name` (`add.Tensor`, `aten::relu`), or nullptr.
const LoweringTable::Entry* FindLowering(const LoweringTable& table, const std::string& name);

}  // namespace opprobe::analyzer
