// HloModuleProto conversion, part 1: shapes and layouts, literals and metadata (both directions).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <functional>
#include <limits>

#include "hlo/proto_internal.h"
#include "support/quote.h"

namespace opprobe::hlo::proto_internal {
namespace {

// ---------------------------------------------------------------------------------------------------
// Layout suffixes (`:T(8,128)(2,1)E(4)S(1)`) <-> LayoutProto tiles / element_size_in_bits / memory_space.

Status SuffixToLayout(const std::string& suffix, xla::LayoutProto* layout) {
  size_t i = 0;
  if (suffix.empty()) return Status::Ok();
  if (suffix[0] != ':')
    return Unimplemented(fmt::format("layout suffix {} has no XLA proto form", support::Quote(suffix)));
  ++i;
  auto read_group = [&](std::vector<int64_t>& out) -> bool {
    if (i >= suffix.size() || suffix[i] != '(') return false;
    ++i;
    while (i < suffix.size() && suffix[i] != ')') {
      size_t start = i;
      bool neg = suffix[i] == '-';
      if (neg) ++i;
      int64_t v = 0;
      while (i < suffix.size() && std::isdigit(static_cast<unsigned char>(suffix[i]))) {
        int digit = suffix[i++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return false;  // out of int64 range
        v = v * 10 + digit;
      }
      if (i == start) return false;
      out.push_back(neg ? -v : v);
      if (i < suffix.size() && suffix[i] == ',') ++i;
    }
    if (i >= suffix.size()) return false;
    ++i;
    return true;
  };
  while (i < suffix.size()) {
    char c = suffix[i++];
    if (c == 'T') {
      std::vector<int64_t> dims;
      if (!read_group(dims)) break;
      do {
        auto* tile = layout->add_tiles();
        for (int64_t d : dims) tile->add_dimensions(d);
        dims.clear();
      } while (i < suffix.size() && suffix[i] == '(' && read_group(dims));
      continue;
    }
    std::vector<int64_t> v;
    if ((c == 'E' || c == 'S') && read_group(v) && v.size() == 1) {
      if (c == 'E') layout->set_element_size_in_bits(v[0]);
      else layout->set_memory_space(v[0]);
      continue;
    }
    return Unimplemented(fmt::format("layout suffix {} has no XLA proto form here", support::Quote(suffix)));
  }
  if (i != suffix.size())
    return Unimplemented(fmt::format("layout suffix {} has no XLA proto form here", support::Quote(suffix)));
  return Status::Ok();
}

std::string LayoutToSuffix(const xla::LayoutProto& layout) {
  std::string s;
  if (layout.tiles_size()) {
    s += "T";
    for (const auto& t : layout.tiles()) s += fmt::format("({})", fmt::join(t.dimensions(), ","));
  }
  if (layout.element_size_in_bits()) s += fmt::format("E({})", layout.element_size_in_bits());
  if (layout.memory_space()) s += fmt::format("S({})", layout.memory_space());
  return s.empty() ? s : ":" + s;
}

// Calls fn(layout_position, row_major_position) for every element of an array shape, in layout order (the
// minor-most dimension of minor_to_major fastest).
void ForEachInLayoutOrder(const Shape& shape, const std::function<void(int64_t, int64_t)>& fn) {
  const auto& m2m = shape.minor_to_major();
  const int rank = shape.rank();
  const int64_t n = shape.elements();
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  for (int64_t lin = 0; lin < n; ++lin) {
    int64_t row = 0;
    for (int d = 0; d < rank; ++d) row = row * shape.dimensions(d) + idx[static_cast<size_t>(d)];
    fn(lin, row);
    for (size_t k = 0; k < m2m.size(); ++k) {
      size_t d = static_cast<size_t>(m2m[k]);
      if (++idx[d] < shape.dimensions(static_cast<int>(d))) break;
      idx[d] = 0;
    }
  }
}

bool IsRowMajor(const Shape& shape) {
  if (!shape.has_layout()) return true;
  const auto& m2m = shape.minor_to_major();
  for (size_t k = 0; k < m2m.size(); ++k)
    if (m2m[k] != static_cast<int64_t>(m2m.size() - 1 - k)) return false;
  return true;
}

size_t ElementBytes(PrimitiveType t) {
  if (t == PrimitiveType::C64) return 8;
  if (t == PrimitiveType::C128) return 16;
  return static_cast<size_t>(ByteWidth(t));
}

// The literal's bytes in its shape's layout order (the IR holds them row-major).
std::vector<uint8_t> LayoutOrderBytes(const Literal& l) {
  const Shape& shape = l.shape();
  if (IsRowMajor(shape) || shape.elements() == 0) return l.data();
  const size_t ew = ElementBytes(shape.element_type());
  std::vector<uint8_t> out(l.data().size());
  ForEachInLayoutOrder(shape, [&](int64_t lin, int64_t row) {
    std::memcpy(out.data() + static_cast<size_t>(lin) * ew, l.data().data() + static_cast<size_t>(row) * ew, ew);
  });
  return out;
}

std::string RawBytes(const std::vector<uint8_t>& d) {
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

template <typename T>
T Get(const std::vector<uint8_t>& d, int64_t i) {
  T v;
  std::memcpy(&v, d.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return v;
}

template <typename T, typename Src>
void CopyRepeated(const Src& src, Literal& l) {
  for (int i = 0; i < src.size(); ++i) l.Set<T>(i, static_cast<T>(src.Get(i)));
}

}  // namespace

// The shape with the default layout wherever it has none (a literal's values follow its layout).
Shape WithLayout(Shape s) {
  if (s.IsTuple()) {
    for (auto& e : s.mutable_tuple_shapes()) e = WithLayout(std::move(e));
    return s;
  }
  if (s.IsArray() && !s.has_layout()) s.SetDefaultLayout();
  return s;
}

// ---------------------------------------------------------------------------------------------------
// Shapes

Status WriteShape(const Shape& shape, xla::ShapeProto* p, int depth) {
  if (depth > 64) return InvalidInput("shape nested too deeply");
  p->set_element_type(static_cast<xla::PrimitiveType>(static_cast<int>(shape.element_type())));
  if (shape.IsTuple() || shape.IsBuffer()) {
    for (const auto& e : shape.tuple_shapes()) OPPROBE_RETURN_IF_ERROR(WriteShape(e, p->add_tuple_shapes(), depth + 1));
    return Status::Ok();
  }
  for (int i = 0; i < shape.rank(); ++i) {
    p->add_dimensions(shape.dimensions(i));
    p->add_is_dynamic_dimension(shape.is_dynamic_dimension(i));
  }
  // A scalar has one layout, `{}`, which XLA's text omits: written always, since a compiler handed layouts on the
  // other shapes checks that every shape has one (libtpu 0.0.42.1 aborts on torch_xla's whole step, "Check failed:
  // has_layout() f32[]", and on corpus units such as `s64[] abs(s64[])`).
  if (shape.IsArray() && shape.rank() == 0 && !shape.has_layout()) {
    p->mutable_layout();
    return Status::Ok();
  }
  if (shape.IsArray() && shape.has_layout()) {
    auto* layout = p->mutable_layout();
    for (int64_t d : shape.minor_to_major()) layout->add_minor_to_major(d);
    OPPROBE_RETURN_IF_ERROR(SuffixToLayout(shape.layout_suffix(), layout));
  }
  return Status::Ok();
}

Expected<Shape> ReadShape(const xla::ShapeProto& p, int depth) {
  if (depth > 64) return InvalidInput("shape nested too deeply");
  int t = static_cast<int>(p.element_type());
  auto type = static_cast<PrimitiveType>(t);
  if (type == PrimitiveType::TUPLE) {
    std::vector<Shape> elements;
    for (const auto& e : p.tuple_shapes()) {
      OPPROBE_ASSIGN_OR_RETURN(Shape s, ReadShape(e, depth + 1));
      elements.push_back(std::move(s));
    }
    return Shape::Tuple(std::move(elements));
  }
  if (type == PrimitiveType::TOKEN) return Shape::Token();
  if (type == PrimitiveType::BUFFER) {
    if (p.tuple_shapes_size() != 1) return InvalidInput("a buffer shape holds one array shape");
    OPPROBE_ASSIGN_OR_RETURN(Shape inner, ReadShape(p.tuple_shapes(0), depth + 1));
    if (!inner.IsArray()) return InvalidInput("a buffer shape holds an array shape");
    return Shape::Buffer(std::move(inner));
  }
  if (PrimitiveTypeName(type) == "invalid")
    return InvalidInput(fmt::format("unsupported element type {} ({})", xla::PrimitiveType_Name(p.element_type()), t));
  Shape s;
  s.set_element_type(type);
  for (int i = 0; i < p.dimensions_size(); ++i) {
    int64_t d = p.dimensions(i);
    const bool dynamic = i < p.is_dynamic_dimension_size() && p.is_dynamic_dimension(i);
    if (d < 0 && !(d == Shape::kUnboundedSize && dynamic)) return InvalidInput("negative dimension in shape");
    s.mutable_dimensions().push_back(d);
  }
  for (int i = 0; i < p.is_dynamic_dimension_size() && i < s.rank(); ++i)
    if (p.is_dynamic_dimension(i)) s.set_dynamic_dimension(i, true);
  if (s.IsArray() && !s.is_unbounded_dynamic()) {
    auto n = s.ElementCount();
    if (!n.ok()) return n.status();
  }
  if (p.has_layout() && s.IsArray()) {
    std::vector<int64_t> m2m(p.layout().minor_to_major().begin(), p.layout().minor_to_major().end());
    if (static_cast<int>(m2m.size()) != s.rank())
      return InvalidInput(fmt::format("layout has {} entries for shape {}", m2m.size(), s.ToString(false)));
    std::vector<bool> seen(m2m.size(), false);
    for (int64_t d : m2m) {
      if (d < 0 || d >= s.rank() || seen[static_cast<size_t>(d)])
        return InvalidInput(fmt::format("layout of shape {} is not a permutation", s.ToString(false)));
      seen[static_cast<size_t>(d)] = true;
    }
    s.set_layout(std::move(m2m));
    s.set_layout_suffix(LayoutToSuffix(p.layout()));
  }
  return s;
}

// ---------------------------------------------------------------------------------------------------
// Literals

Status WriteLiteral(const Literal& l, xla::LiteralProto* p) {
  if (l.elided()) return WriteShape(WithLayout(l.shape()), p->mutable_shape());  // `{...}`: the shape only
  if (l.shape().IsTuple()) {
    p->mutable_shape()->set_element_type(xla::TUPLE);
    for (const auto& e : l.tuple_elements()) {
      OPPROBE_RETURN_IF_ERROR(WriteLiteral(e, p->add_tuple_literals()));
      *p->mutable_shape()->add_tuple_shapes() = p->tuple_literals(p->tuple_literals_size() - 1).shape();
    }
    return Status::Ok();
  }
  const Shape shape = WithLayout(l.shape());
  OPPROBE_RETURN_IF_ERROR(WriteShape(shape, p->mutable_shape()));
  if (!shape.IsArray()) return Status::Ok();
  const int64_t n = shape.elements();
  if (l.data().size() != static_cast<size_t>(n) * static_cast<size_t>(ByteWidth(shape.element_type())))
    return Internal("literal data does not match its shape");
  Literal laid_out = l;
  laid_out.mutable_shape() = shape;
  const std::vector<uint8_t> d = LayoutOrderBytes(laid_out);
  switch (shape.element_type()) {
    case PrimitiveType::PRED:
      for (int64_t i = 0; i < n; ++i) p->add_preds(d[static_cast<size_t>(i)] != 0);
      break;
    case PrimitiveType::S4: p->set_s4s(RawBytes(d)); break;
    case PrimitiveType::U4: p->set_u4s(RawBytes(d)); break;
    case PrimitiveType::S8: p->set_s8s(RawBytes(d)); break;
    case PrimitiveType::U8: p->set_u8s(RawBytes(d)); break;
    case PrimitiveType::S16: p->set_s16s(RawBytes(d)); break;
    case PrimitiveType::U16: p->set_u16s(RawBytes(d)); break;
    case PrimitiveType::F16: p->set_f16s(RawBytes(d)); break;
    case PrimitiveType::BF16: p->set_bf16s(RawBytes(d)); break;
    case PrimitiveType::F8E5M2: p->set_f8e5m2s(RawBytes(d)); break;
    case PrimitiveType::F8E4M3FN: p->set_f8e4m3fns(RawBytes(d)); break;
    case PrimitiveType::F8E4M3B11FNUZ: p->set_f8e4m3b11fnuzs(RawBytes(d)); break;
    case PrimitiveType::F8E5M2FNUZ: p->set_f8e5m2fnuzs(RawBytes(d)); break;
    case PrimitiveType::F8E4M3FNUZ: p->set_f8e4m3fnuzs(RawBytes(d)); break;
    case PrimitiveType::F8E4M3: p->set_f8e4m3s(RawBytes(d)); break;
    case PrimitiveType::F8E3M4: p->set_f8e3m4s(RawBytes(d)); break;
    case PrimitiveType::F8E8M0FNU: p->set_f8e8m0fnus(RawBytes(d)); break;
    case PrimitiveType::S32:
      for (int64_t i = 0; i < n; ++i) p->add_s32s(Get<int32_t>(d, i));
      break;
    case PrimitiveType::S64:
      for (int64_t i = 0; i < n; ++i) p->add_s64s(Get<int64_t>(d, i));
      break;
    case PrimitiveType::U32:
      for (int64_t i = 0; i < n; ++i) p->add_u32s(Get<uint32_t>(d, i));
      break;
    case PrimitiveType::U64:
      for (int64_t i = 0; i < n; ++i) p->add_u64s(Get<uint64_t>(d, i));
      break;
    case PrimitiveType::F32:
      for (int64_t i = 0; i < n; ++i) p->add_f32s(Get<float>(d, i));
      break;
    case PrimitiveType::F64:
      for (int64_t i = 0; i < n; ++i) p->add_f64s(Get<double>(d, i));
      break;
    case PrimitiveType::C64:
      for (int64_t i = 0; i < 2 * n; ++i) p->add_c64s(Get<float>(d, i));
      break;
    case PrimitiveType::C128:
      for (int64_t i = 0; i < 2 * n; ++i) p->add_c128s(Get<double>(d, i));
      break;
    default: return Unimplemented(fmt::format("literal of type {}", PrimitiveTypeName(shape.element_type())));
  }
  return Status::Ok();
}

Expected<Literal> ReadLiteral(const xla::LiteralProto& p, const Shape& declared, int depth) {
  if (depth > 64) return InvalidInput("literal nested too deeply");
  OPPROBE_ASSIGN_OR_RETURN(Shape shape, p.has_shape() ? ReadShape(p.shape()) : Expected<Shape>(declared));
  if (shape.IsTuple()) {
    if (p.tuple_literals_size() == 0 && !shape.tuple_shapes().empty()) {  // written as `{...}`
      Literal l;
      l.mutable_shape() = shape;
      l.set_elided(true);
      return l;
    }
    if (static_cast<size_t>(p.tuple_literals_size()) != shape.tuple_shapes().size())
      return InvalidInput("tuple literal does not match its shape");
    std::vector<Literal> elements;
    for (int i = 0; i < p.tuple_literals_size(); ++i) {
      OPPROBE_ASSIGN_OR_RETURN(
          Literal e, ReadLiteral(p.tuple_literals(i), shape.tuple_shapes()[static_cast<size_t>(i)], depth + 1));
      elements.push_back(std::move(e));
    }
    Literal l = Literal::Tuple(std::move(elements));
    l.mutable_shape() = shape;
    return l;
  }
  if (!shape.IsArray() || shape.is_unbounded_dynamic()) {
    Literal l;
    l.mutable_shape() = shape;
    return l;
  }
  const int64_t n = shape.elements();
  const PrimitiveType t = shape.element_type();
  // How many elements the proto carries for this type.
  int64_t have = 0;
  std::string_view bytes;
  switch (t) {
    case PrimitiveType::PRED: have = p.preds_size(); break;
    case PrimitiveType::S32: have = p.s32s_size(); break;
    case PrimitiveType::S64: have = p.s64s_size(); break;
    case PrimitiveType::U32: have = p.u32s_size(); break;
    case PrimitiveType::U64: have = p.u64s_size(); break;
    case PrimitiveType::F32: have = p.f32s_size(); break;
    case PrimitiveType::F64: have = p.f64s_size(); break;
    case PrimitiveType::C64: have = p.c64s_size() / 2; break;
    case PrimitiveType::C128: have = p.c128s_size() / 2; break;
    case PrimitiveType::S4: bytes = p.s4s(); break;
    case PrimitiveType::U4: bytes = p.u4s(); break;
    case PrimitiveType::S8: bytes = p.s8s(); break;
    case PrimitiveType::U8: bytes = p.u8s(); break;
    case PrimitiveType::S16: bytes = p.s16s(); break;
    case PrimitiveType::U16: bytes = p.u16s(); break;
    case PrimitiveType::F16: bytes = p.f16s(); break;
    case PrimitiveType::BF16: bytes = p.bf16s(); break;
    case PrimitiveType::F8E5M2: bytes = p.f8e5m2s(); break;
    case PrimitiveType::F8E4M3FN: bytes = p.f8e4m3fns(); break;
    case PrimitiveType::F8E4M3B11FNUZ: bytes = p.f8e4m3b11fnuzs(); break;
    case PrimitiveType::F8E5M2FNUZ: bytes = p.f8e5m2fnuzs(); break;
    case PrimitiveType::F8E4M3FNUZ: bytes = p.f8e4m3fnuzs(); break;
    case PrimitiveType::F8E4M3: bytes = p.f8e4m3s(); break;
    case PrimitiveType::F8E3M4: bytes = p.f8e3m4s(); break;
    case PrimitiveType::F8E8M0FNU: bytes = p.f8e8m0fnus(); break;
    default: return InvalidInput(fmt::format("literal of type {} is not supported", PrimitiveTypeName(t)));
  }
  const int width = ByteWidth(t);
  if (!bytes.empty()) have = static_cast<int64_t>(bytes.size()) / width;
  if (have == 0 && n != 0) {  // a literal without values: printed as {...}
    Literal l;
    l.mutable_shape() = shape;
    l.set_elided(true);
    return l;
  }
  if (have != n || (!bytes.empty() && bytes.size() != static_cast<size_t>(n) * static_cast<size_t>(width)))
    return InvalidInput(fmt::format("literal of shape {} holds {} values, needs {}", shape.ToString(), have, n));
  Literal l(shape);
  switch (t) {
    case PrimitiveType::PRED:
      for (int64_t i = 0; i < n; ++i) l.Set<uint8_t>(i, p.preds(static_cast<int>(i)) ? 1 : 0);
      break;
    case PrimitiveType::S32: CopyRepeated<int32_t>(p.s32s(), l); break;
    case PrimitiveType::S64: CopyRepeated<int64_t>(p.s64s(), l); break;
    case PrimitiveType::U32: CopyRepeated<uint32_t>(p.u32s(), l); break;
    case PrimitiveType::U64: CopyRepeated<uint64_t>(p.u64s(), l); break;
    case PrimitiveType::F32: CopyRepeated<float>(p.f32s(), l); break;
    case PrimitiveType::F64: CopyRepeated<double>(p.f64s(), l); break;
    case PrimitiveType::C64: CopyRepeated<float>(p.c64s(), l); break;
    case PrimitiveType::C128: CopyRepeated<double>(p.c128s(), l); break;
    default: std::memcpy(l.data().data(), bytes.data(), bytes.size());
  }
  // Proto values follow the literal's layout; the IR holds them row-major.
  if (!IsRowMajor(shape) && n > 0) {
    Literal out(shape);
    const size_t ew = ElementBytes(t);
    ForEachInLayoutOrder(shape, [&](int64_t lin, int64_t row) {
      std::memcpy(out.data().data() + static_cast<size_t>(row) * ew, l.data().data() + static_cast<size_t>(lin) * ew,
                  ew);
    });
    return out;
  }
  return l;
}

// ---------------------------------------------------------------------------------------------------
// Metadata

void WriteMetadata(const OpMetadata& m, xla::OpMetadata* p) {
  p->set_op_type(m.op_type);
  p->set_op_name(m.op_name);
  p->set_source_file(m.source_file);
  p->set_source_line(m.source_line);
  p->set_source_end_line(m.source_end_line);
  p->set_source_column(m.source_column);
  p->set_source_end_column(m.source_end_column);
  for (int64_t t : m.profile_type) p->add_profile_type(static_cast<int32_t>(t));
  p->set_deduplicated_name(m.deduplicated_name);
  p->set_stack_frame_id(m.stack_frame_id);
  p->set_scheduling_name(m.scheduling_name);
}

OpMetadata ReadMetadata(const xla::OpMetadata& p) {
  OpMetadata m;
  m.op_type = p.op_type();
  m.op_name = p.op_name();
  m.source_file = p.source_file();
  m.source_line = p.source_line();
  m.source_end_line = p.source_end_line();
  m.source_column = p.source_column();
  m.source_end_column = p.source_end_column();
  m.profile_type.assign(p.profile_type().begin(), p.profile_type().end());
  m.deduplicated_name = p.deduplicated_name();
  m.stack_frame_id = p.stack_frame_id();
  m.scheduling_name = p.scheduling_name();
  return m;
}

}  // namespace opprobe::hlo::proto_internal
