// Literals in files, for `opprobe run`'s inputs and outputs: NumPy .npy (little-endian, C order; f2 f4 f8 i1..i8
// u1..u8 b1 c8 c16) and JSON, either nested lists (`[[1, 2], [3, 4]]`, complex elements as [re, im]) or
// `{"shape": [2, 2], "dtype": "f32", "data": [1, 2, 3, 4]}`. Errors are kInvalidInput and start with `where`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "hlo/literal.h"
#include "support/status.h"

namespace opprobe::hlo {

Expected<Literal> ParseNpy(std::string_view bytes, const std::string& where);
// JSON nested lists take `param_type` as their element type; the object form may name its own dtype.
Expected<Literal> ParseJsonLiteral(std::string_view text, const std::string& where, PrimitiveType param_type);
// .npy when the bytes start with NumPy's magic, JSON otherwise.
Expected<Literal> ParseLiteral(std::string_view bytes, const std::string& where, PrimitiveType default_type);

// Reads `path` as a value for a parameter of shape `want`: its element type and dimensions must match.
Expected<Literal> ReadLiteralFor(const std::string& path, const Shape& want, const std::string& where);

// The JSON object form (`{"shape", "dtype", "data"}`; NaN and infinities as strings), or {"tuple": [...]}.
nlohmann::json LiteralToJson(const Literal& literal);

}  // namespace opprobe::hlo
