#include "hlo/shape_inference.h"

#include <fmt/format.h>

#include <algorithm>

namespace opprobe::hlo {
namespace {

Status Fail(const Instruction& in, const std::string& why) {
  return InvalidInput(fmt::format("cannot infer the shape of {} {}: {}", OpcodeName(in.opcode), in.name, why));
}

bool ValidDim(int64_t d, int rank) { return d >= 0 && d < rank; }

Shape WithoutLayout(Shape s) {
  s.clear_layout();
  s.set_layout_suffix("");
  for (auto& t : s.mutable_tuple_shapes()) t = WithoutLayout(std::move(t));
  return s;
}

Shape ArrayLike(const Shape& dims_from, PrimitiveType type) {
  Shape s = Shape::Array(type, dims_from.dimensions());
  for (int i = 0; i < dims_from.rank(); ++i) s.set_dynamic_dimension(i, dims_from.is_dynamic_dimension(i));
  s.clear_layout();
  return s;
}

}  // namespace

Expected<Shape> InferShape(const Instruction& in) {
  const int n = in.operand_count();
  auto op = [&](int i) -> const Shape& { return in.operand(i)->shape; };
  auto need = [&](int count) -> Status {
    if (n < count) return Fail(in, fmt::format("needs {} operand(s), has {}", count, n));
    return Status::Ok();
  };
  auto need_array = [&](int i) -> Status {
    if (!op(i).IsArray()) return Fail(in, fmt::format("operand {} is not an array", i));
    return Status::Ok();
  };
  switch (in.opcode) {
    case Opcode::kTuple: {
      std::vector<Shape> elems;
      for (int i = 0; i < n; ++i) elems.push_back(WithoutLayout(op(i)));
      return Shape::Tuple(std::move(elems));
    }
    case Opcode::kGetTupleElement: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      const Shape& t = op(0);
      if (!t.IsTuple()) return Fail(in, "the operand is not a tuple");
      if (in.tuple_index < 0 || in.tuple_index >= static_cast<int64_t>(t.tuple_shapes().size()))
        return Fail(in, fmt::format("index {} outside a tuple of {}", in.tuple_index, t.tuple_shapes().size()));
      return WithoutLayout(t.tuple_shapes()[static_cast<size_t>(in.tuple_index)]);
    }
    case Opcode::kAfterAll: return Shape::Token();
    case Opcode::kPartitionId: case Opcode::kReplicaId: return Shape::Scalar(PrimitiveType::U32);
    case Opcode::kCompare: case Opcode::kIsFinite:
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      return ArrayLike(op(0), PrimitiveType::PRED);
    case Opcode::kReal: case Opcode::kImag: case Opcode::kAbs:
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      return ArrayLike(op(0), IsComplex(op(0).element_type()) ? ComplexComponentType(op(0).element_type())
                                                              : op(0).element_type());
    case Opcode::kComplex:
      OPPROBE_RETURN_IF_ERROR(need(2));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      if (op(0).element_type() == PrimitiveType::F32) return ArrayLike(op(0), PrimitiveType::C64);
      if (op(0).element_type() == PrimitiveType::F64) return ArrayLike(op(0), PrimitiveType::C128);
      return Fail(in, "complex needs f32 or f64 operands");
    case Opcode::kSelect: case Opcode::kClamp:
      OPPROBE_RETURN_IF_ERROR(need(3));
      return WithoutLayout(op(1));
    case Opcode::kWhile: case Opcode::kCopy: case Opcode::kOptimizationBarrier: case Opcode::kDomain:
    case Opcode::kAddDependency: case Opcode::kReducePrecision: case Opcode::kCollectivePermute:
    case Opcode::kAllReduce:
      OPPROBE_RETURN_IF_ERROR(need(1));
      if (in.opcode == Opcode::kAllReduce && n > 1) {
        std::vector<Shape> elems;
        for (int i = 0; i < n; ++i) elems.push_back(WithoutLayout(op(i)));
        return Shape::Tuple(std::move(elems));
      }
      return WithoutLayout(op(0));
    case Opcode::kCall: case Opcode::kFusion: case Opcode::kConditional: {
      const Computation* c = in.called_computations.empty() ? nullptr : in.called_computations.back();
      if (!c || !c->root()) return Fail(in, "no called computation");
      return WithoutLayout(c->root()->shape);
    }
    case Opcode::kTranspose: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      const Shape& a = op(0);
      if (static_cast<int>(in.dimensions.size()) != a.rank()) return Fail(in, "dimensions do not match the rank");
      std::vector<int64_t> dims;
      for (int64_t d : in.dimensions) {
        if (!ValidDim(d, a.rank())) return Fail(in, "bad dimensions");
        dims.push_back(a.dimensions(static_cast<int>(d)));
      }
      return Shape::Array(a.element_type(), dims);
    }
    case Opcode::kConcatenate: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      if (in.dimensions.size() != 1 || !ValidDim(in.dimensions[0], op(0).rank())) return Fail(in, "bad dimensions");
      std::vector<int64_t> dims = op(0).dimensions();
      size_t d = static_cast<size_t>(in.dimensions[0]);
      for (int i = 1; i < n; ++i) {
        OPPROBE_RETURN_IF_ERROR(need_array(i));
        if (op(i).rank() != op(0).rank()) return Fail(in, "operands of different ranks");
        dims[d] += op(i).dimensions()[d];
      }
      return Shape::Array(op(0).element_type(), dims);
    }
    case Opcode::kPad: {
      OPPROBE_RETURN_IF_ERROR(need(2));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      const Shape& a = op(0);
      if (!in.padding_config || static_cast<int>(in.padding_config->dimensions.size()) != a.rank())
        return Fail(in, "padding does not match the rank");
      std::vector<int64_t> dims;
      for (int i = 0; i < a.rank(); ++i) {
        const auto& p = in.padding_config->dimensions[static_cast<size_t>(i)];
        int64_t d = a.dimensions(i);
        dims.push_back(d + p.edge_padding_low + p.edge_padding_high + std::max<int64_t>(d - 1, 0) * p.interior_padding);
      }
      return Shape::Array(a.element_type(), dims);
    }
    case Opcode::kDot: {
      OPPROBE_RETURN_IF_ERROR(need(2));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      OPPROBE_RETURN_IF_ERROR(need_array(1));
      const Shape& l = op(0);
      const Shape& r = op(1);
      DotDimensionNumbers dn = in.dot_dimension_numbers.value_or(DotDimensionNumbers{});
      std::vector<int64_t> dims;
      for (int64_t d : dn.lhs_batch_dimensions) {
        if (!ValidDim(d, l.rank())) return Fail(in, "bad lhs_batch_dims");
        dims.push_back(l.dimensions(static_cast<int>(d)));
      }
      auto used = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t d) {
        return std::count(a.begin(), a.end(), d) + std::count(b.begin(), b.end(), d) > 0;
      };
      for (int i = 0; i < l.rank(); ++i)
        if (!used(dn.lhs_batch_dimensions, dn.lhs_contracting_dimensions, i)) dims.push_back(l.dimensions(i));
      for (int i = 0; i < r.rank(); ++i)
        if (!used(dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions, i)) dims.push_back(r.dimensions(i));
      return Shape::Array(l.element_type(), dims);
    }
    case Opcode::kReduce: {
      // reduce(inputs..., inits...): each input loses the reduced dimensions.
      if (n < 2 || n % 2) return Fail(in, "reduce needs inputs and as many init values");
      std::vector<Shape> outs;
      for (int i = 0; i < n / 2; ++i) {
        OPPROBE_RETURN_IF_ERROR(need_array(i));
        std::vector<int64_t> dims;
        for (int d = 0; d < op(i).rank(); ++d)
          if (std::find(in.dimensions.begin(), in.dimensions.end(), d) == in.dimensions.end())
            dims.push_back(op(i).dimensions(d));
        outs.push_back(Shape::Array(op(n / 2 + i).element_type(), dims));
      }
      return outs.size() == 1 ? outs[0] : Shape::Tuple(std::move(outs));
    }
    case Opcode::kSort: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      if (n == 1) return WithoutLayout(op(0));
      std::vector<Shape> elems;
      for (int i = 0; i < n; ++i) elems.push_back(WithoutLayout(op(i)));
      return Shape::Tuple(std::move(elems));
    }
    case Opcode::kReduceWindow: {
      if (n < 2 || n % 2) return Fail(in, "reduce-window needs inputs and as many init values");
      if (!in.window) return Fail(in, "no window");
      std::vector<Shape> outs;
      for (int i = 0; i < n / 2; ++i) {
        OPPROBE_RETURN_IF_ERROR(need_array(i));
        const Shape& a = op(i);
        if (static_cast<int>(in.window->dimensions.size()) != a.rank()) return Fail(in, "window does not match the rank");
        std::vector<int64_t> dims;
        for (int d = 0; d < a.rank(); ++d) {
          const auto& w = in.window->dimensions[static_cast<size_t>(d)];
          int64_t base = a.dimensions(d) == 0 ? 0 : (a.dimensions(d) - 1) * w.base_dilation + 1;
          int64_t padded = base + w.padding_low + w.padding_high;
          int64_t win = (w.size - 1) * w.window_dilation + 1;
          if (w.stride <= 0) return Fail(in, "window stride must be positive");
          dims.push_back(padded < win ? 0 : (padded - win) / w.stride + 1);
        }
        outs.push_back(Shape::Array(op(n / 2 + i).element_type(), dims));
      }
      return outs.size() == 1 ? outs[0] : Shape::Tuple(std::move(outs));
    }
    case Opcode::kConvolution: {
      OPPROBE_RETURN_IF_ERROR(need(2));
      OPPROBE_RETURN_IF_ERROR(need_array(0));
      OPPROBE_RETURN_IF_ERROR(need_array(1));
      if (!in.convolution_dimension_numbers) return Fail(in, "no dim_labels");
      const auto& dn = *in.convolution_dimension_numbers;
      const Shape& x = op(0);
      const Shape& k = op(1);
      size_t spatial = dn.input_spatial_dimensions.size();
      int rank = x.rank();
      if (dn.output_spatial_dimensions.size() != spatial || dn.kernel_spatial_dimensions.size() != spatial)
        return Fail(in, "bad dim_labels");
      Window w = in.window.value_or(Window{});
      if (w.dimensions.empty()) w.dimensions.resize(spatial);
      if (w.dimensions.size() != spatial) return Fail(in, "window does not match the spatial dimensions");
      std::vector<int64_t> dims(static_cast<size_t>(rank), 0);
      auto at = [&](const Shape& s, int64_t d) -> int64_t { return ValidDim(d, s.rank()) ? s.dimensions(static_cast<int>(d)) : -1; };
      if (!ValidDim(dn.output_batch_dimension, rank) || !ValidDim(dn.output_feature_dimension, rank))
        return Fail(in, "bad dim_labels");
      int64_t batch = at(x, dn.input_batch_dimension);
      int64_t features = at(k, dn.kernel_output_feature_dimension);
      if (batch < 0 || features < 0) return Fail(in, "bad dim_labels");
      dims[static_cast<size_t>(dn.output_batch_dimension)] = in.batch_group_count > 1 ? batch / in.batch_group_count : batch;
      dims[static_cast<size_t>(dn.output_feature_dimension)] = features;
      for (size_t s = 0; s < spatial; ++s) {
        const auto& wd = w.dimensions[s];
        int64_t in_d = at(x, dn.input_spatial_dimensions[s]);
        int64_t k_d = at(k, dn.kernel_spatial_dimensions[s]);
        int64_t out_pos = dn.output_spatial_dimensions[s];
        if (in_d < 0 || k_d < 0 || !ValidDim(out_pos, rank) || wd.stride <= 0) return Fail(in, "bad dim_labels");
        int64_t base = in_d == 0 ? 0 : (in_d - 1) * wd.base_dilation + 1;
        int64_t padded = base + wd.padding_low + wd.padding_high;
        int64_t win = (k_d - 1) * wd.window_dilation + 1;
        dims[static_cast<size_t>(out_pos)] = padded < win ? 0 : (padded - win) / wd.stride + 1;
      }
      return Shape::Array(x.element_type(), dims);
    }
    default:
      break;
  }
  if (IsElementwise(in.opcode) && in.opcode != Opcode::kConvert && in.opcode != Opcode::kBitcastConvert &&
      in.opcode != Opcode::kStochasticConvert) {
    OPPROBE_RETURN_IF_ERROR(need(1));
    OPPROBE_RETURN_IF_ERROR(need_array(0));
    return WithoutLayout(op(0));
  }
  return Fail(in, "write the result shape (opprobe infers it only for ops whose operands determine it)");
}

}  // namespace opprobe::hlo
