// ATen operator signatures (argument names, declared types, defaults), generated from PyTorch's own
// schemas by analyzer/loaders/gen_op_schemas.py into op_schemas.inc. Regenerate with:
//     /usr/bin/python3 analyzer/loaders/gen_op_schemas.py > analyzer/loaders/op_schemas.inc
// Used to fill the arguments a saved program omitted because they were left at their default.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opprobe::analyzer {

struct OpSchemaArg {
  std::string name;
  std::string type;  // as declared: `Tensor`, `Tensor?`, `int[2]`, `ScalarType?`, `Scalar`, `SymInt[]`
  bool kwarg_only = false;
  bool has_default = false;
  nlohmann::json default_value;  // Python value as JSON; non-finite floats as "inf"/"-inf"/"nan"
};

struct OpSchema {
  std::string name;      // without namespace: `add`
  std::string overload;  // `Tensor`, `default`
  std::vector<OpSchemaArg> args;
};

// The schema of `aten::<name>.<overload>` (overload `default` for the unnamed one); nullptr when the
// table (from the torch that generated it) does not have it.
const OpSchema* FindAtenSchema(std::string_view name, std::string_view overload);

// The torch version that generated the table.
std::string_view OpSchemaTableTorchVersion();

}  // namespace opprobe::analyzer
