// A small MLIR IR for what a StableHLO text file holds: operations with their operands, results, attributes,
// regions and locations, in one form whichever syntax (pretty or generic) the text used. The reader
// (mlir_parser.h) builds it; the conversion to HLO (convert.h) reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hlo/types.h"

namespace opprobe::hlo::stablehlo {

// An MLIR type: a ranked tensor (`tensor<2x?xf32, #stablehlo.bounds<?, 4>>`), a bare element type (`f32`,
// `i32`), a tuple, a token, a function type, or anything else (kept as text, refused where a value needs a shape).
struct Type {
  enum class Kind { kTensor, kElement, kTuple, kToken, kFunction, kOther };
  Kind kind = Kind::kOther;
  PrimitiveType element = PrimitiveType::PRIMITIVE_TYPE_INVALID;  // tensor/element; quantized: the storage type
  std::vector<int64_t> dims;                                      // kTensor: -1 for `?`
  std::vector<int64_t> bounds;  // kTensor: the bound of each `?` dimension (-1: none); empty without bounds
  bool unranked = false;        // `tensor<*xf32>`
  std::string quantized;        // the `!quant.uniform<...>` element when the tensor is quantized
  std::vector<Type> elements;   // kTuple elements; kFunction inputs
  std::vector<Type> results;    // kFunction results
  std::string text;             // as written, for messages
};

// One element of a `dense<...>` literal: an integer (its digits, so that u64 and i64 survive), a float, a bool,
// a complex pair, or a bit pattern written as hex (`0x7FC00000`: the element's bits).
struct DenseElement {
  enum class Kind { kInt, kFloat, kBool, kComplex, kBits };
  Kind kind = Kind::kInt;
  bool negative = false;
  uint64_t magnitude = 0;     // kInt: |value|; kBits: the bits
  double real = 0, imag = 0;  // kFloat: real; kComplex: both
  bool boolean = false;
};

struct DenseLiteral {
  std::vector<DenseElement> elements;  // flattened, row-major
  bool splat = false;                  // one element for the whole tensor (`dense<1.0>`)
  std::string raw_hex;                 // `dense<"0x...">`: the raw little-endian bytes, as hex digits
  std::string resource;                // `dense_resource<name>`: values not in the text
};

struct Attr {
  enum class Kind {
    kUnit,  // a key without a value
    kBool,
    kInt,  // `3 : i64`, `-1`
    kFloat,
    kString,
    kArray,  // `[a, b]`, and `array<i64: 1, 2>` (elements are kInt)
    kDict,   // `{k = v}`, and structured dialect attributes `#stablehlo.gather<k = v, ...>` (name holds the dialect)
    kDense,  // `dense<...> : tensor<...>`, `dense_resource<...> : ...`
    kType,
    kSymbol,  // `@name`
    kEnum,    // `#stablehlo<comparison_direction LT>` (name: "comparison_direction", text: "LT"), or a bare word
    kOther,   // anything else: `#dialect.name<raw>` (name: "dialect.name", text: raw), affine maps, ...
  };
  Kind kind = Kind::kUnit;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string name;  // kDict/kEnum/kOther: the dialect attribute's name
  std::string text;  // kString/kSymbol/kEnum/kOther
  std::vector<Attr> elements;
  std::vector<Attr> dict;  // kDict: the entries, each with its `key` (a vector of pairs would need Attr complete)
  std::string key;         // an entry of a kDict: its name
  std::shared_ptr<DenseLiteral> dense;
  Type type;       // kInt/kFloat/kDense: the attribute's type (`: i64`, `: tensor<2xi64>`); kType: the type
  size_t pos = 0;  // offset in the text
  size_t end = 0;  // offset just after it (ParseAttr's attributes; 0 otherwise)

  const Attr* Get(const std::string& key) const;  // kDict: the value of `key`, or null
};

using NamedAttrs = std::vector<std::pair<std::string, Attr>>;
const Attr* FindAttr(const NamedAttrs& attrs, const std::string& key);
// A dictionary's entries as a kDict attribute's `dict` (keys in each entry's `key`), and back.
std::vector<Attr> ToDict(NamedAttrs attrs);
NamedAttrs FromDict(const std::vector<Attr>& dict);

// A location as written: unknown, `"name"` (with an optional child), `"file":line:col`, `callsite(a at b)`,
// `fused[...]`, or a `#loc` alias resolved after the whole file is read (aliases come at the end).
struct Location {
  enum class Kind { kUnknown, kName, kFile, kCallSite, kFused, kAlias };
  Kind kind = Kind::kUnknown;
  std::string text;  // kName: the name; kFile: the file; kAlias: the alias name (without `#`)
  int64_t line = 0;
  std::vector<Location> children;  // kName: [child]; kCallSite: [callee, caller]; kFused: the parts
};

struct Value {  // a use of an SSA value: `%name` or `%name#N`
  std::string name;
  int64_t index = 0;
  size_t pos = 0;
};

struct Operation;

struct Block {
  std::vector<std::pair<std::string, Type>> arguments;  // `%name: type`
  std::vector<Operation> operations;
};

struct Region {
  std::vector<Block> blocks;
};

struct Operation {
  std::string name;  // `stablehlo.add`, `func.return`, `chlo.top_k`, ...
  std::vector<Value> operands;
  // Result groups as written: `%0:3 = ...` is {"0", 3}; `%a, %b = ...` is {"a", 1}, {"b", 1}.
  std::vector<std::pair<std::string, int64_t>> results;
  std::vector<Type> operand_types;  // when the text says them (generic form, functional types)
  std::vector<Type> result_types;
  NamedAttrs attributes;  // properties and attributes together
  std::vector<Region> regions;
  std::vector<std::string> callees;  // symbols a pretty form names outside the attributes (`applies stablehlo.add`)
  bool has_location = false;
  Location location;
  size_t pos = 0;  // offset of the op name in the text

  const stablehlo::Attr* Find(const std::string& key) const { return FindAttr(attributes, key); }
  int64_t ResultCount() const;
};

// A function: `func.func [public|private] @name(%arg: type {attrs} loc(...), ...) -> (types) { body }`.
struct Function {
  std::string name;
  std::string visibility;  // "", "public", "private"
  std::vector<std::pair<std::string, Type>> arguments;
  std::vector<NamedAttrs> argument_attributes;
  std::vector<Location> argument_locations;
  std::vector<Type> result_types;
  Region body;
  size_t pos = 0;
};

struct ParsedModule {
  std::string name;  // `module @name`; empty when the text has none
  NamedAttrs attributes;
  std::vector<Function> functions;
  std::map<std::string, Location> location_aliases;  // `#loc3 = loc(...)`, without the `#`
  std::string source_name;
  std::string_view text;  // the text the offsets point into (valid while the caller keeps it)
};

// Line and column (1-based) of `pos` in `text`.
std::pair<int64_t, int64_t> LineColumn(std::string_view text, size_t pos);

}  // namespace opprobe::hlo::stablehlo
