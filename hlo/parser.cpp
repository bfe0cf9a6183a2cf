// The HLO text parser, part 3: lexing, instructions, computations and modules, and the public entry points.
// Shapes and literals are in parse_shapes.cpp, attribute values in parse_attributes.cpp.
#include "hlo/parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <map>
#include <span>

#include "hlo/parser_internal.h"
#include "hlo/shape_inference.h"
#include "hlo/verifier.h"

namespace opprobe::hlo {
namespace parse_internal {

// ---------------------------------------------------------------------------------------------------
// Lexing

Status Parser::Err(size_t at, const std::string& msg) const {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < at && i < s_.size(); ++i) {
    if (s_[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return InvalidInput(fmt::format("{}:{}:{}: {}", src_, line, col, support::OneLine(msg, 1000)));
}

void Parser::SkipWsSlow() {
  while (p_ < end_) {
    char c = s_[p_];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++p_;
    } else if (c == '/' && Peek(1) == '*') {
      size_t close = s_.find("*/", p_ + 2);
      p_ = (close == std::string_view::npos || close + 2 > end_) ? end_ : close + 2;
    } else if (c == '/' && Peek(1) == '/') {
      while (p_ < end_ && s_[p_] != '\n') ++p_;
    } else {
      break;
    }
  }
}

void Parser::SkipInlineWs() {
  while (p_ < end_) {
    char c = s_[p_];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++p_;
    } else if (c == '/' && Peek(1) == '*') {
      size_t close = s_.find("*/", p_ + 2);
      p_ = (close == std::string_view::npos || close + 2 > end_) ? end_ : close + 2;
    } else {
      break;
    }
  }
}

bool Parser::TryConsume(char c) {
  SkipWs();
  if (Peek() == c) {
    ++p_;
    return true;
  }
  return false;
}

Status Parser::Expect(char c, std::string_view what) {
  size_t before = p_;
  SkipWs();
  if (Peek() != c) {
    // When the expected character is missing at the end of a line, point at the line, not the next one.
    bool crossed_line = s_.substr(before, p_ - before).find('\n') != std::string_view::npos;
    size_t at = crossed_line ? before : p_;
    if (crossed_line) p_ = before;
    return Err(at, fmt::format("expected '{}' {}, got {}", c, what, Describe()));
  }
  ++p_;
  return Status::Ok();
}

std::string Parser::Describe() const {
  if (p_ >= end_) return "end of input";
  size_t n = 0;
  while (p_ + n < end_ && n < 16 && s_[p_ + n] != '\n') ++n;
  return support::Quote(s_.substr(p_, n));
}

std::string Parser::ReadName() { return std::string(ReadNameView()); }

std::string_view Parser::ReadNameView() {
  SkipWs();
  size_t start = p_;
  if (Peek() == '%') ++p_;
  size_t name_start = p_;
  while (p_ < end_ && IsNameChar(s_[p_])) ++p_;
  if (p_ == name_start) {
    p_ = start;
    return {};
  }
  return s_.substr(name_start, p_ - name_start);
}

bool Parser::LookingAtWord(std::string_view w) const {
  if (p_ + w.size() > end_ || s_.substr(p_, w.size()) != w) return false;
  char next = p_ + w.size() < end_ ? s_[p_ + w.size()] : ' ';
  return !IsNameChar(next);
}

std::string_view Parser::ReadWord() {
  SkipWs();
  size_t start = p_;
  while (p_ < end_ && IsNameChar(s_[p_])) ++p_;
  return s_.substr(start, p_ - start);
}

Expected<int64_t> Parser::ParseInt() {
  SkipWs();
  size_t start = p_;
  bool neg = false;
  if (Peek() == '-' || Peek() == '+') {
    neg = Peek() == '-';
    ++p_;
  }
  if (!IsDigit(Peek())) {
    p_ = start;
    return Err(start, fmt::format("expected an integer, got {}", Describe()));
  }
  // The magnitude may reach 2^63 (INT64_MIN's); one more digit that would pass it is an error at that digit.
  constexpr uint64_t kLimit = uint64_t{1} << 63;
  uint64_t v = 0;
  while (p_ < end_ && IsDigit(s_[p_])) {
    const auto d = static_cast<uint64_t>(s_[p_] - '0');
    if (v > (kLimit - d) / 10) return Err(start, "integer does not fit in 64 bits");
    v = v * 10 + d;
    ++p_;
  }
  if (!neg && v == kLimit) return Err(start, "integer does not fit in 64 bits");
  return neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
}

Expected<double> Parser::ParseNumber() {
  SkipWs();
  size_t start = p_;
  while (p_ < end_ && (IsNameChar(s_[p_]) || s_[p_] == '+')) ++p_;  // digits, '.', '-', 'e', inf, nan
  std::string t(s_.substr(start, p_ - start));
  char* e = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &e);
  if (t.empty() || !e || *e) {
    p_ = start;
    return Err(start, fmt::format("expected a number, got {}", Describe()));
  }
  return v;
}

std::string_view Parser::CaptureValue() {
  SkipWs();
  size_t start = p_;
  int depth = 0;
  while (p_ < end_) {
    char c = s_[p_];
    if (c == '"') {
      ++p_;
      while (p_ < end_ && s_[p_] != '"') p_ += s_[p_] == '\\' ? 2 : 1;
      if (p_ < end_) ++p_;
      continue;
    }
    if (c == '{' || c == '(' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ')' || c == ']') {
      if (depth == 0) break;
      --depth;
    } else if (depth == 0 && (c == ',' || c == '\n' || c == ' ' || c == '\t' || c == '\r')) {
      break;
    }
    ++p_;
  }
  if (p_ > end_) p_ = end_;
  size_t stop = p_;
  while (stop > start && (s_[stop - 1] == ' ' || s_[stop - 1] == '\t' || s_[stop - 1] == '\r')) --stop;
  return s_.substr(start, stop - start);
}

// ---------------------------------------------------------------------------------------------------
// Instructions

Status Parser::ParseInstruction(Scope& scope, bool& is_root) {
  SkipWs();
  size_t start = p_;
  is_root = false;
  if (LookingAtWord("ROOT")) {
    is_root = true;
    p_ += 4;
  }
  SkipWs();
  size_t name_pos = p_;
  std::string_view name = ReadNameView();
  if (name.empty()) return Err(name_pos, fmt::format("expected an instruction name, got {}", Describe()));
  scope.index.Prefetch(name);
  scope.AddName(name);
  OPPROBE_RETURN_IF_ERROR(ExpectOr('=', [&] { return fmt::format("after instruction name {}", name); }));
  SkipWs();
  // XLA's parser infers a left-out result shape (`gte = get-tuple-element(t), index=1`); so does InferShapes.
  Shape shape;
  const bool has_shape = LooksLikeShape();
  Scope::TextSpan shape_text;
  if (has_shape) {
    const size_t shape_pos = p_;
    OPPROBE_RETURN_IF_ERROR(ParseShapeInto(shape, 0));
    size_t shape_end = p_;
    while (shape_end > shape_pos && IsBlank(s_[shape_end - 1])) --shape_end;
    shape_text = {static_cast<uint32_t>(shape_pos), static_cast<uint32_t>(shape_end - shape_pos)};
  }
  Instruction* added = nullptr;
  return ParseInstructionRhs(scope, name, name_pos, start, has_shape ? &shape : nullptr, shape_text, 0, added);
}

Parser::KnownOperand Parser::SkipRepeatedOperandShape(const Scope& scope) {
  // The shape text ends at the first blank: `f32[8]{1,0} %x` (a shape with blanks in it, or longer than the
  // scan, is parsed as usual).
  constexpr size_t kMaxScan = 256;
  const size_t stop = std::min(end_, p_ + kMaxScan);
  size_t q = p_;
  while (q < stop && !IsBlank(s_[q])) ++q;
  if (q >= stop || s_[q] != ' ') return {};
  const size_t pos = q + 1;
  size_t r = pos;
  if (r < end_ && s_[r] == '%') ++r;
  const size_t name_start = r;
  while (r < end_ && IsNameChar(s_[r])) ++r;
  // Not a plain name: an inline operand `s32[] constant(1)` or a tuple element `%t#0`.
  if (r == name_start || (r < end_ && (s_[r] == '(' || s_[r] == '#'))) return {};
  const std::string_view name = s_.substr(name_start, r - name_start);
  const size_t found = scope.index.Find(name);
  if (found == NameIndex::kNone) return {};
  const Scope::TextSpan written = scope.shape_texts[found];
  if (written.size != q - p_ || s_.compare(written.begin, written.size, s_.substr(p_, q - p_)) != 0) return {};
  p_ = r;
  return {{name, pos}, found};
}

Status Parser::ParseOperand(Scope& scope, int depth) {
  SkipWs();
  bool has_operand_shape = false;
  if (LooksLikeShape()) {
    if (const KnownOperand known = SkipRepeatedOperandShape(scope); known.found != NameIndex::kNone) {
      op_stack_.push_back(known.operand);
      op_found_.push_back(known.found);
      return Status::Ok();
    }
    OPPROBE_RETURN_IF_ERROR(ParseShapeInto(operand_shape_, 0));
    has_operand_shape = true;
  }
  SkipWs();
  size_t pos = p_;
  // An inline operand: `add(p, s32[] constant(1))` defines an unnamed instruction in place.
  size_t q = p_;
  while (q < end_ && IsNameChar(s_[q])) ++q;
  if (q > p_ && q < end_ && s_[q] == '(') {
    std::string_view inline_name = SyntheticName(scope, s_.substr(p_, q - p_));
    Shape operand_shape = has_operand_shape ? operand_shape_ : Shape();
    Instruction* inner = nullptr;
    OPPROBE_RETURN_IF_ERROR(ParseInstructionRhs(scope, inline_name, pos, pos,
                                                has_operand_shape ? &operand_shape : nullptr, {}, depth + 1, inner));
    op_stack_.push_back({inline_name, pos});
    op_found_.push_back(NameIndex::kNone);
  } else {
    std::string_view operand = ReadNameView();
    if (operand.empty()) return Err(pos, fmt::format("expected an operand name, got {}", Describe()));
    // `%t#1#0`: element 0 of element 1 of tuple t, an implicit get-tuple-element per index.
    while (Peek() == '#') {
      ++p_;
      size_t index_pos = p_;
      auto index = ParseInt();
      if (!index.ok()) return index.status();
      if (*index < 0) return Err(index_pos, "negative tuple index");
      auto gte = std::make_unique<Instruction>();
      gte->opcode = Opcode::kGetTupleElement;
      std::string_view gte_name = SyntheticName(scope, operand);
      gte->name = std::string(gte_name);
      gte->tuple_index = *index;
      scope.operands.push_back({operand, pos});
      scope.operands_found.push_back(scope.index.Find(operand));
      scope.operand_ends.push_back(scope.operands.size());
      scope.positions.push_back(pos);
      scope.shape_texts.emplace_back();
      infer_.emplace(gte.get(), pos);
      operand = gte_name;
      positions_.emplace_back(scope.comp->AddInstruction(std::move(gte)), pos);
      IndexName(scope, gte_name);
    }
    op_stack_.push_back({operand, pos});
    op_found_.push_back(NameIndex::kNone);
  }
  return Status::Ok();
}

std::string_view Parser::SyntheticName(Scope& scope, std::string_view base) {
  if (!scope.names_built) {
    scope.names.insert(scope.name_list.begin(), scope.name_list.end());
    scope.names_built = true;
  }
  std::string name;
  do { name = fmt::format("{}.{}", base, ++synthetic_count_); } while (scope.names.count(name));
  std::string_view kept = scope.synthetic_names.emplace_back(std::move(name));
  scope.AddName(kept);
  return kept;
}

std::string Parser::UniqueComputationName(const std::string& base) {
  std::string name = base;
  for (int k = 1; computation_names_.count(name); ++k) name = fmt::format("{}.{}", base, k);
  computation_names_.insert(name);
  return name;
}

Status Parser::ParseInstructionRhs(Scope& scope, std::string_view name, size_t name_pos, size_t start, Shape* shape,
                                   Scope::TextSpan shape_text, int depth, Instruction*& added) {
  if (depth > kMaxDepth) return Err(p_, "inline operands nested too deeply");
  const bool infer_shape = shape == nullptr;
  SkipWs();
  size_t op_pos = p_;
  while (p_ < end_ && (IsNameChar(s_[p_]))) ++p_;
  std::string_view opname = s_.substr(op_pos, p_ - op_pos);
  if (opname.empty()) return Err(op_pos, fmt::format("expected an opcode, got {}", Describe()));
  if (infer_shape && Peek() == '[') return Err(op_pos, fmt::format("unknown element type {}", support::Quote(opname)));
  auto instr = std::make_unique<Instruction>();
  instr->name.assign(name.data(), name.size());
  if (shape) instr->shape = std::move(*shape);
  if (auto op = OpcodeFromName(opname)) {
    instr->opcode = *op;
  } else {
    instr->opcode = Opcode::kCustomCall;
    instr->unknown_opcode = std::string(opname);
  }
  SkipInlineWs();  // `tuple (a, b)`
  if (Peek() != '(') return Err(p_, fmt::format("expected '(' after opcode {}", opname));
  ++p_;
  // This instruction's operands go on op_stack_ above `ops_base` (an inline operand's own are pushed and
  // popped above them while they are read).
  const size_t ops_base = op_stack_.size();
  if (instr->opcode == Opcode::kParameter) {
    size_t pos = p_;
    auto n = ParseInt();
    if (!n.ok()) return n.status();
    if (*n < 0) return Err(pos, "negative parameter number");
    instr->parameter_number = *n;
  } else if (instr->opcode == Opcode::kConstant) {
    if (infer_shape) return Err(name_pos, fmt::format("constant {} needs a shape", name));
    auto lit = ParseLiteral(instr->shape, 0);
    if (!lit.ok()) return lit.status();
    instr->literal = std::move(*lit);
  } else {
    SkipWs();
    if (Peek() != ')') {
      while (true) {
        OPPROBE_RETURN_IF_ERROR(ParseOperand(scope, depth));
        SkipWs();
        if (Peek() == ',') {
          ++p_;
          continue;
        }
        break;
      }
    }
  }
  OPPROBE_RETURN_IF_ERROR(ExpectOr(')', [&] { return fmt::format("to close the operands of {}", name); }));
  const size_t op_count = op_stack_.size() - ops_base;
  if (instr->unknown_opcode.empty()) {
    int arity = OpcodeArity(instr->opcode);
    // async-update and async-done pass on every operand of the wrapped computation, as XLA writes them.
    const bool any_count = instr->opcode == Opcode::kAsyncUpdate || instr->opcode == Opcode::kAsyncDone;
    if (arity >= 0 && !any_count && instr->opcode != Opcode::kParameter && instr->opcode != Opcode::kConstant &&
        static_cast<int>(op_count) != arity)
      return Err(op_pos, fmt::format("{} takes {} operand(s), {} has {}", opname, arity, name, op_count));
  }
  const size_t first_call = calls_.size();
  OPPROBE_RETURN_IF_ERROR(ParseAttributes(scope, *instr, name_pos, depth));
  for (size_t k = 0; k < instr->called_computations.size(); ++k) {
    if (instr->called_computations[k]) continue;  // an inline computation
    bool pending = std::any_of(calls_.begin() + static_cast<std::ptrdiff_t>(first_call), calls_.end(),
                               [&](const PendingCall& c) { return c.instr == instr.get() && c.slot == k; });
    if (!pending) return Err(start, fmt::format("{} is missing a called computation", name));
  }
  scope.operands.insert(scope.operands.end(), op_stack_.begin() + static_cast<std::ptrdiff_t>(ops_base),
                        op_stack_.end());
  for (size_t k = ops_base; k < op_stack_.size(); ++k)
    scope.operands_found.push_back(op_found_[k] != NameIndex::kNone ? op_found_[k]
                                                                    : scope.index.Find(op_stack_[k].name));
  scope.operand_ends.push_back(scope.operands.size());
  op_stack_.resize(ops_base);
  op_found_.resize(ops_base);
  scope.positions.push_back(name_pos);
  scope.shape_texts.push_back(shape_text);
  if (infer_shape) infer_.emplace(instr.get(), name_pos);
  added = scope.comp->AddInstruction(std::move(instr));
  positions_.emplace_back(added, name_pos);
  IndexName(scope, name);
  return Status::Ok();
}

void Parser::IndexName(Scope& scope, std::string_view name) {
  // A name given twice is reported once the whole computation has been read (parse errors further on come first).
  if (!scope.index.Insert(name) && scope.first_duplicate == NameIndex::kNone)
    scope.first_duplicate = scope.comp->instructions().size() - 1;
}

// ---------------------------------------------------------------------------------------------------
// Computations

Status Parser::ParseInstructionList(Scope& scope, size_t name_pos, Computation*& added) {
  const std::string name = scope.comp->name();
  OPPROBE_RETURN_IF_ERROR(ExpectOr('{', [&] { return fmt::format("to open computation {}", name); }));
  Instruction* root = nullptr;
  const size_t list_start = p_;
  constexpr size_t kReserveAfter = 1024;  // instructions
  while (true) {
    SkipWs();
    if (AtEnd()) return Err(p_, fmt::format("computation {} is not closed with '}}'", name));
    if (Peek() == '}') {
      ++p_;
      break;
    }
    bool is_root = false;
    OPPROBE_RETURN_IF_ERROR(ParseInstruction(scope, is_root));
    // A computation that proves big gets its lists sized for the rest of the text at the rate read so far:
    // growing them by doubling copied each one and left the old buffers' pages behind (a third of the page
    // faults of a 200k-instruction module). Room reserved and not used costs address space only.
    if (const size_t n = scope.positions.size(); n == kReserveAfter) {
      const size_t read = std::max<size_t>(p_ - list_start, 1);
      const size_t more = static_cast<size_t>(static_cast<double>(end_ - p_) / static_cast<double>(read) * n);
      scope.Reserve(n + more + more / 8);
      positions_.reserve(positions_.size() + more + more / 8);
    }
    if (is_root) {
      if (root) return Err(scope.positions.back(), fmt::format("computation {} has two ROOT instructions", name));
      root = scope.comp->instructions().back().get();
    }
  }
  auto& instrs = scope.comp->mutable_instructions();
  const auto& positions = scope.positions;
  if (instrs.empty()) return Err(name_pos, fmt::format("computation {} has no instructions", name));
  // Resolve operands by name (forward references allowed; most were found as they were read), then order
  // operands before users.
  if (const size_t i = scope.first_duplicate; i != NameIndex::kNone)
    return Err(positions[i], fmt::format("instruction {} defined twice in {}", instrs[i]->name, name));
  const NameIndex& index = scope.index;
  std::set<int64_t> param_numbers;
  // resolved[k]: the index of the instruction scope.operands[k] names.
  std::vector<size_t>& resolved = scope.operands_found;
  for (size_t i = 0; i < instrs.size(); ++i) {
    PrefetchAhead(instrs, i);
    if (instrs[i]->opcode == Opcode::kParameter && !param_numbers.insert(instrs[i]->parameter_number).second)
      return Err(positions[i], fmt::format("parameter number {} used twice in {}", instrs[i]->parameter_number, name));
    const size_t b = i == 0 ? 0 : scope.operand_ends[i - 1], e = scope.operand_ends[i];
    instrs[i]->operands.reserve(e - b);
    for (size_t k = b; k < e; ++k) {
      const PendingOperand& o = scope.operands[k];
      const size_t at = resolved[k] != NameIndex::kNone ? resolved[k] : index.Find(o.name);
      if (at == NameIndex::kNone)
        return Err(o.pos, fmt::format("instruction {} uses unknown operand {}", instrs[i]->name, o.name));
      resolved[k] = at;
      instrs[i]->operands.push_back(instrs[at].get());
    }
  }
  // The operands' indices of instruction i.
  auto operand_indices = [&](size_t i) {
    const size_t b = i == 0 ? 0 : scope.operand_ends[i - 1];
    return std::span<const size_t>(resolved.data() + b, scope.operand_ends[i] - b);
  };
  for (const auto& [instr, pos] : scope.control)
    for (const auto& pred : instr->rare().control_predecessors)
      if (index.Find(pred) == NameIndex::kNone)
        return Err(pos, fmt::format("instruction {} names unknown control predecessor {}", instr->name, pred));
  for (size_t k = 0; k < param_numbers.size(); ++k)
    if (!param_numbers.count(static_cast<int64_t>(k)))
      return Err(name_pos, fmt::format("computation {} has no parameter {}", name, k));
  bool ordered = true;
  for (size_t i = 0; i < instrs.size() && ordered; ++i)
    for (size_t d : operand_indices(i))
      if (d >= i) ordered = false;
  if (!ordered) {
    // Kahn's algorithm, keeping text order among ready instructions; a leftover means a cycle.
    size_t n = instrs.size();
    std::vector<std::vector<size_t>> users(n);
    std::vector<size_t> pending(n, 0);
    for (size_t i = 0; i < n; ++i) {
      std::set<size_t> uniq;
      for (size_t d : operand_indices(i)) uniq.insert(d);
      pending[i] = uniq.size();
      for (size_t d : uniq) users[d].push_back(i);
    }
    std::set<size_t> ready;
    for (size_t i = 0; i < n; ++i)
      if (pending[i] == 0) ready.insert(i);
    std::vector<size_t> order;
    while (!ready.empty()) {
      size_t i = *ready.begin();
      ready.erase(ready.begin());
      order.push_back(i);
      for (size_t u : users[i])
        if (--pending[u] == 0) ready.insert(u);
    }
    if (order.size() != n) {
      for (size_t i = 0; i < n; ++i)
        if (pending[i] != 0)
          return Err(positions[i],
                     fmt::format("instruction {} is part of an operand cycle in {}", instrs[i]->name, name));
    }
    std::vector<std::unique_ptr<Instruction>> sorted;
    sorted.reserve(order.size());
    for (size_t i : order) sorted.push_back(std::move(instrs[i]));
    instrs = std::move(sorted);
  }
  scope.comp->set_root(root ? root : instrs.back().get());
  added = module_->AddComputation(std::move(scope.comp));
  return Status::Ok();
}

Status Parser::ParseComputation(Computation*& entry) {
  SkipWs();
  bool is_entry = false;
  if (LookingAtWord("ENTRY")) {
    is_entry = true;
    p_ += 5;
  }
  SkipWs();
  size_t name_pos = p_;
  std::string name = ReadName();
  if (name.empty()) return Err(name_pos, fmt::format("expected a computation name, got {}", Describe()));
  if (module_->FindComputation(name)) return Err(name_pos, fmt::format("computation {} defined twice", name));
  computation_names_.insert(name);
  SkipWs();
  std::optional<Shape> result_shape;
  size_t result_pos = 0;
  if (Peek() == '(') {  // signature: (name: shape, ...) -> shape; XLA also takes `name shape`
    ++p_;
    SkipWs();
    while (Peek() != ')') {
      std::string pname = ReadName();
      if (pname.empty()) return Err(p_, fmt::format("expected a parameter name, got {}", Describe()));
      SkipWs();
      if (Peek() == ':') ++p_;
      auto ps = ParseShape(0);
      if (!ps.ok()) return ps.status();
      SkipWs();
      if (Peek() == ',') {
        ++p_;
        SkipWs();
      } else if (Peek() != ')') {
        return Err(p_, fmt::format("expected ',' or ')' in signature, got {}", Describe()));
      }
    }
    ++p_;
    SkipWs();
    if (!(Peek() == '-' && Peek(1) == '>')) return Err(p_, "expected '->' in computation signature");
    p_ += 2;
    SkipWs();
    result_pos = p_;
    auto rs = ParseShape(0);
    if (!rs.ok()) return rs.status();
    result_shape = std::move(*rs);
  }
  Scope scope;
  scope.comp = std::make_unique<Computation>(name);
  Computation* added = nullptr;
  OPPROBE_RETURN_IF_ERROR(ParseInstructionList(scope, name_pos, added));
  computation_positions_.emplace_back(added, name_pos);
  if (result_shape) signatures_.push_back({added, std::move(*result_shape), result_pos});
  // `}, execution_thread="worker"`: the thread the computation runs on.
  size_t save = p_;
  SkipWs();
  if (Peek() == ',') {
    ++p_;
    SkipWs();
    if (!LookingAtWord("execution_thread"))
      return Err(p_, fmt::format("expected execution_thread, got {}", Describe()));
    p_ += 16;
    OPPROBE_RETURN_IF_ERROR(Expect('=', "after execution_thread"));
    SkipWs();
    auto thread = ParseQuoted();
    if (!thread.ok()) return thread.status();
    added->execution_thread = std::move(*thread);
  } else {
    p_ = save;
  }
  if (is_entry) {
    if (entry) return Err(name_pos, "module has two ENTRY computations");
    entry = added;
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------------
// Modules

Expected<std::unique_ptr<Module>> Parser::ParseModule() {
  SkipWs();
  auto module = std::make_unique<Module>("module");
  module_ = module.get();
  if (LookingAtWord("HloModule")) {
    p_ += 9;
    SkipInlineWs();
    size_t name_start = p_;
    while (p_ < end_ && s_[p_] != ',' && s_[p_] != ' ' && s_[p_] != '\n' && s_[p_] != '\r' && s_[p_] != '\t') ++p_;
    if (p_ == name_start) return Err(p_, "expected a module name after HloModule");
    for (size_t k = name_start; k < p_; ++k) {
      const auto c = static_cast<unsigned char>(s_[k]);
      if (c < 0x20 || c == 0x7f)
        return Err(k, fmt::format("a module name cannot hold the control byte {}", support::Quote(s_.substr(k, 1))));
    }
    module->set_name(std::string(s_.substr(name_start, p_ - name_start)));
    // The header's attributes may continue over several lines (`entry_computation_layout={\n ...}`); the first
    // computation may follow on the same line.
    while (true) {
      size_t save = p_;
      SkipWs();
      if (Peek() != ',') {
        p_ = save;
        break;
      }
      ++p_;
      SkipWs();
      size_t kpos = p_;
      while (p_ < end_ && IsNameChar(s_[p_])) ++p_;
      std::string key(s_.substr(kpos, p_ - kpos));
      if (key.empty()) return Err(kpos, fmt::format("expected a module attribute, got {}", Describe()));
      SkipWs();
      if (Peek() != '=') return Err(p_, fmt::format("expected '=' after module attribute {}", key));
      ++p_;
      std::string_view value = CaptureValue();
      if (value.empty()) return Err(p_, fmt::format("module attribute {} has no value", key));
      module->header_attributes.emplace_back(key, std::string(value));
    }
  }
  Computation* entry = nullptr;
  while (true) {
    SkipWs();
    if (AtEnd()) break;
    if (LookingAtWord("HloModule")) return Err(p_, "a second HloModule in the same module text");
    // Stack-frame sections (`FileNames`, `FunctionNames`, `FileLocations`, `StackFrames`): numbered entries of
    // a string or a {...} record. opprobe reads no stack frames yet; the sections are skipped.
    if (LookingAtWord("FileNames") || LookingAtWord("FunctionNames") || LookingAtWord("FileLocations") ||
        LookingAtWord("StackFrames")) {
      size_t save = p_;
      while (p_ < end_ && IsNameChar(s_[p_])) ++p_;
      SkipWs();
      if (AtEnd() || IsDigit(Peek())) {
        while (true) {
          SkipWs();
          if (!IsDigit(Peek())) break;
          while (p_ < end_ && IsDigit(s_[p_])) ++p_;
          size_t value_pos = p_;
          if (CaptureValue().empty())
            return Err(value_pos, "expected a string or {...} entry in a stack-frame section");
        }
        continue;
      }
      p_ = save;  // a computation that happens to have one of these names
    }
    OPPROBE_RETURN_IF_ERROR(ParseComputation(entry));
  }
  if (module->computations().empty()) return Err(p_, "module has no computations");
  std::unordered_map<std::string, Computation*> by_name;
  for (const auto& c : module->computations()) by_name[c->name()] = c.get();
  for (const auto& call : calls_) {
    auto it = by_name.find(call.name);
    if (it == by_name.end())
      return Err(call.pos, fmt::format("{} calls unknown computation {}", call.instr->name, call.name));
    call.instr->called_computations[call.slot] = it->second;
  }
  module->set_entry(entry ? entry : module->computations().back().get());
  // The call graph must be acyclic (callees are run by their callers).
  std::map<const Computation*, int> state;  // 1 visiting, 2 done
  std::vector<std::pair<const Computation*, size_t>> stack;
  std::map<const Computation*, std::vector<const Computation*>> callees_cache;
  auto callees = [&](const Computation* comp) -> const std::vector<const Computation*>& {
    auto it = callees_cache.find(comp);
    if (it != callees_cache.end()) return it->second;
    std::vector<const Computation*> v;
    for (const auto& i : comp->instructions())
      for (auto* cc : i->called_computations) v.push_back(cc);
    return callees_cache.emplace(comp, std::move(v)).first->second;
  };
  for (const auto& c : module->computations()) {
    if (state[c.get()] == 2) continue;
    stack.push_back({c.get(), 0});
    state[c.get()] = 1;
    while (!stack.empty()) {
      auto& [comp, next] = stack.back();
      const auto& cs = callees(comp);
      if (next < cs.size()) {
        const Computation* callee = cs[next++];
        if (state[callee] == 1)
          return InvalidInput(fmt::format("{}: computation {} calls itself (directly or through {})", src_,
                                          callee->name(), comp->name()));
        if (state[callee] == 0) {
          state[callee] = 1;
          stack.push_back({callee, 0});
        }
      } else {
        state[comp] = 2;
        stack.pop_back();
      }
    }
  }
  OPPROBE_RETURN_IF_ERROR(InferShapes());
  for (const auto& [instr, pos] : scalar_operand_checks_)
    if (!instr->operands.empty() && instr->operands[0]->shape.rank() != 0)
      return Err(pos, fmt::format("{} {} needs dimensions= (its operand is not a scalar)", OpcodeName(instr->opcode),
                                  instr->name));
  OPPROBE_RETURN_IF_ERROR(Verify());
  module->AssignIds();
  return module;
}

Status Parser::Verify() {
  // XLA's parser: a computation's root agrees with the result shape its signature writes.
  for (const auto& sig : signatures_) {
    const Instruction* root = sig.computation->root();
    if (root && !ShapesAgree(root->shape, sig.result, ShapeCheckOptions{false}))
      return Err(sig.pos, fmt::format("computation {} returns {}, its root {} is {}", sig.computation->name(),
                                      sig.result.ToString(false), root->name, root->shape.ToString(false)));
  }
  auto violation = FindViolation(*module_);
  if (!violation) return Status::Ok();
  // The place: the instruction's name, else the computation's, else where the module starts.
  size_t at = begin_;
  bool found = false;
  if (violation->instruction)
    for (const auto& [instr, pos] : positions_)
      if (instr == violation->instruction) {
        at = pos;
        found = true;
        break;
      }
  if (!found && violation->computation)
    for (const auto& [comp, pos] : computation_positions_)
      if (comp == violation->computation) {
        at = pos;
        break;
      }
  return Err(at, DescribeViolation(*violation));
}

Status Parser::InferShapes() {
  if (infer_.empty()) return Status::Ok();
  // Callees first (the call graph is acyclic by now); within a computation, instructions are in operand order.
  std::set<const Computation*> done;
  std::function<Status(const Computation*, int)> visit = [&](const Computation* c, int depth) -> Status {
    if (!c || !done.insert(c).second) return Status::Ok();
    if (depth > 512) return InvalidInput(fmt::format("{}: computations nested too deeply to infer shapes", src_));
    for (const auto& i : c->instructions()) {
      for (const Computation* callee : i->called_computations) OPPROBE_RETURN_IF_ERROR(visit(callee, depth + 1));
      auto it = infer_.find(i.get());
      if (it == infer_.end()) continue;
      auto shape = InferShape(*i);
      if (!shape.ok())
        return Err(it->second, fmt::format("cannot infer the shape of {} {}: {}", OpcodeName(i->opcode), i->name,
                                           shape.status().message()));
      i->shape = std::move(*shape);
    }
    return Status::Ok();
  };
  for (const auto& c : module_->computations()) OPPROBE_RETURN_IF_ERROR(visit(c.get(), 0));
  return Status::Ok();
}

}  // namespace parse_internal

namespace {

using parse_internal::Parser;

// Byte ranges of module texts in a file.
std::vector<std::pair<size_t, size_t>> SplitRanges(std::string_view text) {
  std::vector<std::pair<size_t, size_t>> out;
  auto line_starts_with = [&](size_t at, std::string_view w) { return text.substr(at, w.size()) == w; };
  std::vector<size_t> lines;
  for (size_t i = 0; i < text.size();) {
    lines.push_back(i);
    size_t nl = text.find('\n', i);
    if (nl == std::string_view::npos) break;
    i = nl + 1;
  }
  bool framed = false;
  for (size_t l : lines)
    if (line_starts_with(l, "## BEGIN_GRAPH")) framed = true;
  if (framed) {
    for (size_t k = 0; k < lines.size(); ++k) {
      if (!line_starts_with(lines[k], "## BEGIN_GRAPH")) continue;
      size_t begin = k + 1 < lines.size() ? lines[k + 1] : text.size();
      size_t end = text.size();
      for (size_t j = k + 1; j < lines.size(); ++j)
        // torch_xla 2.x writes `Graph Hash: <hex>` after the module, before `## END_GRAPH`.
        if (line_starts_with(lines[j], "## END_GRAPH") || line_starts_with(lines[j], "## BEGIN_GRAPH") ||
            line_starts_with(lines[j], "Graph Hash:")) {
          end = lines[j];
          break;
        }
      out.emplace_back(begin, end);
    }
    return out;
  }
  std::vector<size_t> starts;
  for (size_t l : lines) {
    size_t q = l;
    while (q < text.size() && (text[q] == ' ' || text[q] == '\t')) ++q;
    if (line_starts_with(q, "HloModule ") || line_starts_with(q, "HloModule\t")) starts.push_back(l);
  }
  if (starts.empty()) {
    out.emplace_back(0, text.size());
    return out;
  }
  // Anything before the first HloModule line belongs to the first module (so that junk is an error).
  starts[0] = 0;
  for (size_t k = 0; k < starts.size(); ++k)
    out.emplace_back(starts[k], k + 1 < starts.size() ? starts[k + 1] : text.size());
  return out;
}

}  // namespace

Expected<std::vector<std::unique_ptr<Module>>> ParseModules(std::string_view text, const std::string& source_name) {
  std::vector<std::unique_ptr<Module>> out;
  for (auto [begin, end] : SplitRanges(text)) {
    Parser parser(text, begin, end, source_name);
    auto m = parser.ParseModule();
    if (!m.ok()) return m.status();
    out.push_back(std::move(*m));
  }
  if (out.empty()) return InvalidInput(source_name + ": no HLO module found");
  return out;
}

Expected<std::unique_ptr<Module>> ParseModule(std::string_view text, const std::string& source_name) {
  auto ranges = SplitRanges(text);
  if (ranges.size() != 1)
    return InvalidInput(fmt::format("{}: holds {} modules where one was expected", source_name, ranges.size()));
  Parser parser(text, ranges[0].first, ranges[0].second, source_name);
  return parser.ParseModule();
}

std::vector<std::string_view> SplitModuleTexts(std::string_view text) {
  std::vector<std::string_view> out;
  for (auto [begin, end] : SplitRanges(text)) out.push_back(text.substr(begin, end - begin));
  return out;
}

PrintOptions DetectPrintStyle(std::string_view module_text) {
  size_t brace = module_text.find('{');
  size_t eq = module_text.find(" = ", brace == std::string_view::npos ? 0 : brace);
  if (eq == std::string_view::npos) return PrintOptions::Long();
  size_t line = module_text.rfind('\n', eq);
  std::string_view head = module_text.substr(line == std::string_view::npos ? 0 : line + 1,
                                             eq - (line == std::string_view::npos ? 0 : line + 1));
  return head.find('%') != std::string_view::npos ? PrintOptions::Long() : PrintOptions::Short();
}

Expected<Shape> ParseShape(std::string_view text) {
  static const std::string kSource = "shape";
  Parser parser(text, 0, text.size(), kSource);
  return parser.ParseShapeOnly();
}

Status ParseAttributeValue(Instruction& in, std::string_view key, std::string_view value, const std::string& source) {
  const AttrSpec* spec = FindAttribute(in, key);
  if (!spec) return InvalidInput(fmt::format("{}: {} has no attribute {}", source, in.name, support::Quote(key)));
  Parser parser(value, 0, value.size(), source);
  return parser.ParseAttributeValueOnly(in, *spec);
}

}  // namespace opprobe::hlo
