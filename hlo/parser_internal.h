// The HLO text parser's shared state, for the files that implement it (not a public header): parser.cpp
// (instructions, computations, modules), parse_shapes.cpp (shapes, layouts, literals) and parse_attributes.cpp
// (attribute values, walking the schema of hlo/attributes.h).
//
// The parser reads characters, not lines: whitespace and comments may stand between any two tokens, so a value
// or an instruction may span lines. Errors read `source:line:col: message`, with input text quoted (support/quote.h).
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "hlo/attributes.h"
#include "hlo/instruction.h"
#include "support/prefetch.h"
#include "support/quote.h"
#include "support/status.h"

namespace opprobe::hlo::parse_internal {

constexpr int kMaxDepth = 64;  // nesting of tuple shapes, literal braces, attribute values and inline operands

// Letters, digits, '_', '.', '-': a table (names are most of an HLO text's characters).
inline constexpr struct NameChars {
  bool is[256] = {};
  constexpr NameChars() {
    for (int c = 0; c < 256; ++c)
      is[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-';
  }
} kNameChars;
inline bool IsNameChar(char c) { return kNameChars.is[static_cast<unsigned char>(c)]; }
inline bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Instruction names of one computation -> their index: open addressing (no allocation per name, unlike a
// node-based map). A slot is 8 bytes, the index and 32 bits of the name's hash, so that a probe touches one small
// table (a big module's names are hundreds of thousands) and compares names only when the hash bits agree. Names
// are inserted as instructions are added and operands looked up as they are read, while the slots they touch are
// still in the cache (most operands name an instruction a few lines up).
class NameIndex {
 public:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  NameIndex() : slots_(16), mask_(15) {}
  // Gives `name` the next index (0, 1, 2, ...); false when the name is already there (it keeps its first index).
  bool Insert(std::string_view name) {
    if (2 * (names_.size() + 1) > slots_.size()) Grow(2 * slots_.size());
    names_.push_back(name);
    hashes_.push_back(Hash(name));
    return Place(hashes_.back(), static_cast<uint32_t>(names_.size()));
  }
  // Room for `n` names without growing.
  void Reserve(size_t n) {
    names_.reserve(n);
    hashes_.reserve(n);
    if (2 * n > slots_.size()) {
      size_t size = slots_.size();
      while (2 * n > size) size *= 2;
      Grow(size);
    }
  }

  // Brings the slot `name` will take into the cache: called when an instruction's name is read, long before the
  // instruction is complete and its name inserted (the table outgrows the caches of a big module, and that miss
  // was the index's whole cost).
  void Prefetch(std::string_view name) const { support::PrefetchLine(&slots_[Hash(name) & mask_]); }
  size_t Find(std::string_view name) const {
    const uint64_t hash = Hash(name);
    const auto tag = static_cast<uint32_t>(hash >> 32);
    for (size_t h = hash & mask_;; h = (h + 1) & mask_) {
      const Slot& s = slots_[h];
      if (s.index_plus_one == 0) return kNone;
      if (s.tag == tag && names_[s.index_plus_one - 1] == name) return s.index_plus_one - 1;
    }
  }

 private:
  // False when the name at index `index_plus_one - 1` is already there.
  bool Place(uint64_t hash, uint32_t index_plus_one) {
    const auto tag = static_cast<uint32_t>(hash >> 32);
    const std::string_view name = names_[index_plus_one - 1];
    for (size_t h = hash & mask_;; h = (h + 1) & mask_) {
      Slot& s = slots_[h];
      if (s.index_plus_one == 0) {
        s = {index_plus_one, tag};
        return true;
      }
      if (s.tag == tag && names_[s.index_plus_one - 1] == name) return false;
    }
  }
  // `size` slots (a power of two), the names placed again in index order from their kept hashes (reading no name).
  void Grow(size_t size) {
    slots_.assign(size, Slot{});
    mask_ = slots_.size() - 1;
    for (size_t i = 0; i < names_.size(); ++i) Place(hashes_[i], static_cast<uint32_t>(i + 1));
  }
  struct Slot {
    uint32_t index_plus_one = 0;  // 0: empty (io::ReadFile's 2 GiB cap keeps a computation far below 2^32 names)
    uint32_t tag = 0;
  };
  static size_t Hash(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then a final mix (names differ mostly in their last digits)
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return static_cast<size_t>(h);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  std::vector<std::string_view> names_;  // by index
  std::vector<uint64_t> hashes_;         // by index
};

// An operand or a called computation still to be looked up by name.
struct PendingOperand {
  std::string_view name;  // a view into the text, or into Scope::synthetic_names
  size_t pos;
};
struct PendingCall {
  Instruction* instr;
  size_t slot;  // index into instr->called_computations
  std::string name;
  size_t pos;
};

// One computation being parsed (computations nest: `to_apply={...}` defines one inline).
struct Scope {
  std::unique_ptr<Computation> comp;
  // Operands of every instruction, in the order the instructions were added: instruction i's are
  // operands[operand_ends[i - 1] .. operand_ends[i]) (one flat list: no allocation per instruction).
  std::vector<PendingOperand> operands;
  std::vector<size_t> operands_found;  // per operand: its instruction's index when known as it was read, else kNone
  std::vector<size_t> operand_ends;
  NameIndex index;                            // the instructions' names, in the order they are added
  size_t first_duplicate = NameIndex::kNone;  // the first instruction whose name an earlier one has
  std::vector<size_t> positions;              // where each instruction's name is
  // Per instruction: where its written result shape is in the text (size 0: none written), so that an operand
  // shape written again as the same text (`add(f32[8]{0} %a, ...)`) is known valid without parsing it again.
  struct TextSpan {
    uint32_t begin = 0, size = 0;  // io::ReadFile's 2 GiB cap keeps offsets below 2^31
  };
  std::vector<TextSpan> shape_texts;
  // Names the text gives (views into the text) and synthetic ones (views into synthetic_names), which a synthetic
  // name must not repeat. The set is built from name_list only when the first synthetic name is made (most
  // computations have none); from then on both are kept.
  std::vector<std::string_view> name_list;
  std::unordered_set<std::string_view> names;
  bool names_built = false;
  std::deque<std::string> synthetic_names;
  void AddName(std::string_view n) {
    name_list.push_back(n);
    if (names_built) names.insert(n);
  }
  // Room for `n` instructions (and twice as many operands) in every per-instruction list.
  void Reserve(size_t n) {
    comp->mutable_instructions().reserve(n);
    operands.reserve(2 * n);
    operands_found.reserve(2 * n);
    operand_ends.reserve(n);
    index.Reserve(n);
    positions.reserve(n);
    shape_texts.reserve(n);
    name_list.reserve(n);
  }
  std::vector<std::pair<Instruction*, size_t>> control;  // instructions with control-predecessors, and where
};

class Parser {
 public:
  Parser(std::string_view text, size_t begin, size_t end, const std::string& source)
      : s_(text), p_(begin), begin_(begin), end_(end), src_(source) {}

  Expected<std::unique_ptr<Module>> ParseModule();
  Expected<Shape> ParseShapeOnly();
  // One attribute value (the text after `key=`) into `in`, as the schema declares `spec`; the whole text must be
  // the value. For values the proto keeps as text.
  Status ParseAttributeValueOnly(Instruction& in, const AttrSpec& spec);

  // ---- lexing ---------------------------------------------------------------------------------------------
  Status Err(size_t at, const std::string& msg) const;
  char Peek(size_t k = 0) const { return p_ + k < end_ ? s_[p_ + k] : '\0'; }
  bool AtEnd() const { return p_ >= end_; }
  // Blanks, newlines, /* */ and // comments (most calls find none: that check is inline).
  void SkipWs() {
    if (p_ < end_) {
      const char c = s_[p_];
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '/') return;
      // One blank before a token (`, key=`, `) %x`): the usual case.
      if (c == ' ' && p_ + 1 < end_) {
        const char d = s_[p_ + 1];
        if (d != ' ' && d != '\t' && d != '\r' && d != '\n' && d != '/') {
          ++p_;
          return;
        }
      }
    }
    SkipWsSlow();
  }
  void SkipWsSlow();
  void SkipInlineWs();  // blanks and /* */ comments on the current line
  bool TryConsume(char c);
  Status Expect(char c, std::string_view what);
  // Expect with a message that costs something to build (names an instruction): built only when `c` is missing.
  template <typename What>
  Status ExpectOr(char c, What&& what) {
    size_t before = p_;
    SkipWs();
    if (Peek() == c) {
      ++p_;
      return Status::Ok();
    }
    p_ = before;
    return Expect(c, what());
  }
  std::string Describe() const;     // the next few characters, quoted, or "end of input"
  std::string ReadName();           // a name, an optional leading '%' dropped; empty when none
  std::string_view ReadNameView();  // the same, as a view into the text
  bool LookingAtWord(std::string_view w) const;
  std::string_view ReadWord();
  Expected<int64_t> ParseInt();
  Expected<double> ParseNumber();  // a decimal number as text writes it (1, -0.5, 1e-05, inf, nan)
  // A value as written: brackets and quotes balanced; outside them it ends at ',', whitespace or a closing
  // bracket (so it may start on the next line, and the line layout never matters).
  std::string_view CaptureValue();

  // ---- shapes and literals (parse_shapes.cpp) -------------------------------------------------------------
  Expected<Shape> ParseShape(int depth);
  Status ParseShapeInto(Shape& shape, int depth);  // the same into `shape`, reusing its storage
  bool TryParsePlainArrayShape(Shape& shape);      // ParseShapeInto's fast path
  Status ParseLayout(Shape& shape);
  bool LooksLikeShape() const;
  bool LooksLikeLayout() const;  // a '{' that starts a layout (a digit, ':' or '}' follows)
  Expected<Literal> ParseLiteral(const Shape& shape, int depth);
  Status ParseArrayElements(const Shape& shape, size_t dim, std::vector<std::pair<std::string_view, size_t>>& out,
                            int depth);
  std::string_view ReadElementToken();
  Status SetElement(Literal& lit, int64_t index, std::string_view text, size_t pos);
  // A NaN element: `nan`, `-nan`, or `nan(0x...)` with a payload that fits the type (checked as XLA does).
  Status SetNan(Literal& lit, int64_t index, std::string_view text, size_t pos);

  // ---- attributes (parse_attributes.cpp) ------------------------------------------------------------------
  // The attribute list after an instruction's operands (`, key=value` ...), walking the opcode's schema.
  Status ParseAttributes(Scope& scope, Instruction& in, size_t start, int depth);
  // One value of `spec` at the current position.
  Status ParseValue(Scope* scope, Instruction& in, const AttrSpec& spec, size_t key_pos);
  Expected<std::vector<int64_t>> ParseIntList();
  Expected<std::vector<std::vector<int64_t>>> ParseIntListList();
  Expected<std::string> ParseQuoted();
  Status ParseQuotedInto(std::string& out);  // the same into `out` (a field), without a temporary
  Status ParseWindow(Window& w);
  Status ParseDimLabels(ConvolutionDimensionNumbers& d);
  Status ParseSlice(SliceDimensions& s);
  Status ParsePadding(PaddingConfig& c);
  Status ParseMetadata(OpMetadata& m);
  // `metadata={...}` into a value shared by every instruction of the module whose metadata text is the same.
  Status ParseSharedMetadata(support::SharedValue<OpMetadata>& out);
  Status ParseSharding(Sharding& s, int depth);
  Status ParseSingleSharding(Sharding& s);
  Status ParseReplicaGroups(CollectiveDeviceList& g);
  Status ParseFrontendAttributes(std::vector<std::pair<std::string, std::string>>& out);
  Status ParseAliasing(std::vector<OutputOperandAlias>& out);
  Status ParseResultAccuracy(ResultAccuracy& r);
  Status ParseBalanced(std::string& out);  // `{...}` kept as written
  Status ParseComputationRef(Scope* scope, Instruction& in, size_t slot, const std::string& key);

  // ---- structure (parser.cpp) -----------------------------------------------------------------------------
  Status ParseComputation(Computation*& entry);
  // The instruction list `{ ... }` of `scope`, then operand resolution and ordering; adds it to the module.
  Status ParseInstructionList(Scope& scope, size_t name_pos, Computation*& added);
  Status ParseInstruction(Scope& scope, bool& is_root);
  // shape: null when the text has none; shape_text: where it is written (size 0 for an inline operand's).
  Status ParseInstructionRhs(Scope& scope, std::string_view name, size_t name_pos, size_t start, Shape* shape,
                             Scope::TextSpan shape_text, int depth, Instruction*& added);
  // At an operand `T %x`: when an instruction of `scope` named x was written with the same shape text T, steps
  // over both (T parsed before) and gives x, where it is and its index; else stays and gives found == kNone.
  struct KnownOperand {
    PendingOperand operand;
    size_t found = NameIndex::kNone;
  };
  KnownOperand SkipRepeatedOperandShape(const Scope& scope);
  // One operand of the instruction being read (`f32[8]{0} %x`, `%t#0`, an inline `s32[] constant(1)`), onto op_stack_.
  Status ParseOperand(Scope& scope, int depth);
  // Shapes the text left out (`t = tuple(a, b)`), once operands and called computations are known.
  Status InferShapes();
  // The verifier (hlo/verifier.h) and the signatures' result shapes, once shapes are known; a violation is an
  // error at the instruction's (or computation's) name.
  Status Verify();
  // A name no instruction of `scope` has yet, `base.N`; the view stays valid as long as the scope.
  std::string_view SyntheticName(Scope& scope, std::string_view base);
  // Enters the name of the instruction just added to `scope` into its index.
  void IndexName(Scope& scope, std::string_view name);
  std::string UniqueComputationName(const std::string& base);

  std::string_view s_;
  size_t p_;
  size_t begin_;
  size_t end_;
  const std::string& src_;
  Module* module_ = nullptr;
  std::vector<PendingCall> calls_;
  // Operands of the instructions being parsed (inline operands nest), before they move to their scope's list.
  std::vector<PendingOperand> op_stack_;
  std::vector<size_t> op_found_;  // per op_stack_ entry: its instruction's index when known as read, else kNone
  // Where operand shapes (`add(f32[2]{0} %a, ...)`) are read: checked, then dropped unless the operand is inline.
  Shape operand_shape_;
  std::unordered_map<const Instruction*, size_t> infer_;  // instructions without a written shape -> position
  std::set<std::string> computation_names_;               // every computation name given or generated
  // broadcast's dimensions= left out: allowed only when operand 0 turns out to be a scalar (checked once shapes
  // are known).
  std::vector<std::pair<Instruction*, size_t>> scalar_operand_checks_;
  // Where each instruction and computation is named, for the verifier's messages (searched only on failure).
  std::vector<std::pair<const Instruction*, size_t>> positions_;
  std::vector<std::pair<const Computation*, size_t>> computation_positions_;
  struct Signature {
    const Computation* computation;
    Shape result;
    size_t pos;
  };
  std::vector<Signature> signatures_;
  // Metadata parsed so far, by their text `{...}` (views into the text): a module's instructions repeat a few
  // hundred metadata over and over; each text is parsed once.
  struct TextHash {  // 8 bytes at a time (the texts are a few hundred bytes; std::hash reads them byte by byte)
    size_t operator()(std::string_view s) const {
      uint64_t h = s.size() * 0x9e3779b97f4a7c15ull;
      size_t i = 0;
      for (; i + 8 <= s.size(); i += 8) {
        uint64_t w;
        std::memcpy(&w, s.data() + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
      }
      uint64_t w = 0;
      std::memcpy(&w, s.data() + i, s.size() - i);
      h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  std::unordered_map<std::string_view, support::SharedValue<OpMetadata>, TextHash> metadata_by_text_;
  int64_t synthetic_count_ = 0;
  int computation_depth_ = 0;
};

}  // namespace opprobe::hlo::parse_internal
