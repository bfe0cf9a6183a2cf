// PyTorch's type promotion and the element types lowerings compute in: torch.promote_types,
// torch.result_type over tensors and Python scalars, and the float type an op with a float result runs in.
#pragma once

#include <vector>

#include "analyzer/graph/graph.h"
#include "hlo/types.h"

namespace opprobe::analyzer::lowering {

using hlo::PrimitiveType;

// torch.promote_types(a, b) (PRIMITIVE_TYPE_INVALID stands for "no type yet").
PrimitiveType Promote(PrimitiveType a, PrimitiveType b);
// torch.result_type over tensors (dimensioned > zero-dim > Python scalars) and scalars.
PrimitiveType ResultType(const std::vector<const Value*>& values);
bool IsFloatish(PrimitiveType t);  // float or complex
PrimitiveType DefaultFloat();      // f32
// The type computations run in for an op whose result is float (integers -> f32).
PrimitiveType FloatType(PrimitiveType t);
// torch.finfo(t).eps of a float type (of the component type for complex).
double MachineEpsilon(PrimitiveType t);

}  // namespace opprobe::analyzer::lowering
