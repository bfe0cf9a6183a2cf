// HloModuleProto conversion, shared by its files (not a public header): proto_values.cpp (shapes, layouts,
// literals, metadata), proto_attributes.cpp (instruction attributes, walking hlo/attributes.h), proto_write.cpp
// and proto_read.cpp (instructions, computations, modules).
#pragma once

#include <string>

#include "hlo.pb.h"
#include "hlo/instruction.h"
#include "support/status.h"
#include "xla_data.pb.h"

namespace opprobe::hlo::proto_internal {

Status WriteShape(const Shape& shape, xla::ShapeProto* p, int depth = 0);
Expected<Shape> ReadShape(const xla::ShapeProto& p, int depth = 0);
// Values in the literal's layout, as XLA reads them; a shape without a layout gets the default one (XLA's
// converters refuse a literal shape without a layout).
Status WriteLiteral(const Literal& l, xla::LiteralProto* p);
// `s` with the default layout wherever it has none: a literal is written in a layout, and a constant's shape must be
// written with that same layout (XLA's CreateFromProto requires the two to be equal, layouts included).
Shape WithLayout(Shape s);
Expected<Literal> ReadLiteral(const xla::LiteralProto& p, const Shape& declared, int depth = 0);
void WriteMetadata(const OpMetadata& m, xla::OpMetadata* p);
OpMetadata ReadMetadata(const xla::OpMetadata& p);

// Every attribute of the instruction's schema into its XLA field; attributes XLA has no field for (or whose XLA
// form would lose detail) and unknown attributes also as opprobe text attributes (printed text).
// Control predecessors are written by the caller, which knows the ids.
Status WriteAttributes(const Instruction& in, xla::HloInstructionProto* p);
// The attributes of `in`'s schema from their XLA fields, then the opprobe text attributes (which win).
// Called computations and control predecessors are read by the caller.
Status ReadAttributes(const xla::HloInstructionProto& p, Instruction& in, const std::string& where);

}  // namespace opprobe::hlo::proto_internal
