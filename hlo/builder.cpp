#include "hlo/builder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

namespace opprobe::hlo {

Builder::Builder(std::string name) : state_(std::make_shared<State>()) {
  state_->module = std::make_unique<Module>(name);
  computation_ = std::make_unique<Computation>(std::move(name));
}

Builder::Builder(std::shared_ptr<State> state, std::string name)
    : state_(std::move(state)), computation_(std::make_unique<Computation>(std::move(name))) {}

Builder Builder::CreateSubBuilder(const std::string& name) {
  return Builder(state_, fmt::format("{}.{}", name, state_->next_id++));
}

Instruction* Builder::Make(Opcode op, Shape shape, std::vector<Instruction*> operands) {
  auto instr = std::make_unique<Instruction>();
  instr->opcode = op;
  instr->shape = std::move(shape);
  instr->operands = std::move(operands);
  return Add(std::move(instr));
}

Instruction* Builder::Add(std::unique_ptr<Instruction> instr) {
  instr->id = state_->next_id++;
  if (instr->name.empty()) {
    instr->name = instr->opcode == Opcode::kParameter ? fmt::format("p{}.{}", instr->parameter_number, instr->id)
                                                      : fmt::format("{}.{}", OpcodeName(instr->opcode), instr->id);
  }
  if (instr->metadata->empty()) instr->metadata = metadata_;
  return computation_->AddInstruction(std::move(instr));
}

Instruction* Builder::Bad(const std::string& message, Shape placeholder) {
  Fail(InvalidInput(message));
  return Make(Opcode::kConstant, std::move(placeholder), {});
}

Instruction* Builder::Parameter(int64_t number, const Shape& shape, const std::string& name) {
  auto instr = std::make_unique<Instruction>();
  instr->opcode = Opcode::kParameter;
  instr->shape = shape;
  instr->parameter_number = number;
  instr->name = name;
  parameter_count_ = std::max(parameter_count_, number + 1);
  return Add(std::move(instr));
}

Instruction* Builder::NextParameter(const Shape& shape, const std::string& name) {
  return Parameter(parameter_count_, shape, name);
}

Instruction* Builder::Constant(Literal literal) {
  auto instr = std::make_unique<Instruction>();
  instr->opcode = Opcode::kConstant;
  instr->shape = literal.shape();
  instr->literal = std::move(literal);
  return Add(std::move(instr));
}

Instruction* Builder::ConstantScalar(PrimitiveType type, double value) {
  return Constant(Literal::ScalarF64(type, value));
}

Instruction* Builder::Full(PrimitiveType type, double value, const std::vector<int64_t>& dims) {
  Instruction* c = ConstantScalar(type, value);
  if (dims.empty()) return c;
  return Broadcast(c, dims, {});
}

Instruction* Builder::Unary(Opcode op, Instruction* x) {
  Shape s = x->shape;
  PrimitiveType t = s.element_type();
  switch (op) {
    case Opcode::kReal:
    case Opcode::kImag: s.set_element_type(ComplexComponentType(t)); break;
    case Opcode::kAbs:
      if (IsComplex(t)) s.set_element_type(ComplexComponentType(t));
      break;
    case Opcode::kIsFinite: s.set_element_type(PrimitiveType::PRED); break;
    default: break;
  }
  return Make(op, std::move(s), {x});
}

Instruction* Builder::Binary(Opcode op, Instruction* a, Instruction* b) {
  if (a->shape.dimensions() != b->shape.dimensions())
    return Bad(
        fmt::format("{}: operand shapes {} and {} differ", OpcodeName(op), a->shape.ToString(), b->shape.ToString()),
        a->shape);
  Shape s = a->shape;
  if (op == Opcode::kComplex) {
    s.set_element_type(a->shape.element_type() == PrimitiveType::F64 ? PrimitiveType::C128 : PrimitiveType::C64);
  } else if (a->shape.element_type() != b->shape.element_type() && op != Opcode::kShiftLeft) {
    return Bad(
        fmt::format("{}: element types {} and {} differ", OpcodeName(op), a->shape.ToString(), b->shape.ToString()),
        a->shape);
  }
  return Make(op, std::move(s), {a, b});
}

Instruction* Builder::Compare(Instruction* a, Instruction* b, ComparisonDirection dir, std::string type) {
  if (a->shape.dimensions() != b->shape.dimensions() || a->shape.element_type() != b->shape.element_type())
    return Bad(fmt::format("compare: operands {} and {} differ", a->shape.ToString(), b->shape.ToString()));
  Shape s = a->shape;
  s.set_element_type(PrimitiveType::PRED);
  Instruction* c = Make(Opcode::kCompare, std::move(s), {a, b});
  c->comparison_direction = dir;
  c->mutable_rare().comparison_type = std::move(type);
  return c;
}

Instruction* Builder::Select(Instruction* pred, Instruction* on_true, Instruction* on_false) {
  if (on_true->shape.dimensions() != on_false->shape.dimensions() ||
      on_true->shape.element_type() != on_false->shape.element_type() ||
      (pred->shape.rank() != 0 && pred->shape.dimensions() != on_true->shape.dimensions()))
    return Bad(fmt::format("select: operands {}, {}, {} are incompatible", pred->shape.ToString(),
                           on_true->shape.ToString(), on_false->shape.ToString()),
               on_true->shape);
  return Make(Opcode::kSelect, on_true->shape, {pred, on_true, on_false});
}

Instruction* Builder::Clamp(Instruction* lo, Instruction* x, Instruction* hi) {
  return Make(Opcode::kClamp, x->shape, {lo, x, hi});
}

Instruction* Builder::Convert(Instruction* x, PrimitiveType to) {
  if (x->shape.element_type() == to) return x;
  Shape s = x->shape;
  s.set_element_type(to);
  return Make(Opcode::kConvert, std::move(s), {x});
}

Instruction* Builder::BitcastConvert(Instruction* x, PrimitiveType to) {
  Shape s = x->shape;
  s.set_element_type(to);
  return Make(Opcode::kBitcastConvert, std::move(s), {x});
}

Instruction* Builder::Broadcast(Instruction* x, const std::vector<int64_t>& out_dims,
                                const std::vector<int64_t>& dimensions) {
  if (static_cast<int>(dimensions.size()) != x->shape.rank())
    return Bad(fmt::format("broadcast: {} dimensions for operand {}", dimensions.size(), x->shape.ToString()));
  for (size_t i = 0; i < dimensions.size(); ++i) {
    int64_t d = dimensions[i];
    if (d < 0 || d >= static_cast<int64_t>(out_dims.size()) ||
        out_dims[static_cast<size_t>(d)] != x->shape.dimensions()[i])
      return Bad(fmt::format("broadcast: operand {} does not map into [{}] with dimensions={{{}}}", x->shape.ToString(),
                             fmt::join(out_dims, ","), fmt::join(dimensions, ",")));
  }
  Instruction* b = Make(Opcode::kBroadcast, Shape::Array(x->shape.element_type(), out_dims), {x});
  b->dimensions = dimensions;
  return b;
}

Instruction* Builder::BroadcastTo(Instruction* x, const std::vector<int64_t>& out_dims) {
  const auto& in = x->shape.dimensions();
  if (in == out_dims) return x;
  if (in.size() > out_dims.size())
    return Bad(fmt::format("cannot broadcast {} to [{}]", x->shape.ToString(), fmt::join(out_dims, ",")));
  size_t offset = out_dims.size() - in.size();
  std::vector<int64_t> kept_dims, mapping;
  bool squeeze = false;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == out_dims[offset + i]) {
      kept_dims.push_back(in[i]);
      mapping.push_back(static_cast<int64_t>(offset + i));
    } else if (in[i] == 1) {
      squeeze = true;
    } else {
      return Bad(fmt::format("cannot broadcast {} to [{}]", x->shape.ToString(), fmt::join(out_dims, ",")));
    }
  }
  Instruction* src = squeeze ? Reshape(x, kept_dims) : x;
  return Broadcast(src, out_dims, mapping);
}

Instruction* Builder::Reshape(Instruction* x, const std::vector<int64_t>& dims) {
  Shape s = Shape::Array(x->shape.element_type(), dims);
  if (s.elements() != x->shape.elements())
    return Bad(fmt::format("reshape: {} cannot become [{}]", x->shape.ToString(), fmt::join(dims, ",")), s);
  if (x->shape.dimensions() == dims) return x;
  return Make(Opcode::kReshape, std::move(s), {x});
}

Instruction* Builder::Transpose(Instruction* x, const std::vector<int64_t>& perm) {
  if (static_cast<int>(perm.size()) != x->shape.rank())
    return Bad(fmt::format("transpose: permutation of {} for {}", perm.size(), x->shape.ToString()));
  std::vector<int64_t> dims;
  for (int64_t p : perm) {
    if (p < 0 || p >= x->shape.rank()) return Bad("transpose: permutation out of range");
    dims.push_back(x->shape.dimensions()[static_cast<size_t>(p)]);
  }
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  if (identity) return x;
  Instruction* t = Make(Opcode::kTranspose, Shape::Array(x->shape.element_type(), dims), {x});
  t->dimensions = perm;
  return t;
}

Instruction* Builder::Slice(Instruction* x, const std::vector<int64_t>& starts, const std::vector<int64_t>& limits,
                            const std::vector<int64_t>& strides) {
  int rank = x->shape.rank();
  if (static_cast<int>(starts.size()) != rank || static_cast<int>(limits.size()) != rank ||
      static_cast<int>(strides.size()) != rank)
    return Bad(fmt::format("slice: bounds of the wrong rank for {}", x->shape.ToString()));
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    int64_t lo = starts[static_cast<size_t>(i)], hi = limits[static_cast<size_t>(i)],
            st = strides[static_cast<size_t>(i)];
    if (lo < 0 || hi < lo || hi > x->shape.dimensions()[static_cast<size_t>(i)] || st <= 0)
      return Bad(
          fmt::format("slice: [{}:{}:{}] out of range for dimension {} of {}", lo, hi, st, i, x->shape.ToString()));
    dims.push_back((hi - lo + st - 1) / st);
  }
  Instruction* s = Make(Opcode::kSlice, Shape::Array(x->shape.element_type(), dims), {x});
  s->slice = SliceDimensions{starts, limits, strides};
  return s;
}

Instruction* Builder::SliceInDim(Instruction* x, int64_t start, int64_t limit, int64_t stride, int64_t dim) {
  std::vector<int64_t> starts(static_cast<size_t>(x->shape.rank()), 0), strides(starts.size(), 1);
  std::vector<int64_t> limits = x->shape.dimensions();
  if (dim < 0 || dim >= x->shape.rank()) return Bad("slice: dimension out of range");
  starts[static_cast<size_t>(dim)] = start;
  limits[static_cast<size_t>(dim)] = limit;
  strides[static_cast<size_t>(dim)] = stride;
  return Slice(x, starts, limits, strides);
}

Instruction* Builder::DynamicSlice(Instruction* x, const std::vector<Instruction*>& starts,
                                   const std::vector<int64_t>& sizes) {
  std::vector<Instruction*> ops{x};
  ops.insert(ops.end(), starts.begin(), starts.end());
  Instruction* d = Make(Opcode::kDynamicSlice, Shape::Array(x->shape.element_type(), sizes), std::move(ops));
  d->mutable_rare().dynamic_slice_sizes = sizes;
  return d;
}

Instruction* Builder::DynamicUpdateSlice(Instruction* x, Instruction* update, const std::vector<Instruction*>& starts) {
  std::vector<Instruction*> ops{x, update};
  ops.insert(ops.end(), starts.begin(), starts.end());
  return Make(Opcode::kDynamicUpdateSlice, x->shape, std::move(ops));
}

Instruction* Builder::Concatenate(const std::vector<Instruction*>& xs, int64_t dim) {
  if (xs.empty()) return Bad("concatenate: no operands");
  std::vector<int64_t> dims = xs[0]->shape.dimensions();
  if (dim < 0 || dim >= static_cast<int64_t>(dims.size())) return Bad("concatenate: dimension out of range");
  for (size_t i = 1; i < xs.size(); ++i) {
    const auto& d = xs[i]->shape.dimensions();
    if (d.size() != dims.size()) return Bad("concatenate: operand ranks differ");
    dims[static_cast<size_t>(dim)] += d[static_cast<size_t>(dim)];
  }
  Instruction* c = Make(Opcode::kConcatenate, Shape::Array(xs[0]->shape.element_type(), dims), xs);
  c->dimensions = {dim};
  return c;
}

Instruction* Builder::Reverse(Instruction* x, const std::vector<int64_t>& dims) {
  Instruction* r = Make(Opcode::kReverse, x->shape, {x});
  r->dimensions = dims;
  return r;
}

Instruction* Builder::Pad(Instruction* x, Instruction* pad_value, const PaddingConfig& config) {
  if (static_cast<int>(config.dimensions.size()) != x->shape.rank()) return Bad("pad: config of the wrong rank");
  std::vector<int64_t> dims;
  for (int i = 0; i < x->shape.rank(); ++i) {
    const auto& p = config.dimensions[static_cast<size_t>(i)];
    int64_t d = x->shape.dimensions()[static_cast<size_t>(i)];
    int64_t out = p.edge_padding_low + p.edge_padding_high + d + std::max<int64_t>(d - 1, 0) * p.interior_padding;
    if (out < 0 || p.interior_padding < 0) return Bad("pad: negative result dimension");
    dims.push_back(out);
  }
  Instruction* p = Make(Opcode::kPad, Shape::Array(x->shape.element_type(), dims), {x, pad_value});
  p->padding_config = config;
  return p;
}

Instruction* Builder::Iota(const Shape& shape, int64_t iota_dimension) {
  Instruction* i = Make(Opcode::kIota, shape, {});
  i->iota_dimension = iota_dimension;
  return i;
}

Instruction* Builder::Reduce(const std::vector<Instruction*>& operands, const std::vector<Instruction*>& inits,
                             const std::vector<int64_t>& dims, Computation* to_apply) {
  if (operands.empty() || operands.size() != inits.size()) return Bad("reduce: operand/init count mismatch");
  std::vector<Shape> results;
  for (Instruction* op : operands) {
    std::vector<int64_t> out;
    for (int i = 0; i < op->shape.rank(); ++i)
      if (std::find(dims.begin(), dims.end(), i) == dims.end())
        out.push_back(op->shape.dimensions()[static_cast<size_t>(i)]);
    results.push_back(Shape::Array(op->shape.element_type(), out));
  }
  std::vector<Instruction*> ops = operands;
  ops.insert(ops.end(), inits.begin(), inits.end());
  Shape s = results.size() == 1 ? results[0] : Shape::Tuple(results);
  Instruction* r = Make(Opcode::kReduce, std::move(s), std::move(ops));
  r->dimensions = dims;
  r->called_computations = {to_apply};
  return r;
}

namespace {
int64_t WindowOutputSize(int64_t in, const WindowDimension& w) {
  int64_t dilated_in = in == 0 ? 0 : (in - 1) * w.base_dilation + 1;
  int64_t padded = dilated_in + w.padding_low + w.padding_high;
  int64_t dilated_window = (w.size - 1) * w.window_dilation + 1;
  if (padded < dilated_window) return 0;
  return (padded - dilated_window) / w.stride + 1;
}
}  // namespace

Instruction* Builder::ReduceWindow(const std::vector<Instruction*>& operands, const std::vector<Instruction*>& inits,
                                   const Window& window, Computation* to_apply) {
  if (operands.empty() || operands.size() != inits.size()) return Bad("reduce-window: operand/init count mismatch");
  std::vector<Shape> results;
  for (Instruction* op : operands) {
    if (static_cast<int>(window.dimensions.size()) != op->shape.rank())
      return Bad("reduce-window: window of the wrong rank");
    std::vector<int64_t> out;
    out.reserve(static_cast<size_t>(op->shape.rank()));
    for (int i = 0; i < op->shape.rank(); ++i)
      out.push_back(
          WindowOutputSize(op->shape.dimensions()[static_cast<size_t>(i)], window.dimensions[static_cast<size_t>(i)]));
    results.push_back(Shape::Array(op->shape.element_type(), out));
  }
  std::vector<Instruction*> ops = operands;
  ops.insert(ops.end(), inits.begin(), inits.end());
  Shape s = results.size() == 1 ? results[0] : Shape::Tuple(results);
  Instruction* r = Make(Opcode::kReduceWindow, std::move(s), std::move(ops));
  r->window = window;
  r->called_computations = {to_apply};
  return r;
}

Instruction* Builder::SelectAndScatter(Instruction* operand, Computation* select, const Window& window,
                                       Instruction* source, Instruction* init, Computation* scatter) {
  Instruction* r = Make(Opcode::kSelectAndScatter, operand->shape, {operand, source, init});
  r->window = window;
  r->called_computations = {select, scatter};
  return r;
}

Instruction* Builder::Dot(Instruction* lhs, Instruction* rhs, const DotDimensionNumbers& dn,
                          PrimitiveType result_type) {
  const auto& l = lhs->shape.dimensions();
  const auto& r = rhs->shape.dimensions();
  auto in = [](const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  if (dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size() ||
      dn.lhs_batch_dimensions.size() != dn.rhs_batch_dimensions.size())
    return Bad("dot: dimension numbers of unequal lengths");
  for (size_t i = 0; i < dn.lhs_contracting_dimensions.size(); ++i) {
    int64_t a = dn.lhs_contracting_dimensions[i], b = dn.rhs_contracting_dimensions[i];
    if (a < 0 || b < 0 || a >= static_cast<int64_t>(l.size()) || b >= static_cast<int64_t>(r.size()) ||
        l[static_cast<size_t>(a)] != r[static_cast<size_t>(b)])
      return Bad(fmt::format("dot: contracting dimensions of {} and {} do not match", lhs->shape.ToString(),
                             rhs->shape.ToString()));
  }
  std::vector<int64_t> out;
  for (int64_t b : dn.lhs_batch_dimensions) {
    if (b < 0 || b >= static_cast<int64_t>(l.size())) return Bad("dot: batch dimension out of range");
    out.push_back(l[static_cast<size_t>(b)]);
  }
  for (int64_t i = 0; i < static_cast<int64_t>(l.size()); ++i)
    if (!in(dn.lhs_batch_dimensions, i) && !in(dn.lhs_contracting_dimensions, i))
      out.push_back(l[static_cast<size_t>(i)]);
  for (int64_t i = 0; i < static_cast<int64_t>(r.size()); ++i)
    if (!in(dn.rhs_batch_dimensions, i) && !in(dn.rhs_contracting_dimensions, i))
      out.push_back(r[static_cast<size_t>(i)]);
  PrimitiveType t = result_type == PrimitiveType::PRIMITIVE_TYPE_INVALID ? lhs->shape.element_type() : result_type;
  Instruction* d = Make(Opcode::kDot, Shape::Array(t, out), {lhs, rhs});
  d->dot_dimension_numbers = dn;
  return d;
}

Instruction* Builder::Convolution(Instruction* lhs, Instruction* rhs, const Window& window,
                                  const ConvolutionDimensionNumbers& dn, int64_t feature_group_count,
                                  int64_t batch_group_count, PrimitiveType result_type) {
  const auto& l = lhs->shape.dimensions();
  const auto& r = rhs->shape.dimensions();
  size_t nsp = dn.input_spatial_dimensions.size();
  if (window.dimensions.size() != nsp || l.size() != nsp + 2 || r.size() != nsp + 2)
    return Bad(fmt::format("convolution: ranks of {} and {} do not fit {} spatial dims", lhs->shape.ToString(),
                           rhs->shape.ToString(), nsp));
  auto at = [](const std::vector<int64_t>& v, int64_t i) { return v[static_cast<size_t>(i)]; };
  int64_t in_features = at(l, dn.input_feature_dimension);
  int64_t kernel_in = at(r, dn.kernel_input_feature_dimension);
  if (feature_group_count <= 0 || in_features != kernel_in * feature_group_count)
    return Bad(fmt::format("convolution: input features {} != kernel input features {} x groups {}", in_features,
                           kernel_in, feature_group_count));
  std::vector<int64_t> out(nsp + 2);
  out[static_cast<size_t>(dn.output_batch_dimension)] = at(l, dn.input_batch_dimension) / batch_group_count;
  out[static_cast<size_t>(dn.output_feature_dimension)] = at(r, dn.kernel_output_feature_dimension);
  for (size_t i = 0; i < nsp; ++i) {
    WindowDimension w = window.dimensions[i];
    if (w.size != at(r, dn.kernel_spatial_dimensions[i]))
      return Bad("convolution: window size does not match the kernel's spatial dimension");
    out[static_cast<size_t>(dn.output_spatial_dimensions[i])] =
        WindowOutputSize(at(l, dn.input_spatial_dimensions[i]), w);
  }
  PrimitiveType t = result_type == PrimitiveType::PRIMITIVE_TYPE_INVALID ? lhs->shape.element_type() : result_type;
  Instruction* c = Make(Opcode::kConvolution, Shape::Array(t, out), {lhs, rhs});
  c->window = window;
  c->convolution_dimension_numbers = dn;
  c->feature_group_count = feature_group_count;
  c->batch_group_count = batch_group_count;
  return c;
}

Instruction* Builder::Gather(Instruction* operand, Instruction* indices, const GatherDimensionNumbers& dnums,
                             const std::vector<int64_t>& slice_sizes, const Shape& result) {
  Instruction* g = Make(Opcode::kGather, result, {operand, indices});
  g->gather_dimension_numbers = dnums;
  g->mutable_rare().gather_slice_sizes = slice_sizes;
  return g;
}

Instruction* Builder::Scatter(const std::vector<Instruction*>& operands, Instruction* indices,
                              const std::vector<Instruction*>& updates, const ScatterDimensionNumbers& dnums,
                              Computation* to_apply) {
  std::vector<Instruction*> ops = operands;
  ops.push_back(indices);
  ops.insert(ops.end(), updates.begin(), updates.end());
  std::vector<Shape> shapes;
  shapes.reserve(operands.size());
  for (auto* o : operands) shapes.push_back(o->shape);
  Instruction* s = Make(Opcode::kScatter, shapes.size() == 1 ? shapes[0] : Shape::Tuple(shapes), std::move(ops));
  s->scatter_dimension_numbers = dnums;
  s->called_computations = {to_apply};
  return s;
}

Instruction* Builder::Sort(const std::vector<Instruction*>& operands, int64_t dim, Computation* comparator,
                           bool is_stable) {
  std::vector<Shape> shapes;
  shapes.reserve(operands.size());
  for (auto* o : operands) shapes.push_back(o->shape);
  Instruction* s = Make(Opcode::kSort, shapes.size() == 1 ? shapes[0] : Shape::Tuple(shapes), operands);
  s->dimensions = {dim};
  s->called_computations = {comparator};
  s->is_stable = is_stable;
  return s;
}

Instruction* Builder::Fft(Instruction* x, FftType type, const std::vector<int64_t>& fft_length) {
  Shape s = x->shape;
  PrimitiveType t = x->shape.element_type();
  int rank = s.rank();
  int n = static_cast<int>(fft_length.size());
  if (n == 0 || n > 3 || n > rank) return Bad("fft: fft_length must name 1 to 3 trailing dimensions");
  switch (type) {
    case FftType::kFft:
    case FftType::kIfft:
      if (!IsComplex(t)) return Bad(fmt::format("fft: FFT needs a complex operand, got {}", s.ToString()));
      break;
    case FftType::kRfft:
      if (!IsFloatingPoint(t)) return Bad(fmt::format("fft: RFFT needs a real operand, got {}", s.ToString()));
      s.set_element_type(t == PrimitiveType::F64 ? PrimitiveType::C128 : PrimitiveType::C64);
      s.mutable_dimensions()[static_cast<size_t>(rank - 1)] = fft_length.back() / 2 + 1;
      break;
    case FftType::kIrfft:
      if (!IsComplex(t)) return Bad(fmt::format("fft: IRFFT needs a complex operand, got {}", s.ToString()));
      s.set_element_type(ComplexComponentType(t));
      s.mutable_dimensions()[static_cast<size_t>(rank - 1)] = fft_length.back();
      break;
  }
  Instruction* f = Make(Opcode::kFft, std::move(s), {x});
  f->fft_type = type;
  f->mutable_rare().fft_length = fft_length;
  return f;
}

Instruction* Builder::Tuple(const std::vector<Instruction*>& elements) {
  std::vector<Shape> shapes;
  shapes.reserve(elements.size());
  for (auto* e : elements) shapes.push_back(e->shape);
  return Make(Opcode::kTuple, Shape::Tuple(std::move(shapes)), elements);
}

Instruction* Builder::GetTupleElement(Instruction* tuple, int64_t index) {
  if (!tuple->shape.IsTuple() || index < 0 || index >= static_cast<int64_t>(tuple->shape.tuple_shapes().size()))
    return Bad(fmt::format("get-tuple-element: index {} of {}", index, tuple->shape.ToString()));
  Instruction* g = Make(Opcode::kGetTupleElement, tuple->shape.tuple_shapes()[static_cast<size_t>(index)], {tuple});
  g->tuple_index = index;
  return g;
}

Instruction* Builder::Rng(Instruction* a, Instruction* b, RandomDistribution dist, const Shape& shape) {
  Instruction* r = Make(Opcode::kRng, shape, {a, b});
  r->distribution = dist;
  return r;
}

Instruction* Builder::CustomCall(const std::vector<Instruction*>& operands, const std::string& target,
                                 const Shape& shape) {
  Instruction* c = Make(Opcode::kCustomCall, shape, operands);
  c->custom_call_target = target;
  return c;
}

Instruction* Builder::Cholesky(Instruction* a, bool lower) {
  const Shape& s = a->shape;
  if (!s.IsArray() || s.rank() < 2 || s.dimensions()[s.rank() - 1] != s.dimensions()[s.rank() - 2] ||
      (!IsFloatingPoint(s.element_type()) && !IsComplex(s.element_type())))
    return Bad(fmt::format("cholesky: needs a float or complex [..., n, n] operand, got {}", s.ToString()));
  Instruction* c = Make(Opcode::kCholesky, s, {a});
  c->cholesky_lower = lower;
  return c;
}

Instruction* Builder::TriangularSolve(Instruction* a, Instruction* b, const TriangularSolveOptions& options) {
  const Shape& sa = a->shape;
  const Shape& sb = b->shape;
  bool ok = sa.IsArray() && sb.IsArray() && sa.rank() >= 2 && sa.rank() == sb.rank() &&
            sa.element_type() == sb.element_type() &&
            (IsFloatingPoint(sa.element_type()) || IsComplex(sa.element_type()));
  if (ok) {
    int r = sa.rank();
    int64_t n = sa.dimensions()[r - 1];
    ok = sa.dimensions()[r - 2] == n && (options.left_side ? sb.dimensions()[r - 2] : sb.dimensions()[r - 1]) == n;
    for (int i = 0; ok && i < r - 2; ++i) ok = sa.dimensions()[i] == sb.dimensions()[i];
  }
  if (!ok)
    return Bad(fmt::format("triangular-solve: a {} and b {} do not form a [..., n, n] / [..., n, k] system",
                           sa.ToString(), sb.ToString()));
  Instruction* t = Make(Opcode::kTriangularSolve, sb, {a, b});
  t->triangular_solve_options = options;
  return t;
}

Instruction* Builder::Call(const std::vector<Instruction*>& operands, Computation* callee) {
  Instruction* c = Make(Opcode::kCall, callee->root()->shape, operands);
  c->called_computations = {callee};
  return c;
}

Instruction* Builder::While(Instruction* init, Computation* condition, Computation* body) {
  Instruction* w = Make(Opcode::kWhile, init->shape, {init});
  w->called_computations = {body, condition};
  return w;
}

Instruction* Builder::SetDimensionSize(Instruction* x, Instruction* size, int64_t dim) {
  Shape s = x->shape;
  s.set_dynamic_dimension(static_cast<int>(dim), true);
  Instruction* r = Make(Opcode::kSetDimensionSize, std::move(s), {x, size});
  r->dimensions = {dim};
  return r;
}

Computation* Builder::ScalarBinaryComputation(Opcode op, PrimitiveType type) {
  std::string key = fmt::format("{}.{}", OpcodeName(op), PrimitiveTypeName(type));
  for (auto& [k, c] : state_->scalar_computations)
    if (k == key) return c;
  Builder sub = CreateSubBuilder(fmt::format("{}_{}", OpcodeName(op), PrimitiveTypeName(type)));
  Instruction* a = sub.Parameter(0, Shape::Scalar(type));
  Instruction* b = sub.Parameter(1, Shape::Scalar(type));
  Computation* c = sub.Finish(sub.Binary(op, a, b));
  state_->scalar_computations.emplace_back(key, c);
  return c;
}

Computation* Builder::Adopt(std::unique_ptr<Module> other, const std::string& prefix) {
  Computation* entry = other->entry();
  for (auto& c : other->mutable_computations()) {
    c->set_name(fmt::format("{}.{}", prefix, c->name()));
    state_->module->AddComputation(std::move(c));
  }
  return entry;
}

Computation* Builder::Finish(Instruction* root) {
  computation_->set_root(root);
  return state_->module->AddComputation(std::move(computation_));
}

std::unique_ptr<Module> Builder::Build(Instruction* root) {
  computation_->set_root(root);
  Computation* entry = state_->module->AddComputation(std::move(computation_));
  state_->module->set_entry(entry);
  return std::move(state_->module);
}

}  // namespace opprobe::hlo
