// Prints hlo IR exactly in XLA's HLO text syntax (research/formats.md B.6), in both styles found in
// real dumps: XLA's HloPrintOptions::Default() ("long": %names, operand shapes, computation
// signatures; torch_xla dumps) and ShortParsable() ("short": XLA --xla_dump_to files). Attributes are
// printed as hlo/attributes.h declares them, in XLA's order (print_attributes.cpp).
#pragma once

#include <string>

#include "hlo/attributes.h"
#include "hlo/instruction.h"

namespace opprobe::hlo {

struct PrintOptions {
  bool long_style = true;
  bool print_metadata = true;
  // Attributes the schema does not know, kept verbatim from parsed text.
  bool print_unknown_attributes = true;
  static PrintOptions Long() { return {}; }
  static PrintOptions Short() {
    PrintOptions o;
    o.long_style = false;
    return o;
  }
  // The canonical form hashed for fingerprints: short style, no metadata; every other attribute, modelled or
  // unknown, is part of it.
  static PrintOptions Canonical() {
    PrintOptions o;
    o.long_style = false;
    o.print_metadata = false;
    return o;
  }
};

std::string ToString(const Module& module, const PrintOptions& options = {});
std::string ToString(const Computation& computation, const PrintOptions& options = {}, bool is_entry = false);
// One instruction line without indentation or ROOT: `%add.3 = f32[4]{0} add(f32[4]{0} %x, f32[4]{0} %y)`.
std::string ToString(const Instruction& instruction, const PrintOptions& options = {});
// The attributes after the operand list, each preceded by ", " (empty when there are none).
std::string AttributesToString(const Instruction& instruction, const PrintOptions& options = {});
// One attribute's value as the text after `key=` (the proto writer keeps attributes XLA has no field for so).
std::string AttributeValueToString(const Instruction& instruction, const AttrSpec& spec,
                                   const PrintOptions& options = {});
// Neuron's report form: result shape, opcode, operand shapes and attributes, without names or
// metadata: `f32[4]{0} broadcast(f32[]), dimensions={}`.
std::string InstructionSignature(const Instruction& instruction);

// Attribute value printers shared with the parser's tests.
std::string WindowToString(const Window& window);
std::string ConvolutionDimensionNumbersToString(const ConvolutionDimensionNumbers& dnums);
std::string PaddingConfigToString(const PaddingConfig& config);
std::string MetadataToString(const OpMetadata& metadata);
std::string ShardingToString(const Sharding& sharding);
std::string ReplicaGroupsToString(const CollectiveDeviceList& groups);
// A constant's value as XLA prints it on one line (`0`, `-inf`, `{1, 2}`, `{ { 1, 2 }, { 3, 4 } }`,
// `( 1, 2 )` for tuples, `{...}` when elided), with XLA's per-type float precision.
std::string LiteralToString(const Literal& literal);
std::string CEscape(const std::string& s);
// printf("%.*g"), as absl's float formatting prints XLA's float attributes (epsilon=1e-05).
std::string FormatG(double v, int precision);

}  // namespace opprobe::hlo
