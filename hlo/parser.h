// Parses XLA HLO text (research/formats.md B.6) into hlo IR: both printer styles found in real dumps
// (long: `%name`, operand shapes, computation signatures; short: XLA --xla_dump_to files) and the rest of XLA's
// syntax (left-out result shapes, inline operands and computations, `%t#1`, `?` dimensions, any line layout).
// Attributes are read as hlo/attributes.h declares them (a required one missing is an error); attributes the
// schema does not know are kept verbatim in Instruction::rare().unknown_attributes, module header attributes in
// Module::header_attributes, so that the printer reproduces the text. Unknown opcodes parse (opcode kCustomCall,
// Instruction::unknown_opcode holds the name). Errors read `source:line:col: message`.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hlo/instruction.h"
#include "hlo/printer.h"
#include "support/status.h"

namespace opprobe::hlo {

// Exactly one module (an optional `HloModule name, attrs...` header, then computations). Text made
// only of computations gets the module name "module".
Expected<std::unique_ptr<Module>> ParseModule(std::string_view text, const std::string& source_name);

// Every module of a file: modules one after another (`HloModule` lines), or torch_xla's
// XLA_SAVE_TENSORS_FILE framing (`## BEGIN_GRAPH` ... `## END_GRAPH`, other text between graphs ignored).
Expected<std::vector<std::unique_ptr<Module>>> ParseModules(std::string_view text, const std::string& source_name);

// The text of each module of a file, as ParseModules splits it (used by round-trip tests and tools).
std::vector<std::string_view> SplitModuleTexts(std::string_view text);

// The printer style a module text was written in: long when its instruction names carry `%`.
PrintOptions DetectPrintStyle(std::string_view module_text);

// Parses one shape (`f32[4,3]{1,0}`, `(s32[], f32[2])`, `bf16[<=8]`); the whole text must be the shape.
Expected<Shape> ParseShape(std::string_view text);

// Parses `value`, the text after `key=`, into the field the schema gives `key` for `in`'s opcode (the proto
// reader's way back from attributes it keeps as text). Errors name `source`.
Status ParseAttributeValue(Instruction& in, std::string_view key, std::string_view value, const std::string& source);

}  // namespace opprobe::hlo
