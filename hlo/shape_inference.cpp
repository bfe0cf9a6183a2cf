#include "hlo/shape_inference.h"

#include <fmt/format.h>

#include <algorithm>

#include "hlo/attributes.h"

namespace opprobe::hlo {
namespace {

// Messages are built only on failure: the success path of every check formats nothing.
Status Bad(std::string why) { return InvalidInput(std::move(why)); }
Status NotInferable() {
  return Unimplemented("write the result shape (opprobe infers it only for ops whose operands determine it)");
}

bool ValidDim(int64_t d, int rank) { return d >= 0 && d < rank; }

// Sizes from attribute values (a window, padding, slice bounds) as XLA computes them, where any value the text
// gives must not overflow: false when a step leaves 64 bits.
bool Add(int64_t a, int64_t b, int64_t& out) { return !__builtin_add_overflow(a, b, &out); }
bool Mul(int64_t a, int64_t b, int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
Status Overflow() { return Bad("the sizes overflow 64 bits"); }

bool Unbounded(int64_t d) { return d == Shape::kUnboundedSize; }

// Any `?` dimension in the shape (tuples included): sizes derived from it are not known.
bool AnyUnbounded(const Shape& s) {
  if (s.IsTuple()) {
    for (const auto& t : s.tuple_shapes())
      if (AnyUnbounded(t)) return true;
    return false;
  }
  for (int64_t d : s.dimensions())
    if (Unbounded(d)) return true;
  return false;
}

bool SameType(PrimitiveType a, PrimitiveType b, const ShapeCheckOptions& o) {
  return a == b || (o.allow_mixed_precision && IsFloatingPoint(a) && IsFloatingPoint(b));
}

bool DimAgrees(int64_t a, int64_t b) { return a == b || Unbounded(a) || Unbounded(b); }

bool SameDims(const Shape& a, const Shape& b) {
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (!DimAgrees(a.dimensions(i), b.dimensions(i))) return false;
  return true;
}

std::string Str(const Shape& s) { return s.ToString(false); }

Shape WithoutLayout(Shape s) {
  s.clear_layout();
  s.set_layout_suffix("");
  for (auto& t : s.mutable_tuple_shapes()) t = WithoutLayout(std::move(t));
  return s;
}

// An array shape without a layout (the verifier's inferred shapes are compared, never printed: no layout to build).
Shape Bare(PrimitiveType type, std::vector<int64_t> dims) {
  Shape s;
  s.set_element_type(type);
  s.mutable_dimensions() = std::move(dims);
  return s;
}

Shape ArrayLike(const Shape& dims_from, PrimitiveType type) {
  Shape s = Bare(type, dims_from.dimensions());
  if (dims_from.is_dynamic())
    for (int i = 0; i < dims_from.rank(); ++i) s.set_dynamic_dimension(i, dims_from.is_dynamic_dimension(i));
  return s;
}

Shape TupleOf(const Instruction& in, int from, int to) {
  std::vector<Shape> elems;
  for (int i = from; i < to; ++i) elems.push_back(WithoutLayout(in.operand(i)->shape));
  return Shape::Tuple(std::move(elems));
}

bool IsScalar(const Shape& s) { return s.IsArray() && s.rank() == 0; }

// The shape of a called computation's root, or null.
const Shape* RootShape(const Computation* c) { return c && c->root() ? &c->root()->shape : nullptr; }

// A reducer (reduce, reduce-window, all-reduce, scatter, ...) for `n` values: 2n scalar parameters (accumulators,
// then values) and a scalar root (n == 1) or a tuple of n scalars, accumulator types matching `types`.
Status CheckReducer(const Computation* c, const std::vector<PrimitiveType>& types, const ShapeCheckOptions& o) {
  if (!c) return Bad("no reducer computation");
  const size_t n = types.size();
  // The parameters by their numbers (dense 0..N-1: the verifier checks that per computation), without a copy.
  size_t count = 0;
  for (const auto& instr : c->instructions()) {
    if (instr->opcode != Opcode::kParameter) continue;
    ++count;
    const int64_t i = instr->parameter_number;
    const Shape& p = instr->shape;
    if (i < 0 || static_cast<size_t>(i) >= 2 * n) continue;  // counted: the count check below names it
    if (!IsScalar(p)) return Bad(fmt::format("reducer {} parameter {} is {}, not a scalar", c->name(), i, Str(p)));
    if (!SameType(p.element_type(), types[static_cast<size_t>(i) % n], o))
      return Bad(fmt::format("reducer {} parameter {} is {}, the value is {}", c->name(), i, Str(p),
                             PrimitiveTypeName(types[static_cast<size_t>(i) % n])));
  }
  if (count != 2 * n)
    return Bad(fmt::format("reducer {} takes {} parameter(s), {} value(s) need {}", c->name(), count, n, 2 * n));
  const Shape* root = RootShape(c);
  if (!root) return Bad(fmt::format("reducer {} has no root", c->name()));
  if (n == 1 ? !IsScalar(*root) && !(root->IsTuple() && root->tuple_shapes().size() == 1)
             : !(root->IsTuple() && root->tuple_shapes().size() == n))
    return Bad(fmt::format("reducer {} returns {}, {} value(s) need {}", c->name(), Str(*root), n,
                           n == 1 ? "a scalar" : fmt::format("a tuple of {} scalars", n)));
  for (size_t i = 0; i < n; ++i) {
    const Shape& r = root->IsTuple() ? root->tuple_shapes()[i] : *root;
    if (!IsScalar(r) || !SameType(r.element_type(), types[i], o))
      return Bad(
          fmt::format("reducer {} returns {}, the values are {}", c->name(), Str(*root), PrimitiveTypeName(types[i])));
  }
  return Status::Ok();
}

// A computation called with `args` (call, fusion, conditional branch, while body): its parameters agree.
Status CheckParameters(const Computation* c, const std::vector<const Shape*>& args, const ShapeCheckOptions& o,
                       std::string_view what) {
  if (!c) return Bad(fmt::format("no {} computation", what));
  auto params = c->parameters();
  if (params.size() != args.size())
    return Bad(fmt::format("{} computation {} takes {} parameter(s), is given {}", what, c->name(), params.size(),
                           args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    if (!ShapesAgree(*args[i], params[i]->shape, o))
      return Bad(fmt::format("{} computation {} parameter {} is {}, is given {}", what, c->name(), i,
                             Str(params[i]->shape), Str(*args[i])));
  return Status::Ok();
}

// The window's output size over one dimension (reduce-window, select-and-scatter, convolution).
Expected<int64_t> WindowedSize(int64_t in, const WindowDimension& w) {
  if (w.stride <= 0) return Bad("window stride must be positive");
  if (w.size < 0) return Bad("window size must not be negative");
  if (w.base_dilation <= 0 || w.window_dilation <= 0) return Bad("window dilations must be positive");
  if (Unbounded(in)) return in;
  int64_t base = 0, padded = 0, win = 0;
  if (in > 0 && !(Mul(in - 1, w.base_dilation, base) && Add(base, 1, base))) return Overflow();
  if (!Add(base, w.padding_low, padded) || !Add(padded, w.padding_high, padded)) return Overflow();
  if (w.size > 0 && !(Mul(w.size - 1, w.window_dilation, win) && Add(win, 1, win))) return Overflow();
  return padded < win ? 0 : (padded - win) / w.stride + 1;
}

// Gather's result (XLA's InferGatherShape): the indices' batch dimensions (all but index_vector_dim) and the
// slice sizes of the operand's offset dimensions, placed at offset_dims.
Expected<Shape> InferGather(const Instruction& in, bool with_layout) {
  const Shape& operand = in.operand(0)->shape;
  const Shape& indices = in.operand(1)->shape;
  const GatherDimensionNumbers& g = GatherNumbers(in);
  if (!IsInteger(indices.element_type())) return Bad("gather indices must be integers");
  if (g.index_vector_dim < 0 || g.index_vector_dim > indices.rank())
    return Bad(fmt::format("index_vector_dim {} outside the indices' rank {}", g.index_vector_dim, indices.rank()));
  const int64_t index_vector_size =
      g.index_vector_dim == indices.rank() ? 1 : indices.dimensions(static_cast<int>(g.index_vector_dim));
  if (!Unbounded(index_vector_size) && static_cast<int64_t>(g.start_index_map.size()) != index_vector_size)
    return Bad(fmt::format("start_index_map has {} entries, the index vector {}", g.start_index_map.size(),
                           index_vector_size));
  if (static_cast<int>(in.rare().gather_slice_sizes.size()) != operand.rank())
    return Bad(fmt::format("slice_sizes has {} entries for an operand of rank {}", in.rare().gather_slice_sizes.size(),
                           operand.rank()));
  for (int64_t d : g.start_index_map)
    if (!ValidDim(d, operand.rank())) return Bad(fmt::format("start_index_map names dimension {}", d));
  std::vector<bool> dropped(static_cast<size_t>(operand.rank()), false);
  for (const auto* list : {&g.collapsed_slice_dims, &g.operand_batching_dims})
    for (int64_t d : *list) {
      if (!ValidDim(d, operand.rank()))
        return Bad(fmt::format("collapsed or batching dimension {} outside the operand", d));
      if (dropped[static_cast<size_t>(d)]) return Bad(fmt::format("dimension {} collapsed twice", d));
      if (in.rare().gather_slice_sizes[static_cast<size_t>(d)] > 1)
        return Bad(fmt::format("collapsed dimension {} has slice size {}", d,
                               in.rare().gather_slice_sizes[static_cast<size_t>(d)]));
      dropped[static_cast<size_t>(d)] = true;
    }
  for (int d = 0; d < operand.rank(); ++d) {
    int64_t s = in.rare().gather_slice_sizes[static_cast<size_t>(d)];
    if (s < 0 || (!Unbounded(operand.dimensions(d)) && s > operand.dimensions(d)))
      return Bad(fmt::format("slice size {} of dimension {} outside [0, {}]", s, d, operand.dimensions(d)));
  }
  std::vector<int64_t> offsets;
  for (int d = 0; d < operand.rank(); ++d)
    if (!dropped[static_cast<size_t>(d)]) offsets.push_back(in.rare().gather_slice_sizes[static_cast<size_t>(d)]);
  if (offsets.size() != g.offset_dims.size())
    return Bad(
        fmt::format("offset_dims has {} entries, the slice keeps {} dimensions", g.offset_dims.size(), offsets.size()));
  std::vector<int64_t> batch;
  for (int d = 0; d < indices.rank(); ++d)
    if (d != g.index_vector_dim) batch.push_back(indices.dimensions(d));
  const int rank = static_cast<int>(batch.size() + offsets.size());
  std::vector<int64_t> dims(static_cast<size_t>(rank), 0);
  std::vector<bool> is_offset(static_cast<size_t>(rank), false);
  for (size_t k = 0; k < g.offset_dims.size(); ++k) {
    int64_t d = g.offset_dims[k];
    if (!ValidDim(d, rank) || is_offset[static_cast<size_t>(d)] || (k > 0 && d <= g.offset_dims[k - 1]))
      return Bad(fmt::format("offset_dims must be sorted dimensions of the result (rank {})", rank));
    is_offset[static_cast<size_t>(d)] = true;
    dims[static_cast<size_t>(d)] = offsets[k];
  }
  size_t b = 0;
  for (int d = 0; d < rank; ++d)
    if (!is_offset[static_cast<size_t>(d)]) dims[static_cast<size_t>(d)] = batch[b++];
  return with_layout ? Shape::Array(operand.element_type(), std::move(dims))
                     : Bare(operand.element_type(), std::move(dims));
}

Status CheckScatterUpdates(const Instruction& in, int n) {
  const Shape& operand = in.operand(0)->shape;
  const Shape& indices = in.operand(n)->shape;
  const ScatterDimensionNumbers& s = ScatterNumbers(in);
  if (!IsInteger(indices.element_type())) return Bad("scatter indices must be integers");
  if (s.index_vector_dim < 0 || s.index_vector_dim > indices.rank())
    return Bad(fmt::format("index_vector_dim {} outside the indices' rank {}", s.index_vector_dim, indices.rank()));
  for (int64_t d : s.scatter_dims_to_operand_dims)
    if (!ValidDim(d, operand.rank())) return Bad(fmt::format("scatter_dims_to_operand_dims names dimension {}", d));
  const int64_t scatter_dims = indices.rank() - (s.index_vector_dim == indices.rank() ? 0 : 1);
  const int64_t expected_rank = static_cast<int64_t>(s.update_window_dims.size()) + scatter_dims;
  if (s.update_window_dims.size() + s.inserted_window_dims.size() + s.input_batching_dims.size() !=
      static_cast<size_t>(operand.rank()))
    return Bad(fmt::format(
        "update_window_dims, inserted_window_dims and input_batching_dims cover {} dimensions of an "
        "operand of rank {}",
        s.update_window_dims.size() + s.inserted_window_dims.size() + s.input_batching_dims.size(), operand.rank()));
  for (int i = 0; i < n; ++i) {
    const Shape& u = in.operand(n + 1 + i)->shape;
    if (u.rank() != expected_rank)
      return Bad(fmt::format("updates {} has rank {}, the dimension numbers need {}", i, u.rank(), expected_rank));
    for (int64_t d : s.update_window_dims)
      if (!ValidDim(d, u.rank())) return Bad(fmt::format("update_window_dims names dimension {}", d));
  }
  return Status::Ok();
}

// Triangular-solve's and cholesky's batched square matrices.
Status CheckSquare(const Shape& a, std::string_view what) {
  if (a.rank() < 2) return Bad(fmt::format("{} must have rank 2 or more, is {}", what, Str(a)));
  if (!DimAgrees(a.dimensions(a.rank() - 1), a.dimensions(a.rank() - 2)))
    return Bad(fmt::format("{} must be square matrices, is {}", what, Str(a)));
  return Status::Ok();
}

struct Shortcut {
  const Shape* same = nullptr;
  bool given = false;
  bool tuple_of_operands = false;  // the result is the tuple of the operands' shapes
};

}  // namespace

bool ShapesAgree(const Shape& got, const Shape& want, const ShapeCheckOptions& o) {
  if (got.IsTuple() || want.IsTuple() || got.IsBuffer() || want.IsBuffer()) {
    if (got.element_type() != want.element_type() || got.tuple_shapes().size() != want.tuple_shapes().size())
      return false;
    for (size_t i = 0; i < got.tuple_shapes().size(); ++i)
      if (!ShapesAgree(got.tuple_shapes()[i], want.tuple_shapes()[i], o)) return false;
    return true;
  }
  if (!got.IsArray() || !want.IsArray()) return got.element_type() == want.element_type();
  return SameType(got.element_type(), want.element_type(), o) && SameDims(got, want);
}

// The inference of every opcode. With `sc`, a result that is an operand's (or a called computation's) shape is
// not copied (sc->same points at it) and an opcode whose shape is given sets sc->given: the verifier's success
// path then allocates nothing.
Expected<Shape> Infer(const Instruction& in, const ShapeCheckOptions& o, Shortcut* sc) {
  auto pass = [&](const Shape& s) -> Expected<Shape> {
    if (sc) {
      sc->same = &s;
      return Shape();
    }
    return WithoutLayout(s);
  };
  // The parser's inferred shapes get the default layout, as XLA's parser gives them; the verifier's need none.
  auto array = [&](PrimitiveType t, std::vector<int64_t> d) {
    return sc ? Bare(t, std::move(d)) : Shape::Array(t, std::move(d));
  };
  auto given = [&]() -> Expected<Shape> {
    if (sc) {
      sc->given = true;
      return Shape();
    }
    return NotInferable();
  };
  const int n = in.operand_count();
  auto op = [&](int i) -> const Shape& { return in.operand(i)->shape; };
  auto need = [&](int count) -> Status {
    if (n < count) return Bad(fmt::format("needs {} operand(s), has {}", count, n));
    return Status::Ok();
  };
  auto need_array = [&](int i) -> Status {
    if (!op(i).IsArray()) return Bad(fmt::format("operand {} is {}, not an array", i, Str(op(i))));
    return Status::Ok();
  };
  // Operands i.. all have operand 0's dimensions (XLA: implicit broadcast is not allowed in HLO).
  auto same_dims_as_first = [&](int from, int to) -> Status {
    for (int i = from; i < to; ++i) {
      OPPROBE_RETURN_IF_ERROR(need_array(i));
      if (!SameDims(op(i), op(0)))
        return Bad(fmt::format("operand {} is {}, operand 0 is {} (HLO has no implicit broadcast)", i, Str(op(i)),
                               Str(op(0))));
    }
    return Status::Ok();
  };
  auto same_types = [&](int from, int to, int like) -> Status {
    for (int i = from; i < to; ++i)
      if (!SameType(op(i).element_type(), op(like).element_type(), o))
        return Bad(fmt::format("operand {} is {}, operand {} is {}", i, Str(op(i)), like, Str(op(like))));
    return Status::Ok();
  };
  switch (in.opcode) {
    case Opcode::kTuple:
      if (sc) {
        sc->tuple_of_operands = true;
        return Shape();
      }
      return TupleOf(in, 0, n);
    case Opcode::kGetTupleElement: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      const Shape& t = op(0);
      if (!t.IsTuple()) return Bad(fmt::format("the operand is {}, not a tuple", Str(t)));
      if (in.tuple_index < 0 || in.tuple_index >= static_cast<int64_t>(t.tuple_shapes().size()))
        return Bad(fmt::format("index {} outside a tuple of {}", in.tuple_index, t.tuple_shapes().size()));
      return pass(t.tuple_shapes()[static_cast<size_t>(in.tuple_index)]);
    }
    case Opcode::kAfterAll: return Shape::Token();
    case Opcode::kPartitionId:
    case Opcode::kReplicaId: return Shape::Scalar(PrimitiveType::U32);
    case Opcode::kGetDimensionSize:
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      if (in.dimensions.size() != 1 || !ValidDim(in.dimensions[0], op(0).rank()))
        return Bad(fmt::format("dimensions must name one dimension of {}", Str(op(0))));
      return Shape::Scalar(PrimitiveType::S32);
    case Opcode::kSetDimensionSize: {
      OPPROBE_RETURN_IF_ERROR(need(2));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      if (in.dimensions.size() != 1 || !ValidDim(in.dimensions[0], op(0).rank()))
        return Bad(fmt::format("dimensions must name one dimension of {}", Str(op(0))));
      if (!IsScalar(op(1)) || !IsInteger(op(1).element_type()))
        return Bad(fmt::format("the size operand is {}, not an integer scalar", Str(op(1))));
      Shape s = ArrayLike(op(0), op(0).element_type());
      s.set_dynamic_dimension(static_cast<int>(in.dimensions[0]), true);
      return s;
    }
    case Opcode::kCompare:
      OPPROBE_RETURN_IF_ERROR(need(2));
      OPPROBE_RETURN_IF_ERROR(same_dims_as_first(0, 2));
      OPPROBE_RETURN_IF_ERROR(same_types(1, 2, 0));
      return ArrayLike(op(0), PrimitiveType::PRED);
    case Opcode::kIsFinite:
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      if (!IsFloatingPoint(op(0).element_type()))
        return Bad(fmt::format("is-finite needs a floating-point operand, is {}", Str(op(0))));
      return ArrayLike(op(0), PrimitiveType::PRED);
    case Opcode::kReal:
    case Opcode::kImag:
    case Opcode::kAbs:
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      if (in.opcode != Opcode::kAbs && !IsComplex(op(0).element_type()) && !IsFloatingPoint(op(0).element_type()))
        return Bad(
            fmt::format("{} needs a complex or floating-point operand, is {}", OpcodeName(in.opcode), Str(op(0))));
      return ArrayLike(
          op(0), IsComplex(op(0).element_type()) ? ComplexComponentType(op(0).element_type()) : op(0).element_type());
    case Opcode::kComplex:
      OPPROBE_RETURN_IF_ERROR(need(2));
      OPPROBE_RETURN_IF_ERROR(same_dims_as_first(0, 2));
      if (op(0).element_type() != op(1).element_type())
        return Bad(fmt::format("complex operands differ: {} and {}", Str(op(0)), Str(op(1))));
      if (op(0).element_type() == PrimitiveType::F32) return ArrayLike(op(0), PrimitiveType::C64);
      if (op(0).element_type() == PrimitiveType::F64) return ArrayLike(op(0), PrimitiveType::C128);
      return Bad("complex needs f32 or f64 operands");
    case Opcode::kSelect: {
      OPPROBE_RETURN_IF_ERROR(need(3));
      for (int i = 0; i < 3; ++i) OPPROBE_RETURN_IF_ERROR(need_array(i));
      if (op(0).element_type() != PrimitiveType::PRED)
        return Bad(fmt::format("select's predicate is {}, not pred", Str(op(0))));
      if (!SameDims(op(1), op(2)) || !SameType(op(1).element_type(), op(2).element_type(), o))
        return Bad(fmt::format("select's branches differ: {} and {}", Str(op(1)), Str(op(2))));
      if (op(0).rank() != 0 && !SameDims(op(0), op(1)))
        return Bad(fmt::format("select's predicate is {}, its branches {}", Str(op(0)), Str(op(1))));
      return pass(op(1));
    }
    case Opcode::kClamp: {
      OPPROBE_RETURN_IF_ERROR(need(3));
      for (int i = 0; i < 3; ++i) OPPROBE_RETURN_IF_ERROR(need_array(i));
      for (int i : {0, 2}) {
        if (op(i).rank() != 0 && !SameDims(op(i), op(1)))
          return Bad(fmt::format("clamp bound {} is {}, the operand {}", i, Str(op(i)), Str(op(1))));
        if (!SameType(op(i).element_type(), op(1).element_type(), o))
          return Bad(fmt::format("clamp bound {} is {}, the operand {}", i, Str(op(i)), Str(op(1))));
      }
      return pass(op(1));
    }
    case Opcode::kCopy:
    case Opcode::kOptimizationBarrier:
    case Opcode::kDomain:
    case Opcode::kAddDependency:
    case Opcode::kReducePrecision: OPPROBE_RETURN_IF_ERROR(need(1)); return pass(op(0));
    case Opcode::kCollectiveBroadcast:
    case Opcode::kCollectivePermute:
      // Several operands: XLA's combined and in-place forms, whose shapes opprobe does not derive.
      OPPROBE_RETURN_IF_ERROR(need(1));
      if (n > 1) return given();
      return pass(op(0));
    case Opcode::kAllReduce: {
      // The reducer is not checked: XLA's verifier compares the shapes only.
      OPPROBE_RETURN_IF_ERROR(need(1));
      for (int i = 0; i < n; ++i) OPPROBE_RETURN_IF_ERROR(need_array(i));
      return n > 1 ? TupleOf(in, 0, n) : WithoutLayout(op(0));
    }
    case Opcode::kWhile: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      const Computation* body = in.called_computations.size() > 0 ? in.called_computations[0] : nullptr;
      const Computation* cond = in.called_computations.size() > 1 ? in.called_computations[1] : nullptr;
      OPPROBE_RETURN_IF_ERROR(CheckParameters(body, {&op(0)}, o, "while body"));
      OPPROBE_RETURN_IF_ERROR(CheckParameters(cond, {&op(0)}, o, "while condition"));
      const Shape* cond_root = RootShape(cond);
      if (!cond_root || !(IsScalar(*cond_root) && cond_root->element_type() == PrimitiveType::PRED))
        return Bad(fmt::format("while condition {} must return pred[]", cond->name()));
      const Shape* body_root = RootShape(body);
      if (!body_root || !ShapesAgree(*body_root, op(0), o))
        return Bad(fmt::format("while body {} returns {}, the loop state is {}", body->name(),
                               body_root ? Str(*body_root) : "nothing", Str(op(0))));
      return pass(op(0));
    }
    case Opcode::kCall:
    case Opcode::kFusion: {
      const Computation* c = in.called_computations.empty() ? nullptr : in.called_computations.back();
      std::vector<const Shape*> args;
      args.reserve(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) args.push_back(&op(i));
      OPPROBE_RETURN_IF_ERROR(CheckParameters(c, args, o, in.opcode == Opcode::kCall ? "called" : "fused"));
      if (!RootShape(c)) return Bad("the called computation has no root");
      return pass(*RootShape(c));
    }
    case Opcode::kConditional: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      const auto& branches = in.called_computations;
      if (branches.empty()) return Bad("conditional has no branch computations");
      const PrimitiveType selector = op(0).element_type();
      if (op(0).rank() != 0 || (selector != PrimitiveType::PRED && selector != PrimitiveType::S32))
        return Bad(fmt::format("the branch selector is {}, not pred[] or s32[]", Str(op(0))));
      if (selector == PrimitiveType::PRED && branches.size() != 2)
        return Bad(fmt::format("a pred selector needs 2 branches, has {}", branches.size()));
      if (static_cast<int>(branches.size()) != n - 1)
        return Bad(fmt::format("{} branches for {} branch operands", branches.size(), n - 1));
      const Shape* first = nullptr;
      for (size_t b = 0; b < branches.size(); ++b) {
        OPPROBE_RETURN_IF_ERROR(CheckParameters(branches[b], {&op(static_cast<int>(b) + 1)}, o, "branch"));
        const Shape* root = RootShape(branches[b]);
        if (!root) return Bad(fmt::format("branch {} has no root", branches[b]->name()));
        if (first && !ShapesAgree(*root, *first, o))
          return Bad(fmt::format("branch {} returns {}, branch {} returns {}", branches[b]->name(), Str(*root),
                                 branches[0]->name(), Str(*first)));
        if (!first) first = root;
      }
      return pass(*first);
    }
    case Opcode::kMap: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(same_dims_as_first(0, n));
      const Computation* c = in.to_apply();
      if (!c) return Bad("map has no computation");
      auto params = c->parameters();
      if (static_cast<int>(params.size()) != n)
        return Bad(
            fmt::format("mapped computation {} takes {} parameter(s), is given {}", c->name(), params.size(), n));
      for (int i = 0; i < n; ++i)
        if (!IsScalar(params[static_cast<size_t>(i)]->shape) ||
            !SameType(params[static_cast<size_t>(i)]->shape.element_type(), op(i).element_type(), o))
          return Bad(fmt::format("mapped computation {} parameter {} is {}, the operand is {}", c->name(), i,
                                 Str(params[static_cast<size_t>(i)]->shape), Str(op(i))));
      const Shape* root = RootShape(c);
      if (!root || !IsScalar(*root)) return Bad(fmt::format("mapped computation {} must return a scalar", c->name()));
      return ArrayLike(op(0), root->element_type());
    }
    case Opcode::kTranspose: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      const Shape& a = op(0);
      if (static_cast<int>(in.dimensions.size()) != a.rank())
        return Bad(fmt::format("dimensions has {} entries for an operand of rank {}", in.dimensions.size(), a.rank()));
      std::vector<int64_t> dims;
      std::vector<bool> seen(static_cast<size_t>(a.rank()), false);
      for (int64_t d : in.dimensions) {
        if (!ValidDim(d, a.rank()) || seen[static_cast<size_t>(d)])
          return Bad("dimensions is not a permutation of the operand's dimensions");
        seen[static_cast<size_t>(d)] = true;
        dims.push_back(a.dimensions(static_cast<int>(d)));
      }
      Shape s = array(a.element_type(), dims);
      for (size_t i = 0; i < in.dimensions.size(); ++i)
        s.set_dynamic_dimension(static_cast<int>(i), a.is_dynamic_dimension(static_cast<int>(in.dimensions[i])));
      return s;
    }
    case Opcode::kReverse: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      for (int64_t d : in.dimensions)
        if (!ValidDim(d, op(0).rank())) return Bad(fmt::format("dimension {} outside {}", d, Str(op(0))));
      return pass(op(0));
    }
    case Opcode::kConcatenate: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      if (in.dimensions.size() != 1 || !ValidDim(in.dimensions[0], op(0).rank()))
        return Bad(fmt::format("dimensions must name one dimension of {}", Str(op(0))));
      std::vector<int64_t> dims = op(0).dimensions();
      const int d = static_cast<int>(in.dimensions[0]);
      for (int i = 1; i < n; ++i) {
        OPPROBE_RETURN_IF_ERROR(need_array(i));
        if (op(i).rank() != op(0).rank())
          return Bad(fmt::format("operand {} is {}, operand 0 is {}", i, Str(op(i)), Str(op(0))));
        for (int k = 0; k < op(0).rank(); ++k)
          if (k != d && !DimAgrees(op(i).dimensions(k), op(0).dimensions(k)))
            return Bad(fmt::format("operand {} is {}, operand 0 is {}: only dimension {} may differ", i, Str(op(i)),
                                   Str(op(0)), d));
        if (Unbounded(dims[static_cast<size_t>(d)]) || Unbounded(op(i).dimensions(d)))
          dims[static_cast<size_t>(d)] = Shape::kUnboundedSize;
        else if (!Add(dims[static_cast<size_t>(d)], op(i).dimensions(d), dims[static_cast<size_t>(d)]))
          return Overflow();
      }
      OPPROBE_RETURN_IF_ERROR(same_types(1, n, 0));
      return array(op(0).element_type(), dims);
    }
    case Opcode::kSlice: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      const Shape& a = op(0);
      if (!in.slice) return Bad("slice has no slice={...}");
      const auto& s = *in.slice;
      if (static_cast<int>(s.starts.size()) != a.rank() || s.limits.size() != s.starts.size() ||
          s.strides.size() != s.starts.size())
        return Bad(fmt::format("slice has {} dimensions for {}", s.starts.size(), Str(a)));
      std::vector<int64_t> dims;
      for (int i = 0; i < a.rank(); ++i) {
        const auto k = static_cast<size_t>(i);
        const int64_t bound = a.dimensions(i);
        if (s.strides[k] <= 0 || s.starts[k] < 0 || s.starts[k] > s.limits[k] ||
            (!Unbounded(bound) && s.limits[k] > bound))
          return Bad(fmt::format("slice [{}:{}:{}] of dimension {} outside {}", s.starts[k], s.limits[k], s.strides[k],
                                 i, Str(a)));
        const int64_t span = s.limits[k] - s.starts[k];  // 0 <= start <= limit
        dims.push_back(span / s.strides[k] + (span % s.strides[k] != 0));
      }
      return array(a.element_type(), dims);
    }
    case Opcode::kDynamicSlice: {
      OPPROBE_RETURN_IF_ERROR(need(2));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      const Shape& a = op(0);
      if (static_cast<int>(in.rare().dynamic_slice_sizes.size()) != a.rank())
        return Bad(
            fmt::format("dynamic_slice_sizes has {} entries for {}", in.rare().dynamic_slice_sizes.size(), Str(a)));
      // Scalar start indices, one per dimension (or XLA's older single index vector).
      if (!(n == a.rank() + 1 || (n == 2 && op(1).rank() == 1)))
        return Bad(fmt::format("{} start indices for an operand of rank {}", n - 1, a.rank()));
      for (int i = 1; i < n; ++i)
        if (!op(i).IsArray() || !IsInteger(op(i).element_type()))
          return Bad(fmt::format("start index {} is {}, not an integer", i - 1, Str(op(i))));
      for (int i = 0; i < a.rank(); ++i) {
        int64_t sz = in.rare().dynamic_slice_sizes[static_cast<size_t>(i)];
        if (sz < 0 || (!Unbounded(a.dimensions(i)) && sz > a.dimensions(i)))
          return Bad(fmt::format("slice size {} of dimension {} outside {}", sz, i, Str(a)));
      }
      return array(a.element_type(), in.rare().dynamic_slice_sizes);
    }
    case Opcode::kDynamicUpdateSlice: {
      OPPROBE_RETURN_IF_ERROR(need(3));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      OPPROBE_RETURN_IF_ERROR(need_array(1));
      const Shape& a = op(0);
      const Shape& u = op(1);
      if (u.rank() != a.rank())
        return Bad(fmt::format("the update {} and the operand {} differ in rank", Str(u), Str(a)));
      if (!(n == a.rank() + 2 || (n == 3 && op(2).rank() == 1)))
        return Bad(fmt::format("{} start indices for an operand of rank {}", n - 2, a.rank()));
      for (int i = 2; i < n; ++i)
        if (!op(i).IsArray() || !IsInteger(op(i).element_type()))
          return Bad(fmt::format("start index {} is {}, not an integer", i - 2, Str(op(i))));
      for (int i = 0; i < a.rank(); ++i)
        if (!Unbounded(a.dimensions(i)) && !Unbounded(u.dimensions(i)) && u.dimensions(i) > a.dimensions(i))
          return Bad(fmt::format("the update {} is larger than the operand {}", Str(u), Str(a)));
      OPPROBE_RETURN_IF_ERROR(same_types(1, 2, 0));
      return pass(a);
    }
    case Opcode::kPad: {
      OPPROBE_RETURN_IF_ERROR(need(2));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      const Shape& a = op(0);
      if (!IsScalar(op(1))) return Bad(fmt::format("the padding value is {}, not a scalar", Str(op(1))));
      OPPROBE_RETURN_IF_ERROR(same_types(1, 2, 0));
      if (!in.padding_config || static_cast<int>(in.padding_config->dimensions.size()) != a.rank())
        return Bad(fmt::format("padding does not match the rank of {}", Str(a)));
      std::vector<int64_t> dims;
      for (int i = 0; i < a.rank(); ++i) {
        const auto& p = in.padding_config->dimensions[static_cast<size_t>(i)];
        int64_t d = a.dimensions(i);
        if (p.interior_padding < 0) return Bad(fmt::format("interior padding {} is negative", p.interior_padding));
        if (Unbounded(d)) {
          dims.push_back(d);
          continue;
        }
        int64_t interior = 0, r = 0;
        if (!Mul(std::max<int64_t>(d - 1, 0), p.interior_padding, interior) || !Add(d, interior, r) ||
            !Add(r, p.edge_padding_low, r) || !Add(r, p.edge_padding_high, r))
          return Overflow();
        if (r < 0) return Bad(fmt::format("padding dimension {} of {} gives a negative size", i, Str(a)));
        dims.push_back(r);
      }
      return array(a.element_type(), dims);
    }
    case Opcode::kDot: {
      OPPROBE_RETURN_IF_ERROR(need(2));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      OPPROBE_RETURN_IF_ERROR(need_array(1));
      const Shape& l = op(0);
      const Shape& r = op(1);
      const DotDimensionNumbers& dn = DotNumbers(in);
      if (dn.lhs_batch_dimensions.size() != dn.rhs_batch_dimensions.size() ||
          dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size())
        return Bad("lhs and rhs have different numbers of batch or contracting dimensions");
      auto check_pairs = [&](const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                             std::string_view what) -> Status {
        for (size_t k = 0; k < a.size(); ++k) {
          if (!ValidDim(a[k], l.rank()) || !ValidDim(b[k], r.rank()))
            return Bad(fmt::format("{} dimensions {} / {} outside {} and {}", what, a[k], b[k], Str(l), Str(r)));
          if (!DimAgrees(l.dimensions(static_cast<int>(a[k])), r.dimensions(static_cast<int>(b[k]))))
            return Bad(
                fmt::format("{} dimensions differ in size: {} of {} and {} of {}", what, a[k], Str(l), b[k], Str(r)));
        }
        return Status::Ok();
      };
      OPPROBE_RETURN_IF_ERROR(check_pairs(dn.lhs_batch_dimensions, dn.rhs_batch_dimensions, "batch"));
      OPPROBE_RETURN_IF_ERROR(check_pairs(dn.lhs_contracting_dimensions, dn.rhs_contracting_dimensions, "contracting"));
      std::vector<int64_t> dims;
      dims.reserve(dn.lhs_batch_dimensions.size());
      for (int64_t d : dn.lhs_batch_dimensions) dims.push_back(l.dimensions(static_cast<int>(d)));
      auto used = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t d) {
        return std::count(a.begin(), a.end(), d) + std::count(b.begin(), b.end(), d) > 0;
      };
      for (int i = 0; i < l.rank(); ++i)
        if (!used(dn.lhs_batch_dimensions, dn.lhs_contracting_dimensions, i)) dims.push_back(l.dimensions(i));
      for (int i = 0; i < r.rank(); ++i)
        if (!used(dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions, i)) dims.push_back(r.dimensions(i));
      return array(l.element_type(), dims);
    }
    case Opcode::kReduce: {
      // reduce(inputs..., inits...): each input loses the reduced dimensions.
      if (n < 2 || n % 2) return Bad("reduce needs inputs and as many init values");
      std::vector<Shape> outs;
      std::vector<PrimitiveType> types;
      for (int64_t d : in.dimensions)
        if (!ValidDim(d, op(0).IsArray() ? op(0).rank() : 0))
          return Bad(fmt::format("reduced dimension {} outside {}", d, Str(op(0))));
      for (int i = 0; i < n / 2; ++i) {
        OPPROBE_RETURN_IF_ERROR(need_array(i));
        if (!SameDims(op(i), op(0)))
          return Bad(fmt::format("input {} is {}, input 0 is {}", i, Str(op(i)), Str(op(0))));
        if (!IsScalar(op(n / 2 + i)))
          return Bad(fmt::format("init value {} is {}, not a scalar", i, Str(op(n / 2 + i))));
        std::vector<int64_t> dims;
        for (int d = 0; d < op(i).rank(); ++d)
          if (std::find(in.dimensions.begin(), in.dimensions.end(), d) == in.dimensions.end())
            dims.push_back(op(i).dimensions(d));
        outs.push_back(array(op(n / 2 + i).element_type(), dims));
        types.push_back(op(n / 2 + i).element_type());
      }
      OPPROBE_RETURN_IF_ERROR(CheckReducer(in.to_apply(), types, o));
      // A reducer that returns a tuple (of one scalar, too) makes the result a tuple.
      const Shape* root = RootShape(in.to_apply());
      return outs.size() == 1 && !(root && root->IsTuple()) ? outs[0] : Shape::Tuple(std::move(outs));
    }
    case Opcode::kSort: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(same_dims_as_first(0, n));
      if (in.dimensions.size() != 1 || !ValidDim(in.dimensions[0], op(0).rank()))
        return Bad(fmt::format("dimensions must name one dimension of {}", Str(op(0))));
      if (const Computation* c = in.to_apply()) {
        auto params = c->parameters();
        if (static_cast<int>(params.size()) != 2 * n)
          return Bad(fmt::format("comparator {} takes {} parameter(s), {} operand(s) need {}", c->name(), params.size(),
                                 n, 2 * n));
        for (int i = 0; i < 2 * n; ++i)
          if (!IsScalar(params[static_cast<size_t>(i)]->shape) ||
              !SameType(params[static_cast<size_t>(i)]->shape.element_type(), op(i / 2).element_type(), o))
            return Bad(fmt::format("comparator {} parameter {} is {}, operand {} is {}", c->name(), i,
                                   Str(params[static_cast<size_t>(i)]->shape), i / 2, Str(op(i / 2))));
        const Shape* root = RootShape(c);
        if (!root || !IsScalar(*root) || root->element_type() != PrimitiveType::PRED)
          return Bad(fmt::format("comparator {} must return pred[]", c->name()));
      }
      return n == 1 ? WithoutLayout(op(0)) : TupleOf(in, 0, n);
    }
    case Opcode::kReduceWindow: {
      if (n < 2 || n % 2) return Bad("reduce-window needs inputs and as many init values");
      if (!in.window) return Bad("no window");
      std::vector<Shape> outs;
      std::vector<PrimitiveType> types;
      for (int i = 0; i < n / 2; ++i) {
        OPPROBE_RETURN_IF_ERROR(need_array(i));
        const Shape& a = op(i);
        if (!IsScalar(op(n / 2 + i)))
          return Bad(fmt::format("init value {} is {}, not a scalar", i, Str(op(n / 2 + i))));
        if (static_cast<int>(in.window->dimensions.size()) != a.rank())
          return Bad(fmt::format("the window has {} dimensions for {}", in.window->dimensions.size(), Str(a)));
        std::vector<int64_t> dims;
        for (int d = 0; d < a.rank(); ++d) {
          OPPROBE_ASSIGN_OR_RETURN(int64_t size,
                                   WindowedSize(a.dimensions(d), in.window->dimensions[static_cast<size_t>(d)]));
          dims.push_back(size);
        }
        outs.push_back(array(op(n / 2 + i).element_type(), dims));
        types.push_back(op(n / 2 + i).element_type());
      }
      OPPROBE_RETURN_IF_ERROR(CheckReducer(in.to_apply(), types, o));
      // A reducer that returns a tuple (of one scalar, too) makes the result a tuple.
      const Shape* root = RootShape(in.to_apply());
      return outs.size() == 1 && !(root && root->IsTuple()) ? outs[0] : Shape::Tuple(std::move(outs));
    }
    case Opcode::kSelectAndScatter: {
      OPPROBE_RETURN_IF_ERROR(need(3));
      for (int i = 0; i < 3; ++i) OPPROBE_RETURN_IF_ERROR(need_array(i));
      const Shape& a = op(0);
      if (!in.window || static_cast<int>(in.window->dimensions.size()) != a.rank())
        return Bad(fmt::format("the window does not match the rank of {}", Str(a)));
      std::vector<int64_t> dims;
      for (int d = 0; d < a.rank(); ++d) {
        OPPROBE_ASSIGN_OR_RETURN(int64_t size,
                                 WindowedSize(a.dimensions(d), in.window->dimensions[static_cast<size_t>(d)]));
        dims.push_back(size);
      }
      if (!SameDims(op(1), array(a.element_type(), dims)))
        return Bad(fmt::format("the source is {}, the window over {} gives {}", Str(op(1)), Str(a),
                               Str(array(a.element_type(), dims))));
      if (!IsScalar(op(2))) return Bad(fmt::format("the init value is {}, not a scalar", Str(op(2))));
      const Computation* select = in.called_computations.size() > 0 ? in.called_computations[0] : nullptr;
      const Computation* scatter = in.called_computations.size() > 1 ? in.called_computations[1] : nullptr;
      if (select) {
        auto params = select->parameters();
        const Shape* root = RootShape(select);
        if (params.size() != 2 || !root || !IsScalar(*root) || root->element_type() != PrimitiveType::PRED)
          return Bad(fmt::format("select computation {} must take 2 scalars and return pred[]", select->name()));
      }
      OPPROBE_RETURN_IF_ERROR(CheckReducer(scatter, {op(1).element_type()}, o));
      return pass(a);
    }
    case Opcode::kConvolution: {
      OPPROBE_RETURN_IF_ERROR(need(2));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      OPPROBE_RETURN_IF_ERROR(need_array(1));
      if (!in.convolution_dimension_numbers) return Bad("no dim_labels");
      const auto& dn = *in.convolution_dimension_numbers;
      const Shape& x = op(0);
      const Shape& k = op(1);
      const size_t spatial = dn.input_spatial_dimensions.size();
      const int rank = x.rank();
      if (k.rank() != rank) return Bad(fmt::format("input {} and kernel {} differ in rank", Str(x), Str(k)));
      if (static_cast<int>(spatial) + 2 != rank || dn.output_spatial_dimensions.size() != spatial ||
          dn.kernel_spatial_dimensions.size() != spatial)
        return Bad(fmt::format("dim_labels has {} spatial dimensions for rank {}", spatial, rank));
      Window w = in.window.value_or(Window{});
      if (w.dimensions.empty()) w.dimensions.resize(spatial);
      if (w.dimensions.size() != spatial) return Bad("the window does not match the spatial dimensions");
      auto valid = [&](int64_t d) { return ValidDim(d, rank); };
      if (!valid(dn.input_batch_dimension) || !valid(dn.input_feature_dimension) ||
          !valid(dn.kernel_input_feature_dimension) || !valid(dn.kernel_output_feature_dimension) ||
          !valid(dn.output_batch_dimension) || !valid(dn.output_feature_dimension))
        return Bad("dim_labels names a dimension outside the rank");
      auto at = [](const Shape& s, int64_t d) { return s.dimensions(static_cast<int>(d)); };
      const int64_t fgc = in.feature_group_count, bgc = in.batch_group_count;
      if (fgc <= 0 || bgc <= 0) return Bad("feature_group_count and batch_group_count must be positive");
      const int64_t in_features = at(x, dn.input_feature_dimension);
      const int64_t k_in = at(k, dn.kernel_input_feature_dimension);
      const int64_t k_out = at(k, dn.kernel_output_feature_dimension);
      const int64_t batch = at(x, dn.input_batch_dimension);
      int64_t grouped = 0;
      if (!Unbounded(k_in) && !Mul(k_in, fgc, grouped)) return Overflow();
      if (!Unbounded(in_features) && !Unbounded(k_in) && in_features != grouped)
        return Bad(fmt::format("input features {} are not the kernel's input features {} times feature_group_count {}",
                               in_features, k_in, fgc));
      if (!Unbounded(k_out) && (k_out % fgc != 0 || k_out % bgc != 0))
        return Bad(fmt::format("kernel output features {} are not a multiple of the group counts", k_out));
      if (!Unbounded(batch) && batch % bgc != 0)
        return Bad(fmt::format("input batch {} is not a multiple of batch_group_count {}", batch, bgc));
      std::vector<int64_t> dims(static_cast<size_t>(rank), 0);
      dims[static_cast<size_t>(dn.output_batch_dimension)] = Unbounded(batch) ? batch : batch / bgc;
      dims[static_cast<size_t>(dn.output_feature_dimension)] = k_out;
      for (size_t s = 0; s < spatial; ++s) {
        WindowDimension wd = w.dimensions[s];
        const int64_t out_pos = dn.output_spatial_dimensions[s];
        if (!valid(dn.input_spatial_dimensions[s]) || !valid(dn.kernel_spatial_dimensions[s]) || !valid(out_pos))
          return Bad("dim_labels names a dimension outside the rank");
        const int64_t k_d = at(k, dn.kernel_spatial_dimensions[s]);
        if (in.window && !Unbounded(k_d) && wd.size != k_d)
          return Bad(fmt::format("window size {} differs from the kernel's spatial size {}", wd.size, k_d));
        wd.size = k_d;
        OPPROBE_ASSIGN_OR_RETURN(int64_t size, WindowedSize(at(x, dn.input_spatial_dimensions[s]), wd));
        dims[static_cast<size_t>(out_pos)] = size;
      }
      return array(x.element_type(), dims);
    }
    case Opcode::kGather:
      OPPROBE_RETURN_IF_ERROR(need(2));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      OPPROBE_RETURN_IF_ERROR(need_array(1));
      return InferGather(in, sc == nullptr);
    case Opcode::kScatter: {
      if (n < 3 || n % 2 == 0)
        return Bad(fmt::format("scatter needs operands, indices and as many updates, has {}", n));
      const int k = (n - 1) / 2;
      std::vector<PrimitiveType> types;
      for (int i = 0; i < n; ++i) OPPROBE_RETURN_IF_ERROR(need_array(i));
      for (int i = 0; i < k; ++i) {
        if (!SameDims(op(i), op(0)))
          return Bad(fmt::format("operand {} is {}, operand 0 is {}", i, Str(op(i)), Str(op(0))));
        types.push_back(op(i).element_type());
      }
      OPPROBE_RETURN_IF_ERROR(CheckScatterUpdates(in, k));
      OPPROBE_RETURN_IF_ERROR(CheckReducer(in.to_apply(), types, o));
      return k == 1 ? WithoutLayout(op(0)) : TupleOf(in, 0, k);
    }
    case Opcode::kTriangularSolve: {
      OPPROBE_RETURN_IF_ERROR(need(2));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      OPPROBE_RETURN_IF_ERROR(need_array(1));
      const Shape& a = op(0);
      const Shape& b = op(1);
      OPPROBE_RETURN_IF_ERROR(CheckSquare(a, "triangular-solve's a"));
      if (b.rank() != a.rank()) return Bad(fmt::format("a {} and b {} differ in rank", Str(a), Str(b)));
      for (int i = 0; i + 2 < a.rank(); ++i)
        if (!DimAgrees(a.dimensions(i), b.dimensions(i)))
          return Bad(fmt::format("a {} and b {} differ in batch dimensions", Str(a), Str(b)));
      const int64_t m = a.dimensions(a.rank() - 1);
      const int64_t bm = b.dimensions(b.rank() - (in.triangular_solve_options.left_side ? 2 : 1));
      if (!DimAgrees(m, bm))
        return Bad(fmt::format("a {} does not match b {} on the {} side", Str(a), Str(b),
                               in.triangular_solve_options.left_side ? "left" : "right"));
      OPPROBE_RETURN_IF_ERROR(same_types(1, 2, 0));
      return pass(b);
    }
    case Opcode::kCholesky:
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      OPPROBE_RETURN_IF_ERROR(CheckSquare(op(0), "cholesky's operand"));
      return pass(op(0));
    case Opcode::kFft: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      const Shape& a = op(0);
      const int len = static_cast<int>(in.rare().fft_length.size());
      if (len < 1 || len > 3 || len > a.rank())
        return Bad(fmt::format("fft_length has {} entries for {}", len, Str(a)));
      const PrimitiveType t = a.element_type();
      std::vector<int64_t> dims = a.dimensions();
      auto last = [&](int i) -> int64_t& { return dims[dims.size() - static_cast<size_t>(len - i)]; };
      switch (in.fft_type) {
        case FftType::kFft:
        case FftType::kIfft:  // XLA checks the type only
          if (!IsComplex(t))
            return Bad(fmt::format("{} needs a complex operand, is {}", FftTypeName(in.fft_type), Str(a)));
          return pass(a);
        case FftType::kRfft: {
          if (t != PrimitiveType::F32 && t != PrimitiveType::F64)
            return Bad(fmt::format("RFFT needs an f32 or f64 operand, is {}", Str(a)));
          for (int i = 0; i < len; ++i)
            if (!DimAgrees(last(i), in.rare().fft_length[static_cast<size_t>(i)]))
              return Bad(fmt::format("fft_length does not match {}", Str(a)));
          if (!Unbounded(last(len - 1)) && in.rare().fft_length.back() != 0)
            last(len - 1) = in.rare().fft_length.back() / 2 + 1;
          return array(t == PrimitiveType::F32 ? PrimitiveType::C64 : PrimitiveType::C128, dims);
        }
        case FftType::kIrfft: {
          if (!IsComplex(t)) return Bad(fmt::format("IRFFT needs a complex operand, is {}", Str(a)));
          for (int i = 0; i + 1 < len; ++i)
            if (!DimAgrees(last(i), in.rare().fft_length[static_cast<size_t>(i)]))
              return Bad(fmt::format("fft_length does not match {}", Str(a)));
          if (!Unbounded(last(len - 1)) && in.rare().fft_length.back() != 0 &&
              last(len - 1) != in.rare().fft_length.back() / 2 + 1)
            return Bad(fmt::format("fft_length does not match {}", Str(a)));
          last(len - 1) = in.rare().fft_length.back();
          return array(ComplexComponentType(t), dims);
        }
      }
      return given();
    }
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad: {
      const int want = OpcodeArity(in.opcode);
      OPPROBE_RETURN_IF_ERROR(need(want));
      for (int i = 0; i < want; ++i) OPPROBE_RETURN_IF_ERROR(need_array(i));
      const Shape& a = op(0);
      if (!ValidDim(in.feature_index, a.rank()))
        return Bad(fmt::format("feature_index {} outside {}", in.feature_index, Str(a)));
      const int64_t features = a.dimensions(static_cast<int>(in.feature_index));
      // Per-feature operands: training (scale, offset), inference (scale, offset, mean, variance), grad (scale,
      // mean, variance); grad's last operand is the output gradient, shaped like the operand.
      const int per_feature_end = in.opcode == Opcode::kBatchNormGrad ? 4 : want;
      for (int i = 1; i < per_feature_end; ++i)
        if (op(i).rank() != 1 || !DimAgrees(op(i).dimensions(0), features))
          return Bad(fmt::format("operand {} is {}, the operand has {} features", i, Str(op(i)), features));
      if (in.opcode == Opcode::kBatchNormGrad && !SameDims(op(4), a))
        return Bad(fmt::format("the output gradient is {}, the operand {}", Str(op(4)), Str(a)));
      OPPROBE_RETURN_IF_ERROR(same_types(1, want, 0));
      if (in.opcode == Opcode::kBatchNormInference) return pass(a);
      Shape f = array(a.element_type(), {features});
      return Shape::Tuple({WithoutLayout(a), f, f});
    }
    case Opcode::kTopK: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      const Shape& a = op(0);
      if (a.rank() < 1) return Bad("topk needs an operand of rank 1 or more");
      const int64_t last = a.dimensions(a.rank() - 1);
      if (in.k < 0 || (!Unbounded(last) && in.k > last)) return Bad(fmt::format("k={} outside {}", in.k, Str(a)));
      std::vector<int64_t> dims = a.dimensions();
      dims.back() = in.k;
      return Shape::Tuple({array(a.element_type(), dims), array(PrimitiveType::S32, dims)});
    }
    default: break;
  }
  if (IsElementwise(in.opcode) && in.opcode != Opcode::kConvert && in.opcode != Opcode::kBitcastConvert &&
      in.opcode != Opcode::kStochasticConvert) {
    OPPROBE_RETURN_IF_ERROR(need(1));
    OPPROBE_RETURN_IF_ERROR(same_dims_as_first(0, n));
    OPPROBE_RETURN_IF_ERROR(same_types(1, n, 0));
    return pass(op(0));
  }
  return given();
}

Expected<Shape> InferShape(const Instruction& in, const ShapeCheckOptions& o) { return Infer(in, o, nullptr); }

Status CheckGivenShape(const Instruction& in, const ShapeCheckOptions& o) {
  const int n = in.operand_count();
  const Shape& out = in.shape;
  auto op = [&](int i) -> const Shape& { return in.operand(i)->shape; };
  auto same_type = [&](int i) -> Status {
    if (!SameType(op(i).element_type(), out.element_type(), o))
      return Bad(fmt::format("operand {} is {}, the result {}", i, Str(op(i)), Str(out)));
    return Status::Ok();
  };
  auto arrays = [&]() -> bool {
    if (!out.IsArray()) return false;
    for (int i = 0; i < n; ++i)
      if (!op(i).IsArray()) return false;
    return true;
  };
  switch (in.opcode) {
    case Opcode::kBroadcast: {
      if (n != 1 || !arrays()) return Bad("broadcast takes one array operand and gives an array");
      const Shape& a = op(0);
      if (static_cast<int>(in.dimensions.size()) != a.rank())
        return Bad(fmt::format("dimensions has {} entries for an operand of rank {}", in.dimensions.size(), a.rank()));
      for (int i = 0; i < a.rank(); ++i) {
        int64_t d = in.dimensions[static_cast<size_t>(i)];
        if (!ValidDim(d, out.rank())) return Bad(fmt::format("dimension {} outside the result {}", d, Str(out)));
        if (!DimAgrees(out.dimensions(static_cast<int>(d)), a.dimensions(i)))
          return Bad(fmt::format("operand dimension {} ({}) does not match result dimension {} ({})", i,
                                 a.dimensions(i), d, out.dimensions(static_cast<int>(d))));
      }
      return same_type(0);
    }
    case Opcode::kReshape: {
      if (n != 1 || !arrays()) return Bad("reshape takes one array operand and gives an array");
      if (AnyUnbounded(op(0)) || AnyUnbounded(out)) return same_type(0);
      auto a = op(0).ElementCount();
      auto b = out.ElementCount();
      if (a.ok() && b.ok() && *a != *b && !op(0).is_dynamic() && !out.is_dynamic())
        return Bad(fmt::format("{} has {} elements, the result {} has {}", Str(op(0)), *a, Str(out), *b));
      return same_type(0);
    }
    case Opcode::kDynamicReshape: {
      if (n < 1 || !arrays()) return Bad("dynamic-reshape takes array operands and gives an array");
      if (n - 1 != out.rank()) return Bad(fmt::format("{} sizes for a result of rank {}", n - 1, out.rank()));
      for (int i = 1; i < n; ++i)
        if (!IsScalar(op(i)) || !IsInteger(op(i).element_type()))
          return Bad(fmt::format("size operand {} is {}, not an integer scalar", i, Str(op(i))));
      return same_type(0);
    }
    case Opcode::kConvert:
    case Opcode::kStochasticConvert:
      if (n < 1 || !arrays())
        return Bad(fmt::format("{} takes array operands and gives an array", OpcodeName(in.opcode)));
      if (!SameDims(op(0), out))
        return Bad(fmt::format("the operand is {}, the result {}: the dimensions differ", Str(op(0)), Str(out)));
      if (in.opcode == Opcode::kStochasticConvert && n > 1 && !SameDims(op(1), op(0)))
        return Bad(fmt::format("the random operand is {}, the operand {}", Str(op(1)), Str(op(0))));
      return Status::Ok();
    case Opcode::kBitcastConvert: {
      if (n != 1 || !arrays()) return Bad("bitcast-convert takes one array operand and gives an array");
      const Shape& a = op(0);
      const int from = BitWidth(a.element_type()), to = BitWidth(out.element_type());
      if (from == to) {
        if (!SameDims(a, out)) return Bad(fmt::format("the operand is {}, the result {}", Str(a), Str(out)));
        return Status::Ok();
      }
      // A wider operand gains a minor dimension of from/to elements; a narrower one loses it.
      const Shape& wide = from > to ? a : out;
      const Shape& narrow = from > to ? out : a;
      const int64_t ratio = from > to ? from / to : to / from;
      bool ok = narrow.rank() == wide.rank() + 1 && DimAgrees(narrow.dimensions(narrow.rank() - 1), ratio);
      for (int i = 0; ok && i < wide.rank(); ++i) ok = DimAgrees(wide.dimensions(i), narrow.dimensions(i));
      if (!ok)
        return Bad(
            fmt::format("the operand is {}, the result {}: bit widths {} and {} do not match the "
                        "dimensions",
                        Str(a), Str(out), from, to));
      return Status::Ok();
    }
    case Opcode::kAllReduceDone: {
      // all-reduce-start's result passes on; in XLA's older form the start is the tuple (operand, result).
      if (n != 1) return Bad("all-reduce-done takes its all-reduce-start");
      const Shape& start = op(0);
      if (ShapesAgree(out, start, o)) return Status::Ok();
      if (start.IsTuple() && start.tuple_shapes().size() == 2 && ShapesAgree(out, start.tuple_shapes()[1], o))
        return Status::Ok();
      return Bad(fmt::format("the result {} is not what its all-reduce-start {} gives", Str(out), Str(start)));
    }
    case Opcode::kIota:
      if (!out.IsArray() || !ValidDim(in.iota_dimension, out.rank()))
        return Bad(fmt::format("iota_dimension {} outside the result {}", in.iota_dimension, Str(out)));
      return Status::Ok();
    case Opcode::kRng: {
      if (n < 2 || !arrays()) return Bad("rng takes two scalar parameters and gives an array");
      for (int i = 0; i < 2; ++i) {
        if (!IsScalar(op(i))) return Bad(fmt::format("rng parameter {} is {}, not a scalar", i, Str(op(i))));
        OPPROBE_RETURN_IF_ERROR(same_type(i));
      }
      return Status::Ok();
    }
    case Opcode::kRngBitGenerator: {
      if (n != 1 || !op(0).IsArray()) return Bad("rng-bit-generator takes one state array");
      if (out.IsTuple() && (out.tuple_shapes().size() != 2 || !ShapesAgree(out.tuple_shapes()[0], op(0), o)))
        return Bad(fmt::format("the result {} must be a tuple of the state {} and the output", Str(out), Str(op(0))));
      return Status::Ok();
    }
    case Opcode::kAllGather:
    case Opcode::kReduceScatter: {
      // The gathered (scattered) dimension grows (shrinks) by the group size; the others stay.
      // XLA's verifier compares with the group size it derives from the module's replica and partition counts;
      // opprobe checks that the sizes are a multiple of each other, the others equal.
      if (n < 1 || in.dimensions.size() != 1) return Bad("dimensions must name one dimension");
      std::vector<const Shape*> outs;
      if (n == 1) outs.push_back(&out);
      else if (out.IsTuple() && static_cast<int>(out.tuple_shapes().size()) == n)
        for (const auto& t : out.tuple_shapes()) outs.push_back(&t);
      else return Bad(fmt::format("{} operands need a tuple of {} results, the result is {}", n, n, Str(out)));
      const bool gather = in.opcode == Opcode::kAllGather;
      for (int i = 0; i < n; ++i) {
        const Shape& a = op(i);
        const Shape& r = *outs[static_cast<size_t>(i)];
        if (!a.IsArray() || !r.IsArray() || a.rank() != r.rank() || !ValidDim(in.dimensions[0], a.rank()))
          return Bad(fmt::format("operand {} is {}, the result {}", i, Str(a), Str(r)));
        for (int d = 0; d < a.rank(); ++d) {
          const int64_t x = a.dimensions(d), y = r.dimensions(d);
          if (Unbounded(x) || Unbounded(y)) continue;
          bool ok = d != in.dimensions[0] ? x == y
                    : gather              ? (x == 0 ? y == 0 : y % x == 0)
                                          : (y == 0 ? x == 0 : x % y == 0);
          if (!ok)
            return Bad(fmt::format("operand {} is {}, the result {}: dimension {} {}", i, Str(a), Str(r), d,
                                   d != in.dimensions[0] ? "differs" : "is not a multiple"));
        }
      }
      return Status::Ok();
    }
    default: return Status::Ok();
  }
}

Status CheckShape(const Instruction& in, const ShapeCheckOptions& o) {
  Shortcut sc;
  Expected<Shape> inferred = Infer(in, o, &sc);
  if (!inferred.ok()) return Bad(fmt::format("{}: {}", OpcodeName(in.opcode), inferred.status().message()));
  if (sc.given) {
    Status st = CheckGivenShape(in, o);
    if (!st.ok()) return Bad(fmt::format("{}: {}", OpcodeName(in.opcode), st.message()));
    return Status::Ok();
  }
  if (sc.tuple_of_operands) {
    bool agree = in.shape.IsTuple() && static_cast<int>(in.shape.tuple_shapes().size()) == in.operand_count();
    for (int i = 0; agree && i < in.operand_count(); ++i)
      agree = ShapesAgree(in.shape.tuple_shapes()[static_cast<size_t>(i)], in.operand(i)->shape, o);
    if (agree) return Status::Ok();
    return Bad(fmt::format("tuple has shape {}, its operands and attributes give {}", Str(in.shape),
                           Str(TupleOf(in, 0, in.operand_count()))));
  }
  const Shape& want = sc.same ? *sc.same : *inferred;
  bool agree;
  if ((in.opcode == Opcode::kDot || in.opcode == Opcode::kConvolution) && want.IsArray() && in.shape.IsArray()) {
    // The result's element type is the preferred one (an f32 result of bf16 operands): dimensions compare.
    agree = SameDims(in.shape, want);
  } else {
    agree = ShapesAgree(in.shape, want, o);
  }
  if (agree) return Status::Ok();
  return Bad(fmt::format("{} has shape {}, its operands and attributes give {}", OpcodeName(in.opcode), Str(in.shape),
                         Str(want)));
}

}  // namespace opprobe::hlo
