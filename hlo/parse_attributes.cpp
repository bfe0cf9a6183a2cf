// The HLO text parser, part 2: attribute values. ParseAttributes walks the opcode's schema (hlo/attributes.h);
// ValueParser reads one value per AttrKind. Attributes the schema does not know are kept as written.
#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "hlo/parser_internal.h"

namespace opprobe::hlo::parse_internal {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Reads one value of each kind at the parser's position into the field VisitField hands it.
struct ValueParser {
  Parser& p;
  Scope* scope;
  Instruction& in;
  const AttrSpec& spec;
  size_t value_pos;

  std::string Key() const { return std::string(spec.key); }
  Status Bad(std::string_view what, std::string_view value) const {
    return p.Err(value_pos, fmt::format("{} {}", what, support::Quote(value)));
  }

  Status operator()(AttrKindTag<AttrKind::kInt>, int64_t& v) {
    auto x = p.ParseInt();
    if (!x.ok()) return x.status();
    v = *x;
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kInt32>, int32_t& v) {
    auto x = p.ParseInt();
    if (!x.ok()) return x.status();
    // reduce-precision's bit counts stay small: the evaluator shifts by them.
    const bool bits = spec.field == AttrField::kExponentBits || spec.field == AttrField::kMantissaBits;
    if (bits ? (*x < 0 || *x > 1000)
             : (*x < std::numeric_limits<int32_t>::min() || *x > std::numeric_limits<int32_t>::max()))
      return p.Err(value_pos, fmt::format("{} out of range", spec.key));
    v = static_cast<int32_t>(*x);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kOptInt>, std::optional<int64_t>& v) {
    auto x = p.ParseInt();
    if (!x.ok()) return x.status();
    v = *x;
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kBool>, bool& v) {
    std::string_view w = p.CaptureValue();
    if (w == "true") v = true;
    else if (w == "false") v = false;
    else return p.Err(value_pos, fmt::format("{} must be true or false", spec.key));
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kFloat>, float& v) {
    std::string_view w = p.CaptureValue();
    std::string t(w);
    char* e = nullptr;
    errno = 0;
    float f = std::strtof(t.c_str(), &e);
    if (!e || *e || t.empty()) return Bad(fmt::format("bad {}", spec.key), w);
    v = f;
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kString>, std::string& v) {
    auto x = p.ParseQuoted();
    if (!x.ok()) return x.status();
    v = std::move(*x);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kStringOrJson>, std::string& v) {
    if (p.Peek() == '"') return (*this)(AttrKindTag<AttrKind::kString>{}, v);
    if (p.Peek() == '{') return p.ParseBalanced(v);
    return p.Err(value_pos,
                 fmt::format("{} must be a quoted string or a {{...}} dictionary, got {}", spec.key, p.Describe()));
  }
  Status operator()(AttrKindTag<AttrKind::kWord>, std::string& v) {
    std::string_view w = p.CaptureValue();
    if (!IsWordOf(spec.field, w)) return Bad(fmt::format("unknown {}", spec.key), w);
    v = std::string(w);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kIntList>, std::vector<int64_t>& v) {
    auto x = p.ParseIntList();
    if (!x.ok()) return x.status();
    v = std::move(*x);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kIntListList>, std::vector<std::vector<int64_t>>& v) {
    auto x = p.ParseIntListList();
    if (!x.ok()) return x.status();
    if (spec.field == AttrField::kSourceTargetPairs)
      for (const auto& pair : *x)
        if (pair.size() != 2) return p.Err(value_pos, "source_target_pairs must be a list of {source,target} pairs");
    v = std::move(*x);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kBoolList>, std::vector<bool>& v) {
    OPPROBE_RETURN_IF_ERROR(p.ExpectOr('{', [&] { return fmt::format("to open {}", spec.key); }));
    std::vector<bool> out;
    p.SkipWs();
    while (p.Peek() != '}') {
      size_t pos = p.p_;
      std::string_view w = p.ReadWord();
      if (w == "true") out.push_back(true);
      else if (w == "false") out.push_back(false);
      else return p.Err(pos, fmt::format("expected true or false in {}, got {}", spec.key, p.Describe()));
      if (!p.TryConsume(',')) break;
      p.SkipWs();
    }
    OPPROBE_RETURN_IF_ERROR(p.ExpectOr('}', [&] { return fmt::format("to close {}", spec.key); }));
    v = std::move(out);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kNameList>, std::vector<std::string>& v) {
    OPPROBE_RETURN_IF_ERROR(p.ExpectOr('{', [&] { return fmt::format("to open {}", spec.key); }));
    std::vector<std::string> out;
    p.SkipWs();
    while (p.Peek() != '}') {
      size_t pos = p.p_;
      std::string name = p.ReadName();
      if (name.empty())
        return p.Err(pos, fmt::format("expected an instruction name in {}, got {}", spec.key, p.Describe()));
      out.push_back(std::move(name));
      if (!p.TryConsume(',')) break;
      p.SkipWs();
    }
    OPPROBE_RETURN_IF_ERROR(p.ExpectOr('}', [&] { return fmt::format("to close {}", spec.key); }));
    v = std::move(out);
    if (scope) scope->control.emplace_back(&in, value_pos);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kText>, std::string& v) { return p.ParseBalanced(v); }
  Status operator()(AttrKindTag<AttrKind::kWindow>, support::HeapOptional<Window>& v) {
    Window w;
    OPPROBE_RETURN_IF_ERROR(p.ParseWindow(w));
    v = std::move(w);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kConvDims>, support::HeapOptional<ConvolutionDimensionNumbers>& v) {
    ConvolutionDimensionNumbers d;
    OPPROBE_RETURN_IF_ERROR(p.ParseDimLabels(d));
    v = std::move(d);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kSlice>, support::HeapOptional<SliceDimensions>& v) {
    SliceDimensions s;
    OPPROBE_RETURN_IF_ERROR(p.ParseSlice(s));
    v = std::move(s);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kPadding>, support::HeapOptional<PaddingConfig>& v) {
    PaddingConfig c;
    OPPROBE_RETURN_IF_ERROR(p.ParsePadding(c));
    v = std::move(c);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kDirection>, ComparisonDirection& v) {
    std::string_view w = p.CaptureValue();
    auto d = ComparisonDirectionFromName(w);
    if (!d) return Bad("unknown comparison direction", w);
    v = *d;
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kFftType>, FftType& v) {
    std::string_view w = p.CaptureValue();
    auto t = FftTypeFromName(w);
    if (!t) return Bad("unknown fft_type", w);
    v = *t;
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kDistribution>, RandomDistribution& v) {
    std::string_view w = p.CaptureValue();
    if (w == "rng_uniform") v = RandomDistribution::kUniform;
    else if (w == "rng_normal") v = RandomDistribution::kNormal;
    else return Bad("unknown distribution", w);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kTransposeA>, TransposeA& v) {
    std::string_view w = p.CaptureValue();
    auto t = TransposeAFromName(w);
    if (!t) return Bad("unknown transpose_a", w);
    v = *t;
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kPrecisionList>, std::vector<PrecisionLevel>& v) {
    OPPROBE_RETURN_IF_ERROR(p.ExpectOr('{', [&] { return fmt::format("to open {}", spec.key); }));
    std::vector<PrecisionLevel> levels;
    p.SkipWs();
    while (p.Peek() != '}') {
      size_t pos = p.p_;
      std::string w = Lower(p.ReadWord());
      if (w == "default") levels.push_back(PrecisionLevel::kDefault);
      else if (w == "high") levels.push_back(PrecisionLevel::kHigh);
      else if (w == "highest") levels.push_back(PrecisionLevel::kHighest);
      else if (w == "packed_nibble") levels.push_back(PrecisionLevel::kPackedNibble);
      else return p.Err(pos, fmt::format("unknown precision {}", p.Describe()));
      if (!p.TryConsume(',')) break;
      p.SkipWs();
    }
    OPPROBE_RETURN_IF_ERROR(p.ExpectOr('}', [&] { return fmt::format("to close {}", spec.key); }));
    v = std::move(levels);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kMetadata>, support::SharedValue<OpMetadata>& v) {
    return p.ParseSharedMetadata(v);
  }
  Status operator()(AttrKindTag<AttrKind::kSharding>, support::HeapOptional<Sharding>& v) {
    Sharding s;
    OPPROBE_RETURN_IF_ERROR(p.ParseSharding(s, 0));
    v = std::move(s);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kFrontendAttributes>, std::vector<std::pair<std::string, std::string>>& v) {
    return p.ParseFrontendAttributes(v);
  }
  Status operator()(AttrKindTag<AttrKind::kReplicaGroups>, CollectiveDeviceList& v) { return p.ParseReplicaGroups(v); }
  Status operator()(AttrKindTag<AttrKind::kAliasing>, std::vector<OutputOperandAlias>& v) { return p.ParseAliasing(v); }
  Status operator()(AttrKindTag<AttrKind::kShape>, support::HeapOptional<Shape>& v) {
    auto s = p.ParseShape(0);
    if (!s.ok()) return s.status();
    v = std::move(*s);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kShapeList>, support::HeapOptional<std::vector<Shape>>& v) {
    OPPROBE_RETURN_IF_ERROR(p.ExpectOr('{', [&] { return fmt::format("to open {}", spec.key); }));
    std::vector<Shape> shapes;
    p.SkipWs();
    while (p.Peek() != '}') {
      auto s = p.ParseShape(0);
      if (!s.ok()) return s.status();
      shapes.push_back(std::move(*s));
      if (!p.TryConsume(',')) break;
      p.SkipWs();
    }
    OPPROBE_RETURN_IF_ERROR(p.ExpectOr('}', [&] { return fmt::format("to close {}", spec.key); }));
    v = std::move(shapes);
    return Status::Ok();
  }
  // `literal=s32[2]{0} {1, 2}`, or a tuple of such: `literal=( s32[] 1, pred[2] {1, 0} )`.
  Expected<Literal> ShapedLiteral(int depth) {
    if (depth > kMaxDepth) return p.Err(p.p_, "literal nested too deeply");
    p.SkipWs();
    if (p.Peek() == '(') {
      ++p.p_;
      std::vector<Literal> elements;
      std::vector<Shape> shapes;
      p.SkipWs();
      while (p.Peek() != ')') {
        auto e = ShapedLiteral(depth + 1);
        if (!e.ok()) return e.status();
        shapes.push_back(e->shape());
        elements.push_back(std::move(*e));
        if (!p.TryConsume(',')) break;
      }
      OPPROBE_RETURN_IF_ERROR(p.Expect(')', "to close a tuple literal"));
      Literal l = Literal::Tuple(std::move(elements));
      l.mutable_shape() = Shape::Tuple(std::move(shapes));
      return l;
    }
    auto s = p.ParseShape(0);
    if (!s.ok()) return s.status();
    return p.ParseLiteral(*s, depth + 1);
  }
  Status operator()(AttrKindTag<AttrKind::kLiteral>, support::HeapOptional<Literal>& v) {
    auto l = ShapedLiteral(0);
    if (!l.ok()) return l.status();
    v = std::move(*l);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kResultAccuracy>, support::HeapOptional<ResultAccuracy>& v) {
    ResultAccuracy r;
    OPPROBE_RETURN_IF_ERROR(p.ParseResultAccuracy(r));
    v = r;
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kComputation>, std::vector<Computation*>&) {
    return p.ParseComputationRef(scope, in, static_cast<size_t>(spec.slot), Key());
  }
  Status operator()(AttrKindTag<AttrKind::kComputationList>, std::vector<Computation*>& v) {
    OPPROBE_RETURN_IF_ERROR(p.ExpectOr('{', [&] { return fmt::format("to open {}", spec.key); }));
    p.SkipWs();
    while (p.Peek() != '}') {
      OPPROBE_RETURN_IF_ERROR(p.ParseComputationRef(scope, in, v.size(), Key()));
      if (!p.TryConsume(',')) break;
      p.SkipWs();
    }
    return p.ExpectOr('}', [&] { return fmt::format("to close {}", spec.key); });
  }
};

}  // namespace

Status Parser::ParseValue(Scope* scope, Instruction& in, const AttrSpec& spec, size_t key_pos) {
  (void)key_pos;
  SkipWs();
  ValueParser vp{*this, scope, in, spec, p_};
  return VisitField(spec.field, in, vp);
}

Status Parser::ParseAttributes(Scope& scope, Instruction& in, size_t start, int depth) {
  // After an inline operand, `, x` is the next operand of the enclosing instruction, not an attribute: only
  // `, key=` continues the attributes there.
  // The keys given (views into the text): an instruction has a few, held inline; more go to `seen_more`.
  std::array<std::string_view, 8> seen;
  size_t seen_count = 0;
  std::vector<std::string_view> seen_more;
  auto given = [&](std::string_view k) {
    return std::find(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(seen_count), k) !=
               seen.begin() + static_cast<std::ptrdiff_t>(seen_count) ||
           std::find(seen_more.begin(), seen_more.end(), k) != seen_more.end();
  };
  while (true) {
    size_t save = p_;
    SkipWs();
    if (Peek() != ',') {
      p_ = save;
      break;
    }
    ++p_;
    SkipWs();
    size_t key_pos = p_;
    while (p_ < end_ && IsNameChar(s_[p_])) ++p_;
    std::string_view key = s_.substr(key_pos, p_ - key_pos);
    if (depth > 0) {
      size_t after_key = p_;
      SkipWs();
      bool is_attribute = !key.empty() && Peek() == '=';
      p_ = after_key;
      if (!is_attribute) {
        p_ = save;
        break;
      }
    }
    if (key.empty()) return Err(key_pos, fmt::format("expected an attribute name, got {}", Describe()));
    if (given(key)) return Err(key_pos, fmt::format("attribute {} given twice", key));
    if (seen_count < seen.size()) seen[seen_count++] = key;
    else seen_more.push_back(key);
    SkipWs();
    if (Peek() != '=') return Err(p_, fmt::format("expected '=' after attribute {}", key));
    ++p_;
    SkipWs();
    size_t value_pos = p_;
    if (AtEnd()) return Err(value_pos, fmt::format("attribute {} has no value", key));
    if (const AttrSpec* spec = FindAttribute(in, key)) {
      OPPROBE_RETURN_IF_ERROR(ParseValue(&scope, in, *spec, key_pos));
    } else {
      std::string_view value = CaptureValue();
      if (value.empty()) return Err(value_pos, fmt::format("attribute {} has no value", key));
      in.mutable_rare().unknown_attributes.emplace_back(std::string(key), std::string(value));
    }
  }
  if (!in.unknown_opcode.empty()) return Status::Ok();
  for (const AttrSpec& spec : OpcodeAttributes(in.opcode)) {
    if (given(spec.key)) continue;
    if (spec.need == AttrNeed::kRequired)
      return Err(start, fmt::format("{} {} needs {}=", OpcodeName(in.opcode), in.name, spec.key));
    if (spec.need == AttrNeed::kRequiredForArrayOperand) scalar_operand_checks_.emplace_back(&in, start);
    if (spec.need == AttrNeed::kDefaulted && spec.field == AttrField::kWindow) in.window.emplace();
  }
  return Status::Ok();
}

Status Parser::ParseAttributeValueOnly(Instruction& in, const AttrSpec& spec) {
  SkipWs();
  OPPROBE_RETURN_IF_ERROR(ParseValue(nullptr, in, spec, p_));
  SkipWs();
  if (p_ < end_) return Err(p_, fmt::format("unexpected {} after the value of {}", Describe(), spec.key));
  return Status::Ok();
}

Status Parser::ParseComputationRef(Scope* scope, Instruction& in, size_t slot, const std::string& key) {
  SkipWs();
  size_t pos = p_;
  if (in.called_computations.size() <= slot) in.called_computations.resize(slot + 1, nullptr);
  if (Peek() == '{') {  // an inline computation: `to_apply={ ... }`
    if (!scope) return Err(pos, "an inline computation needs a module");
    if (++computation_depth_ > kMaxDepth) return Err(pos, "computations nested too deeply");
    Scope inner;
    inner.comp = std::make_unique<Computation>(UniqueComputationName(in.name + "." + key));
    Computation* added = nullptr;
    Status st = ParseInstructionList(inner, pos, added);
    --computation_depth_;
    OPPROBE_RETURN_IF_ERROR(st);
    in.called_computations[slot] = added;
    return Status::Ok();
  }
  std::string name = ReadName();
  if (name.empty()) return Err(pos, fmt::format("expected a computation name, got {}", Describe()));
  calls_.push_back({&in, slot, name, pos});
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------------
// Values

Expected<std::vector<int64_t>> Parser::ParseIntList() {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open a list"));
  std::vector<int64_t> out;
  SkipWs();
  if (Peek() == '}') {
    ++p_;
    return out;
  }
  while (true) {
    auto v = ParseInt();
    if (!v.ok()) return v.status();
    out.push_back(*v);
    SkipWs();
    if (Peek() == ',') {
      ++p_;
      continue;
    }
    if (Peek() == '}') {
      ++p_;
      return out;
    }
    return Err(p_, fmt::format("expected ',' or '}}' in list, got {}", Describe()));
  }
}

Expected<std::vector<std::vector<int64_t>>> Parser::ParseIntListList() {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open a list of lists"));
  std::vector<std::vector<int64_t>> out;
  SkipWs();
  while (Peek() != '}') {
    auto v = ParseIntList();
    if (!v.ok()) return v.status();
    out.push_back(std::move(*v));
    if (!TryConsume(',')) break;
    SkipWs();
  }
  OPPROBE_RETURN_IF_ERROR(Expect('}', "to close a list of lists"));
  return out;
}

Expected<std::string> Parser::ParseQuoted() {
  std::string out;
  OPPROBE_RETURN_IF_ERROR(ParseQuotedInto(out));
  return out;
}

Status Parser::ParseQuotedInto(std::string& out) {
  SkipWs();
  if (Peek() != '"') return Err(p_, fmt::format("expected a quoted string, got {}", Describe()));
  size_t start = p_;
  ++p_;
  // The usual string has no escapes: one copy of the bytes up to the closing quote.
  // The first '"' or '\\' (or the end): the closing quote, then no backslash before it (two memchr scans).
  const char* text = s_.data() + p_;
  const void* quote = std::memchr(text, '"', end_ - p_);
  const size_t quote_at = quote ? p_ + static_cast<size_t>(static_cast<const char*>(quote) - text) : end_;
  const void* backslash = std::memchr(text, '\\', quote_at - p_);
  const size_t plain = backslash ? p_ + static_cast<size_t>(static_cast<const char*>(backslash) - text) : quote_at;
  if (plain < end_ && s_[plain] == '"') {
    out.assign(s_.data() + p_, plain - p_);
    p_ = plain + 1;
    return Status::Ok();
  }
  out.assign(s_.data() + p_, std::min(plain, end_) - p_);
  p_ = std::min(plain, end_);
  while (true) {
    if (p_ >= end_) return Err(start, "unterminated string");
    char c = s_[p_++];
    if (c == '"') break;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (p_ >= end_) return Err(start, "unterminated string");
    char e = s_[p_++];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
      case '\'': out += '\''; break;
      case '?': out += '?'; break;
      case 'x': {
        int v = 0, n = 0;
        while (n < 2 && p_ < end_ && std::isxdigit(static_cast<unsigned char>(s_[p_]))) {
          char h = s_[p_++];
          v = v * 16 + (IsDigit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
          ++n;
        }
        out += static_cast<char>(v);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          int v = e - '0', n = 1;
          while (n < 3 && p_ < end_ && s_[p_] >= '0' && s_[p_] <= '7') {
            v = v * 8 + (s_[p_++] - '0');
            ++n;
          }
          out += static_cast<char>(v);
        } else {
          return Err(p_ - 2, fmt::format("unknown escape {}", support::Quote(s_.substr(p_ - 2, 2))));
        }
    }
  }
  return Status::Ok();
}

Status Parser::ParseBalanced(std::string& out) {
  SkipWs();
  size_t start = p_;
  if (Peek() != '{') return Err(p_, fmt::format("expected '{{', got {}", Describe()));
  int depth = 0;
  while (p_ < end_) {
    char c = s_[p_];
    if (c == '"' || c == '\'') {
      ++p_;
      while (p_ < end_ && s_[p_] != c) p_ += s_[p_] == '\\' ? 2 : 1;
      if (p_ >= end_) break;
      ++p_;
      continue;
    }
    if (c == '{' || c == '(' || c == '[') {
      if (++depth > kMaxDepth) return Err(p_, "value nested too deeply");
    } else if (c == '}' || c == ')' || c == ']') {
      if (--depth == 0) {
        ++p_;
        out = std::string(s_.substr(start, p_ - start));
        return Status::Ok();
      }
    }
    ++p_;
  }
  p_ = std::min(p_, end_);
  return Err(start, "unterminated '{'");
}

Status Parser::ParseWindow(Window& w) {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open a window"));
  std::vector<std::pair<std::string, std::vector<std::string>>> fields;
  SkipWs();
  while (Peek() != '}') {
    if (AtEnd()) return Err(p_, "unterminated window");
    size_t kpos = p_;
    std::string key(ReadWord());
    if (key.empty()) return Err(kpos, fmt::format("expected a window field, got {}", Describe()));
    OPPROBE_RETURN_IF_ERROR(Expect('=', "after window field"));
    SkipWs();
    size_t vstart = p_;
    while (p_ < end_ && (IsNameChar(s_[p_]))) ++p_;
    std::string value(s_.substr(vstart, p_ - vstart));
    std::vector<std::string> parts;
    size_t b = 0;
    while (true) {
      size_t x = value.find('x', b);
      parts.push_back(value.substr(b, x == std::string::npos ? std::string::npos : x - b));
      if (x == std::string::npos) break;
      b = x + 1;
    }
    for (const auto& f : fields)
      if (f.first == key) return Err(kpos, fmt::format("window field {} given twice", key));
    fields.emplace_back(key, parts);
    SkipWs();
  }
  ++p_;
  if (fields.empty()) return Status::Ok();
  const std::vector<std::string>* size = nullptr;
  for (const auto& f : fields)
    if (f.first == "size") size = &f.second;
  if (!size) return Err(p_, "window has no size");
  size_t rank = size->size();
  w.dimensions.assign(rank, WindowDimension{});
  auto to_int = [&](const std::string& t, int64_t* v) {
    char* e = nullptr;
    errno = 0;
    long long x = std::strtoll(t.c_str(), &e, 10);
    if (errno || !e || *e || t.empty()) return false;
    *v = x;
    return true;
  };
  for (const auto& [key, parts] : fields) {
    if (parts.size() != rank)
      return Err(p_, fmt::format("window field {} has {} entries, size has {}", key, parts.size(), rank));
    for (size_t i = 0; i < rank; ++i) {
      WindowDimension& d = w.dimensions[i];
      int64_t v = 0;
      if (key == "pad") {
        size_t u = parts[i].find('_');
        int64_t lo, hi;
        if (u == std::string::npos || !to_int(parts[i].substr(0, u), &lo) || !to_int(parts[i].substr(u + 1), &hi))
          return Err(p_, fmt::format("bad window padding {}", support::Quote(parts[i])));
        d.padding_low = lo;
        d.padding_high = hi;
        continue;
      }
      if (!to_int(parts[i], &v)) return Err(p_, fmt::format("bad window {} {}", key, support::Quote(parts[i])));
      if (key == "size") d.size = v;
      else if (key == "stride") d.stride = v;
      else if (key == "lhs_dilate") d.base_dilation = v;
      else if (key == "rhs_dilate") d.window_dilation = v;
      else if (key == "rhs_reversal") d.window_reversal = v != 0;
      else return Err(p_, fmt::format("unknown window field {}", support::Quote(key)));
    }
  }
  return Status::Ok();
}

Status Parser::ParseDimLabels(ConvolutionDimensionNumbers& d) {
  SkipWs();
  size_t start = p_;
  while (p_ < end_ && (IsNameChar(s_[p_]) || s_[p_] == '>' || s_[p_] == '?')) ++p_;
  std::string text(s_.substr(start, p_ - start));
  size_t u = text.find('_'), arrow = text.find("->");
  if (u == std::string::npos || arrow == std::string::npos || arrow < u)
    return Err(start, fmt::format("bad dim_labels {}", support::Quote(text)));
  std::string lhs = text.substr(0, u), rhs = text.substr(u + 1, arrow - u - 1), out = text.substr(arrow + 2);
  if (lhs.size() != rhs.size() || lhs.size() != out.size() || lhs.size() < 2)
    return Err(start, fmt::format("dim_labels {} have different ranks", support::Quote(text)));
  // Digits name the spatial dimensions; '?' marks a dimension the convolution does not use (XLA's custom calls).
  size_t spatial = 0;
  for (char c : lhs) spatial += IsDigit(c) ? 1 : 0;
  auto parse = [&](const std::string& labels, char a, char b, int64_t& da, int64_t& db,
                   std::vector<int64_t>& sp) -> bool {
    da = db = -1;
    sp.assign(spatial, -1);
    for (size_t i = 0; i < labels.size(); ++i) {
      char c = labels[i];
      if (c == '?') continue;
      if (c == a && da < 0) da = static_cast<int64_t>(i);
      else if (c == b && db < 0) db = static_cast<int64_t>(i);
      else if (IsDigit(c) && static_cast<size_t>(c - '0') < spatial && sp[static_cast<size_t>(c - '0')] < 0)
        sp[static_cast<size_t>(c - '0')] = static_cast<int64_t>(i);
      else return false;
    }
    return da >= 0 && db >= 0 && std::none_of(sp.begin(), sp.end(), [](int64_t v) { return v < 0; });
  };
  if (!parse(lhs, 'b', 'f', d.input_batch_dimension, d.input_feature_dimension, d.input_spatial_dimensions) ||
      !parse(rhs, 'i', 'o', d.kernel_input_feature_dimension, d.kernel_output_feature_dimension,
             d.kernel_spatial_dimensions) ||
      !parse(out, 'b', 'f', d.output_batch_dimension, d.output_feature_dimension, d.output_spatial_dimensions))
    return Err(start, fmt::format("bad dim_labels {}", support::Quote(text)));
  return Status::Ok();
}

Status Parser::ParseSlice(SliceDimensions& s) {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open slice"));
  SkipWs();
  if (Peek() == '}') {
    ++p_;
    return Status::Ok();
  }
  while (true) {
    OPPROBE_RETURN_IF_ERROR(Expect('[', "to open a slice dimension"));
    auto a = ParseInt();
    if (!a.ok()) return a.status();
    OPPROBE_RETURN_IF_ERROR(Expect(':', "in a slice dimension"));
    auto b = ParseInt();
    if (!b.ok()) return b.status();
    int64_t stride = 1;
    if (TryConsume(':')) {
      auto c = ParseInt();
      if (!c.ok()) return c.status();
      stride = *c;
    }
    OPPROBE_RETURN_IF_ERROR(Expect(']', "to close a slice dimension"));
    s.starts.push_back(*a);
    s.limits.push_back(*b);
    s.strides.push_back(stride);
    SkipWs();
    if (Peek() == ',') {
      ++p_;
      continue;
    }
    return Expect('}', "to close slice");
  }
}

Status Parser::ParsePadding(PaddingConfig& c) {
  SkipWs();
  size_t start = p_;
  while (p_ < end_ && (IsNameChar(s_[p_]))) ++p_;
  std::string text(s_.substr(start, p_ - start));
  if (text.empty()) return Err(start, "expected padding");
  size_t b = 0;
  while (true) {
    size_t x = text.find('x', b);
    std::string part = text.substr(b, x == std::string::npos ? std::string::npos : x - b);
    std::vector<int64_t> nums;
    size_t q = 0;
    while (q <= part.size()) {
      size_t u = part.find('_', q);
      std::string n = part.substr(q, u == std::string::npos ? std::string::npos : u - q);
      char* e = nullptr;
      errno = 0;
      long long v = std::strtoll(n.c_str(), &e, 10);
      if (errno || !e || *e || n.empty()) return Err(start, fmt::format("bad padding {}", support::Quote(text)));
      nums.push_back(v);
      if (u == std::string::npos) break;
      q = u + 1;
    }
    if (nums.size() != 2 && nums.size() != 3) return Err(start, fmt::format("bad padding {}", support::Quote(text)));
    c.dimensions.push_back({nums[0], nums[1], nums.size() == 3 ? nums[2] : 0});
    if (x == std::string::npos) break;
    b = x + 1;
  }
  return Status::Ok();
}

Status Parser::ParseSharedMetadata(support::SharedValue<OpMetadata>& out) {
  SkipWs();
  const size_t start = p_;
  // Where the braces that open here close (quoted strings skipped), or npos: the text a parse would read when it
  // succeeds. Identical text parses to an identical value, so a text seen before (and parsed to exactly its end)
  // takes the value parsed then.
  size_t stop = std::string_view::npos;
  if (Peek() == '{') {
    int depth = 0;
    for (size_t q = p_; q < end_; ++q) {
      const char c = s_[q];
      if (c == '"') {
        // To the closing quote with memchr; a backslash before it: one character at a time from there.
        const char* from = s_.data() + q + 1;
        const void* quote = std::memchr(from, '"', end_ - q - 1);
        if (!quote) break;
        const auto* close = static_cast<const char*>(quote);
        if (!std::memchr(from, '\\', static_cast<size_t>(close - from))) {
          q = static_cast<size_t>(close - s_.data());
          continue;
        }
        for (++q; q < end_ && s_[q] != '"'; ++q)
          if (s_[q] == '\\') ++q;
        if (q >= end_) break;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        stop = q + 1;
        break;
      }
    }
  }
  std::string_view text = stop == std::string_view::npos ? std::string_view() : s_.substr(start, stop - start);
  if (!text.empty()) {
    auto it = metadata_by_text_.find(text);
    if (it != metadata_by_text_.end()) {
      out = it->second;
      p_ = stop;
      return Status::Ok();
    }
  }
  OpMetadata m;
  OPPROBE_RETURN_IF_ERROR(ParseMetadata(m));
  out = std::move(m);
  if (!text.empty() && p_ == stop) metadata_by_text_.emplace(text, out);
  return Status::Ok();
}

Status Parser::ParseMetadata(OpMetadata& m) {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open metadata"));
  SkipWs();
  while (Peek() != '}') {
    if (AtEnd()) return Err(p_, "unterminated metadata");
    size_t kpos = p_;
    std::string key(ReadWord());
    if (key.empty()) return Err(kpos, fmt::format("expected a metadata field, got {}", Describe()));
    OPPROBE_RETURN_IF_ERROR(Expect('=', "after metadata field"));
    SkipWs();
    auto quoted = [&](std::string& field) -> Status { return ParseQuotedInto(field); };
    auto int32 = [&](int32_t& field) -> Status {
      auto v = ParseInt();
      if (!v.ok()) return v.status();
      if (*v < std::numeric_limits<int32_t>::min() || *v > std::numeric_limits<int32_t>::max())
        return Err(kpos, fmt::format("{} does not fit in 32 bits", key));
      field = static_cast<int32_t>(*v);
      return Status::Ok();
    };
    if (key == "op_type") OPPROBE_RETURN_IF_ERROR(quoted(m.op_type));
    else if (key == "op_name") OPPROBE_RETURN_IF_ERROR(quoted(m.op_name));
    else if (key == "source_file") OPPROBE_RETURN_IF_ERROR(quoted(m.source_file));
    else if (key == "deduplicated_name") OPPROBE_RETURN_IF_ERROR(quoted(m.deduplicated_name));
    else if (key == "scheduling_name") OPPROBE_RETURN_IF_ERROR(quoted(m.scheduling_name));
    else if (key == "source_line") OPPROBE_RETURN_IF_ERROR(int32(m.source_line));
    else if (key == "source_end_line") OPPROBE_RETURN_IF_ERROR(int32(m.source_end_line));
    else if (key == "source_column") OPPROBE_RETURN_IF_ERROR(int32(m.source_column));
    else if (key == "source_end_column") OPPROBE_RETURN_IF_ERROR(int32(m.source_end_column));
    else if (key == "stack_frame_id") OPPROBE_RETURN_IF_ERROR(int32(m.stack_frame_id));
    else if (key == "profile_type") {
      auto v = ParseIntList();
      if (!v.ok()) return v.status();
      m.profile_type = std::move(*v);
    } else {
      size_t vpos = p_;
      std::string value;
      if (Peek() == '"') {
        size_t q = p_;
        auto v = ParseQuoted();
        if (!v.ok()) return v.status();
        value = std::string(s_.substr(q, p_ - q));
      } else if (Peek() == '{') {
        OPPROBE_RETURN_IF_ERROR(ParseBalanced(value));
      } else {
        while (p_ < end_ && s_[p_] != '}' && s_[p_] != ' ' && s_[p_] != '\n' && s_[p_] != ',') ++p_;
        value = std::string(s_.substr(vpos, p_ - vpos));
      }
      if (value.empty()) return Err(vpos, fmt::format("metadata field {} has no value", key));
      m.unknown_fields.emplace_back(key, std::move(value));
    }
    SkipWs();
    if (Peek() == ',') {  // XLA also accepts fields separated by commas
      ++p_;
      SkipWs();
    }
  }
  ++p_;
  return Status::Ok();
}

Status Parser::ParseSharding(Sharding& s, int depth) {
  SkipWs();
  if (depth > kMaxDepth) return Err(p_, "sharding nested too deeply");
  if (Peek() != '{') return Err(p_, fmt::format("expected '{{' to open a sharding, got {}", Describe()));
  size_t q = p_ + 1;
  while (q < end_ && (s_[q] == ' ' || s_[q] == '\n' || s_[q] == '\t' || s_[q] == '\r')) ++q;
  if (q < end_ && (s_[q] == '{' || s_[q] == '}')) {  // a tuple: `{{replicated}, {maximal device=0}}` or `{}`
    p_ = q + (s_[q] == '}' ? 1 : 0);
    s.type = Sharding::Type::kTuple;
    if (s_[q] == '}') return Status::Ok();
    while (true) {
      Sharding e;
      OPPROBE_RETURN_IF_ERROR(ParseSingleSharding(e));
      s.tuple.push_back(std::move(e));
      if (!TryConsume(',')) break;
    }
    return Expect('}', "to close a tuple sharding");
  }
  return ParseSingleSharding(s);
}

Status Parser::ParseSingleSharding(Sharding& s) {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open a sharding"));
  SkipWs();
  if (LookingAtWord("mesh")) {  // the named form, kept as written
    size_t start = p_;
    int depth = 0;
    while (p_ < end_) {
      char c = s_[p_];
      if (c == '\'' || c == '"') {
        ++p_;
        while (p_ < end_ && s_[p_] != c) p_ += s_[p_] == '\\' ? 2 : 1;
        if (p_ < end_) ++p_;
        continue;
      }
      if (c == '{' || c == '[' || c == '(') ++depth;
      if (c == '}' || c == ']' || c == ')') {
        if (depth == 0) break;
        --depth;
      }
      ++p_;
    }
    if (AtEnd()) return Err(start, "unterminated sharding");
    size_t stop = p_;
    while (stop > start && (s_[stop - 1] == ' ' || s_[stop - 1] == '\n')) --stop;
    s.type = Sharding::Type::kNamed;
    s.named = std::string(s_.substr(start, stop - start));
    ++p_;
    return Status::Ok();
  }
  bool typed = false, tiled = false;
  while (true) {
    SkipWs();
    if (Peek() == '}') break;
    if (AtEnd()) return Err(p_, "unterminated sharding");
    size_t wpos = p_;
    std::string word(ReadWord());
    if (word.empty()) return Err(wpos, fmt::format("expected a sharding attribute, got {}", Describe()));
    auto type = ShardingTypeFromName(word);
    if (type && *type != Sharding::Type::kTiled && *type != Sharding::Type::kTuple && *type != Sharding::Type::kNamed) {
      s.type = *type;
      typed = true;
    } else if (word == "device") {
      OPPROBE_RETURN_IF_ERROR(Expect('=', "after device"));
      auto v = ParseInt();
      if (!v.ok()) return v.status();
      s.device = *v;
    } else if (word == "devices") {
      OPPROBE_RETURN_IF_ERROR(Expect('=', "after devices"));
      SkipWs();
      if (Peek() != '[') return Err(p_, fmt::format("expected '[' after devices=, got {}", Describe()));
      auto dims = [&](std::vector<int64_t>& out, char open, char close) -> Status {
        OPPROBE_RETURN_IF_ERROR(Expect(open, "to open a device array shape"));
        SkipWs();
        while (Peek() != close) {
          auto v = ParseInt();
          if (!v.ok()) return v.status();
          out.push_back(*v);
          if (!TryConsume(',')) break;
        }
        return Expect(close, "to close a device array shape");
      };
      OPPROBE_RETURN_IF_ERROR(dims(s.tile_dims, '[', ']'));
      SkipWs();
      if (Peek() == '<' && Peek(1) == '=') {
        p_ += 2;
        s.iota = true;
        OPPROBE_RETURN_IF_ERROR(dims(s.iota_reshape_dims, '[', ']'));
        if (Peek() == 'T' && Peek(1) == '(') {
          ++p_;
          OPPROBE_RETURN_IF_ERROR(dims(s.iota_transpose_perm, '(', ')'));
        }
      } else {
        while (true) {
          auto v = ParseInt();
          if (!v.ok()) return v.status();
          s.devices.push_back(*v);
          size_t save = p_;
          SkipWs();
          if (Peek() != ',') {
            p_ = save;
            break;
          }
          ++p_;
        }
      }
      tiled = true;
    } else if (word == "last_tile_dim_replicate") {
      s.last_tile_dim_replicate = true;
    } else if (word == "last_tile_dims") {
      OPPROBE_RETURN_IF_ERROR(Expect('=', "after last_tile_dims"));
      OPPROBE_RETURN_IF_ERROR(Expect('{', "to open last_tile_dims"));
      SkipWs();
      while (Peek() != '}') {
        size_t tpos = p_;
        std::string_view t = ReadWord();
        auto st = ShardingTypeFromName(t);
        if (!st) return Err(tpos, fmt::format("unknown sharding type {}", support::Quote(t)));
        s.last_tile_dims.push_back(*st);
        if (!TryConsume(',')) break;
        SkipWs();
      }
      OPPROBE_RETURN_IF_ERROR(Expect('}', "to close last_tile_dims"));
    } else if (word == "shard_as" || word == "shard_like") {
      auto v = ParseInt();
      if (!v.ok()) return v.status();
      s.shard_group = std::make_pair(word == "shard_as", *v);
    } else if (word == "metadata") {
      OPPROBE_RETURN_IF_ERROR(Expect('=', "after metadata"));
      SkipWs();
      size_t q = p_ + 1;
      while (q < end_ && (s_[q] == ' ' || s_[q] == '\n')) ++q;
      if (Peek() == '{' && q < end_ && s_[q] == '{') {  // several: metadata={{...}, {...}}
        ++p_;
        while (true) {
          OpMetadata m;
          OPPROBE_RETURN_IF_ERROR(ParseMetadata(m));
          s.metadata.push_back(std::move(m));
          if (!TryConsume(',')) break;
        }
        OPPROBE_RETURN_IF_ERROR(Expect('}', "to close the sharding's metadata"));
      } else {
        OpMetadata m;
        OPPROBE_RETURN_IF_ERROR(ParseMetadata(m));
        s.metadata.push_back(std::move(m));
      }
    } else {
      return Err(wpos, fmt::format("unknown sharding attribute {}", support::Quote(word)));
    }
  }
  ++p_;  // '}'
  if (tiled && !typed) s.type = Sharding::Type::kTiled;
  else if (!typed) return Err(p_ - 1, "sharding has no type (replicated, manual, maximal, devices=...)");
  return Status::Ok();
}

Status Parser::ParseReplicaGroups(CollectiveDeviceList& g) {
  SkipWs();
  size_t start = p_;
  if (Peek() == '{') {
    auto groups = ParseIntListList();
    if (!groups.ok()) return groups.status();
    g.groups = std::move(*groups);
    return Status::Ok();
  }
  if (Peek() == '[') {  // [groups,size]<=[reshape]T(perm)
    auto list = [&](std::vector<int64_t>& out, char open, char close) -> Status {
      OPPROBE_RETURN_IF_ERROR(Expect(open, "in replica_groups"));
      SkipWs();
      while (Peek() != close) {
        auto v = ParseInt();
        if (!v.ok()) return v.status();
        out.push_back(*v);
        if (!TryConsume(',')) break;
      }
      return Expect(close, "in replica_groups");
    };
    std::vector<int64_t> dims;
    OPPROBE_RETURN_IF_ERROR(list(dims, '[', ']'));
    if (dims.size() != 2) return Err(start, "iota replica_groups need [groups,group_size]");
    SkipWs();
    if (!(Peek() == '<' && Peek(1) == '='))
      return Err(p_, fmt::format("expected '<=' in replica_groups, got {}", Describe()));
    p_ += 2;
    g.iota = true;
    g.num_groups = dims[0];
    g.group_size = dims[1];
    OPPROBE_RETURN_IF_ERROR(list(g.iota_reshape_dims, '[', ']'));
    if (Peek() == 'T' && Peek(1) == '(') {
      ++p_;
      OPPROBE_RETURN_IF_ERROR(list(g.iota_transpose_perm, '(', ')'));
    }
    return Status::Ok();
  }
  if (LookingAtWord("mesh")) {  // mesh['a'=2,'b'=2] {'a'}: kept as written
    p_ += 4;
    std::string axes, selected;
    SkipWs();
    if (Peek() != '[') return Err(p_, fmt::format("expected '[' after mesh, got {}", Describe()));
    size_t a = p_;
    int depth = 0;
    while (p_ < end_) {
      char c = s_[p_++];
      if (c == '\'') {
        while (p_ < end_ && s_[p_] != '\'') ++p_;
        if (p_ < end_) ++p_;
      } else if (c == '[') {
        ++depth;
      } else if (c == ']' && --depth == 0) {
        break;
      }
    }
    if (depth != 0) return Err(a, "unterminated mesh");
    axes = std::string(s_.substr(a, p_ - a));
    OPPROBE_RETURN_IF_ERROR(ParseBalanced(selected));
    g.mesh = "mesh" + axes + " " + selected;
    return Status::Ok();
  }
  return Err(p_, fmt::format("expected replica groups ({{...}}, [n,m]<=[...] or mesh[...]), got {}", Describe()));
}

Status Parser::ParseFrontendAttributes(std::vector<std::pair<std::string, std::string>>& out) {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open frontend_attributes"));
  out.clear();
  SkipWs();
  while (Peek() != '}') {
    size_t kpos = p_;
    std::string key = ReadName();
    if (key.empty()) return Err(kpos, fmt::format("expected a frontend attribute name, got {}", Describe()));
    OPPROBE_RETURN_IF_ERROR(ExpectOr('=', [&] { return fmt::format("after frontend attribute {}", key); }));
    SkipWs();
    std::string value;
    if (Peek() == '{') {
      OPPROBE_RETURN_IF_ERROR(ParseBalanced(value));
    } else {
      auto v = ParseQuoted();
      if (!v.ok()) return v.status();
      value = std::move(*v);
    }
    out.emplace_back(std::move(key), std::move(value));
    if (!TryConsume(',')) break;
    SkipWs();
  }
  return Expect('}', "to close frontend_attributes");
}

Status Parser::ParseAliasing(std::vector<OutputOperandAlias>& out) {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open output_to_operand_aliasing"));
  SkipWs();
  while (Peek() != '}') {
    OutputOperandAlias a;
    auto output = ParseIntList();
    if (!output.ok()) return output.status();
    a.output_index = std::move(*output);
    OPPROBE_RETURN_IF_ERROR(Expect(':', "after an output shape index"));
    OPPROBE_RETURN_IF_ERROR(Expect('(', "to open an aliased operand"));
    auto operand = ParseInt();
    if (!operand.ok()) return operand.status();
    a.operand = *operand;
    OPPROBE_RETURN_IF_ERROR(Expect(',', "after the operand number"));
    auto index = ParseIntList();
    if (!index.ok()) return index.status();
    a.operand_shape_index = std::move(*index);
    OPPROBE_RETURN_IF_ERROR(Expect(')', "to close an aliased operand"));
    out.push_back(std::move(a));
    if (!TryConsume(',')) break;
    SkipWs();
  }
  return Expect('}', "to close output_to_operand_aliasing");
}

Status Parser::ParseResultAccuracy(ResultAccuracy& r) {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open result_accuracy"));
  SkipWs();
  size_t kpos = p_;
  std::string key(ReadWord());
  OPPROBE_RETURN_IF_ERROR(Expect('=', "in result_accuracy"));
  SkipWs();
  if (key == "mode") {
    size_t vpos = p_;
    std::string mode = Lower(ReadWord());
    if (mode == "highest") r.highest = true;
    else if (mode != "default") return Err(vpos, fmt::format("unknown result_accuracy mode {}", support::Quote(mode)));
  } else if (key == "tolerance") {
    r.has_tolerance = true;
    OPPROBE_RETURN_IF_ERROR(Expect('{', "to open the tolerance"));
    SkipWs();
    while (Peek() != '}') {
      size_t fpos = p_;
      std::string field(ReadWord());
      OPPROBE_RETURN_IF_ERROR(Expect('=', "in the tolerance"));
      SkipWs();
      if (field == "ulps") {
        auto v = ParseInt();
        if (!v.ok()) return v.status();
        r.ulps = *v;
      } else if (field == "atol" || field == "rtol") {
        auto v = ParseNumber();
        if (!v.ok()) return v.status();
        (field == "atol" ? r.atol : r.rtol) = *v;
      } else {
        return Err(fpos, fmt::format("unknown tolerance field {}", support::Quote(field)));
      }
      SkipWs();
      if (Peek() == ',') ++p_;
      SkipWs();
    }
    ++p_;
  } else {
    return Err(kpos, fmt::format("expected mode= or tolerance= in result_accuracy, got {}", support::Quote(key)));
  }
  return Expect('}', "to close result_accuracy");
}

}  // namespace opprobe::hlo::parse_internal
