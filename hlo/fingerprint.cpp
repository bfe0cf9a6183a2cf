#include "hlo/fingerprint.h"

#include <cstring>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "hlo/attributes.h"
#include "hlo/printer.h"

namespace opprobe::hlo {
namespace {

// A 64-bit hash fed word by word: each word is folded into the state by a multiply and a shift (so that order and
// position matter), and the result goes through a full-avalanche mix (MurmurHash3's finalizer). Strings are hashed
// as their length and their bytes, 8 at a time.
class Hasher {
 public:
  void Word(uint64_t w) {
    h_ = (h_ ^ w) * 0x9e3779b97f4a7c15ULL;
    h_ ^= h_ >> 29;
  }
  void Int(int64_t v) { Word(static_cast<uint64_t>(v)); }
  void Bool(bool b) { Word(b ? 1 : 0); }
  void Bytes(const void* data, size_t n) {
    Word(n);
    const auto* p = static_cast<const unsigned char*>(data);
    while (n >= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      Word(w);
      p += 8;
      n -= 8;
    }
    if (n) {
      uint64_t w = 0;
      std::memcpy(&w, p, n);
      Word(w);
    }
  }
  void Str(std::string_view s) { Bytes(s.data(), s.size()); }
  template <typename T>
  void Ints(const std::vector<T>& v) {
    Word(v.size());
    for (const T& x : v) Int(static_cast<int64_t>(x));
  }
  uint64_t Finish() const { return Mix(h_ + 0x2545f4914f6cdd1dULL); }

 private:
  static uint64_t Mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
  }
  uint64_t h_ = 0x6f7070726f626531ULL;
};

// Tags between the parts of a unit, so that one part's values cannot run into the next one's.
enum Tag : uint64_t {
  kTagInstruction = 0xa1,
  kTagAttribute,
  kTagUnset,
  kTagUnknownAttributes,
  kTagCalls,
  kTagNewComputation,
  kTagComputationRef,
  kTagRoot,
};

void HashShape(Hasher& h, const Shape& s) {
  h.Int(static_cast<int64_t>(s.element_type()));
  h.Ints(s.dimensions());
  h.Word(s.dynamic_dimensions().size());
  for (bool d : s.dynamic_dimensions()) h.Bool(d);
  // An array without a layout has XLA's default one (its parser fills it in), so a unit built by a lowering
  // (no layouts) and the same unit read back from its printed text (`{1,0}`) hash alike.
  if (s.has_layout()) {
    h.Ints(s.minor_to_major());
    h.Str(s.layout_suffix());
  } else {  // the default minor_to_major, {rank-1, ..., 0}, hashed as Ints would hash it, and no suffix
    h.Word(s.dimensions().size());
    for (int64_t d = static_cast<int64_t>(s.dimensions().size()) - 1; d >= 0; --d) h.Int(d);
    h.Str("");
  }
  h.Word(s.tuple_shapes().size());
  for (const Shape& e : s.tuple_shapes()) HashShape(h, e);
}

void HashLiteral(Hasher& h, const Literal& l) {
  h.Bool(l.elided());
  h.Bool(l.splat());
  HashShape(h, l.shape());
  h.Bytes(l.data().data(), l.data().size());
  h.Word(l.tuple_elements().size());
  for (const Literal& e : l.tuple_elements()) HashLiteral(h, e);
}

// One attribute value, by its C++ type (hlo/attributes.h: AttrValueType). Values with many rarely used parts
// (sharding, result accuracy) hash their printed text, which the printer makes canonical.
struct ValueHasher {
  Hasher& h;
  const Instruction& in;
  const AttrSpec& spec;

  void operator()(int64_t v) const { h.Int(v); }
  void operator()(int32_t v) const { h.Int(v); }
  void operator()(bool v) const { h.Bool(v); }
  void operator()(float v) const {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    h.Word(bits);
  }
  void operator()(const std::optional<int64_t>& v) const {
    h.Bool(v.has_value());
    if (v) h.Int(*v);
  }
  void operator()(const std::string& v) const { h.Str(v); }
  void operator()(const std::vector<int64_t>& v) const { h.Ints(v); }
  void operator()(const std::vector<std::vector<int64_t>>& v) const {
    h.Word(v.size());
    for (const auto& e : v) h.Ints(e);
  }
  void operator()(const std::vector<bool>& v) const {
    h.Word(v.size());
    for (bool b : v) h.Bool(b);
  }
  void operator()(const std::vector<std::string>& v) const {
    h.Word(v.size());
    for (const auto& s : v) h.Str(s);
  }
  void operator()(const std::vector<PrecisionLevel>& v) const { h.Ints(v); }
  template <typename E>
    requires std::is_enum_v<E>
  void operator()(E v) const {
    h.Int(static_cast<int64_t>(v));
  }
  void operator()(const support::HeapOptional<Window>& w) const {
    h.Bool(w.has_value());
    if (!w) return;
    h.Word(w->dimensions.size());
    for (const WindowDimension& d : w->dimensions) {
      for (int64_t v : {d.size, d.stride, d.padding_low, d.padding_high, d.window_dilation, d.base_dilation}) h.Int(v);
      h.Bool(d.window_reversal);
    }
  }
  void operator()(const support::HeapOptional<ConvolutionDimensionNumbers>& c) const {
    h.Bool(c.has_value());
    if (!c) return;
    for (int64_t v : {c->input_batch_dimension, c->input_feature_dimension, c->kernel_input_feature_dimension,
                      c->kernel_output_feature_dimension, c->output_batch_dimension, c->output_feature_dimension})
      h.Int(v);
    h.Ints(c->input_spatial_dimensions);
    h.Ints(c->kernel_spatial_dimensions);
    h.Ints(c->output_spatial_dimensions);
  }
  void operator()(const support::HeapOptional<SliceDimensions>& s) const {
    h.Bool(s.has_value());
    if (!s) return;
    h.Ints(s->starts);
    h.Ints(s->limits);
    h.Ints(s->strides);
  }
  void operator()(const support::HeapOptional<PaddingConfig>& p) const {
    h.Bool(p.has_value());
    if (!p) return;
    h.Word(p->dimensions.size());
    for (const PaddingDimension& d : p->dimensions) {
      h.Int(d.edge_padding_low);
      h.Int(d.edge_padding_high);
      h.Int(d.interior_padding);
    }
  }
  void operator()(const std::vector<std::pair<std::string, std::string>>& kv) const {
    h.Word(kv.size());
    for (const auto& [k, v] : kv) {
      h.Str(k);
      h.Str(v);
    }
  }
  void operator()(const CollectiveDeviceList& g) const {
    (*this)(g.groups);
    h.Bool(g.iota);
    h.Int(g.num_groups);
    h.Int(g.group_size);
    h.Ints(g.iota_reshape_dims);
    h.Ints(g.iota_transpose_perm);
    h.Str(g.mesh);
  }
  void operator()(const std::vector<OutputOperandAlias>& v) const {
    h.Word(v.size());
    for (const auto& a : v) {
      h.Ints(a.output_index);
      h.Int(a.operand);
      h.Ints(a.operand_shape_index);
    }
  }
  void operator()(const support::HeapOptional<Shape>& s) const {
    h.Bool(s.has_value());
    if (s) HashShape(h, *s);
  }
  void operator()(const support::HeapOptional<std::vector<Shape>>& v) const {
    h.Bool(v.has_value());
    if (!v) return;
    h.Word(v->size());
    for (const Shape& s : *v) HashShape(h, s);
  }
  void operator()(const support::HeapOptional<Literal>& l) const {
    h.Bool(l.has_value());
    if (l) HashLiteral(h, *l);
  }
  void operator()(const std::vector<Computation*>&) const {}  // called computations: hashed by structure
  // Sharding, OpMetadata, ResultAccuracy: their canonical text.
  template <typename T>
    requires(!std::is_enum_v<T>)
  void operator()(const T&) const {
    h.Str(AttributeValueToString(in, spec, PrintOptions::Canonical()));
  }
};

bool IsCallKind(AttrKind k) { return k == AttrKind::kComputation || k == AttrKind::kComputationList; }

void HashAttributes(Hasher& h, const Instruction& in, std::span<const AttrSpec> specs) {
  for (const AttrSpec& spec : specs) {
    const AttrKind kind = spec.kind();
    // Metadata and control predecessors are not part of a unit; called computations are hashed by structure.
    if (IsCallKind(kind) || spec.field == AttrField::kMetadata || spec.field == AttrField::kControlPredecessors)
      continue;
    if (spec.print == AttrPrint::kNever || (spec.print == AttrPrint::kIfSet && !IsSet(spec.field, in))) {
      h.Word(kTagUnset);
      continue;
    }
    h.Word(kTagAttribute);
    VisitField(spec.field, in, [&](auto, const auto& value) { ValueHasher{h, in, spec}(value); });
  }
}

// The structure of one unit: its root instruction and, depth first, every computation it calls.
class UnitHasher {
 public:
  uint64_t Unit(const Instruction& root) {
    // Operands as the unit's parameters: each one's shape and the index of its first occurrence.
    h_.Word(root.operands.size());
    for (size_t i = 0; i < root.operands.size(); ++i) {
      size_t first = i;
      for (size_t j = 0; j < i; ++j)
        if (root.operands[j] == root.operands[i]) {
          first = j;
          break;
        }
      h_.Word(first);
      if (first == i) HashShape(h_, root.operands[i]->shape);
    }
    Fields(root);
    return h_.Finish();
  }

 private:
  // Everything of an instruction but its operands (which the caller hashes in its own terms).
  void Fields(const Instruction& in) {
    h_.Word(kTagInstruction);
    h_.Int(static_cast<int64_t>(in.opcode));
    h_.Str(in.unknown_opcode);
    HashShape(h_, in.shape);
    if (in.opcode == Opcode::kParameter) h_.Int(in.parameter_number);
    if (in.opcode == Opcode::kConstant) {
      h_.Bool(in.literal.has_value());
      if (in.literal) HashLiteral(h_, *in.literal);
    }
    if (in.unknown_opcode.empty()) HashAttributes(h_, in, OpcodeAttributes(in.opcode));
    HashAttributes(h_, in, GenericAttributes());
    h_.Word(kTagUnknownAttributes);
    h_.Word(in.rare().unknown_attributes.size());
    for (const auto& [key, value] : in.rare().unknown_attributes) {
      h_.Str(key);
      h_.Str(value);
    }
    h_.Word(kTagCalls);
    h_.Word(in.called_computations.size());
    for (const Computation* c : in.called_computations) Called(c);
  }

  void Called(const Computation* c) {
    if (c == nullptr) {
      h_.Word(kTagComputationRef);
      h_.Int(-1);
      return;
    }
    for (size_t i = 0; i < seen_.size(); ++i)
      if (seen_[i] == c) {
        h_.Word(kTagComputationRef);
        h_.Word(i);
        return;
      }
    seen_.push_back(c);
    h_.Word(kTagNewComputation);
    h_.Str(c->execution_thread);
    const auto& instrs = c->instructions();
    h_.Word(instrs.size());
    // Operands by their position in the computation (a map only for large computations).
    std::unordered_map<const Instruction*, size_t> index;
    const bool use_map = instrs.size() > 32;
    if (use_map)
      for (size_t i = 0; i < instrs.size(); ++i) index.emplace(instrs[i].get(), i);
    auto position = [&](const Instruction* op) -> uint64_t {
      if (use_map) {
        auto it = index.find(op);
        return it == index.end() ? ~uint64_t{0} : it->second;
      }
      for (size_t i = 0; i < instrs.size(); ++i)
        if (instrs[i].get() == op) return i;
      return ~uint64_t{0};
    };
    for (const auto& in : instrs) {
      h_.Word(in->operands.size());
      for (const Instruction* op : in->operands) h_.Word(position(op));
      Fields(*in);
    }
    h_.Word(kTagRoot);
    h_.Word(c->root() ? position(c->root()) : ~uint64_t{0});
  }

  Hasher h_;
  std::vector<const Computation*> seen_;
};

}  // namespace

uint64_t UnitHash(const Instruction& instr) { return UnitHasher().Unit(instr); }

std::string HashHex(uint64_t hash) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4) out[static_cast<size_t>(i)] = kDigits[hash & 0xf];
  return out;
}

std::string UnitFingerprint(const Instruction& instr) { return HashHex(UnitHash(instr)); }

uint64_t HashBytes(std::string_view bytes, uint64_t seed) {
  Hasher h;
  h.Word(seed);
  h.Str(bytes);
  return h.Finish();
}

}  // namespace opprobe::hlo
