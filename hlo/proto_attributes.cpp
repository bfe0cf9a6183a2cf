// HloModuleProto conversion, part 2: instruction attributes. WriteAttributes and ReadAttributes walk the
// instruction's schema (hlo/attributes.h); each field's HloInstructionProto path (AttrFieldInfo::proto_path) is
// resolved once through protobuf reflection, and one codec per AttrKind converts the value.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <numeric>

#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/proto_internal.h"
#include "support/quote.h"

namespace opprobe::hlo::proto_internal {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// The chain of fields from HloInstructionProto to a field's proto place; empty when XLA has none.
struct ProtoPath {
  std::vector<const FieldDescriptor*> chain;
  bool empty() const { return chain.empty(); }
  const FieldDescriptor* leaf() const { return chain.back(); }
};

const ProtoPath& PathOf(AttrField f) {
  static const std::vector<ProtoPath> paths = [] {
    std::vector<ProtoPath> out(static_cast<size_t>(AttrFieldCount()));
    for (int i = 0; i < AttrFieldCount(); ++i) {
      const AttrFieldInfo& info = FieldInfo(static_cast<AttrField>(i));
      std::string_view path = info.proto_path;
      const google::protobuf::Descriptor* d = xla::HloInstructionProto::descriptor();
      while (!path.empty()) {
        size_t dot = path.find('.');
        std::string part(path.substr(0, dot));
        const FieldDescriptor* fd = d ? d->FindFieldByName(part) : nullptr;
        if (!fd) {  // a schema path that names no field: a bug in hlo/attributes.h, caught by the unit tests
          out[static_cast<size_t>(i)].chain.clear();
          break;
        }
        out[static_cast<size_t>(i)].chain.push_back(fd);
        d = fd->message_type();
        path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
      }
    }
    return out;
  }();
  return paths[static_cast<size_t>(f)];
}

// The message that holds the path's last field, created on the way (writing).
Message* MutableHolder(Message* root, const ProtoPath& path) {
  Message* m = root;
  for (size_t i = 0; i + 1 < path.chain.size(); ++i) m = m->GetReflection()->MutableMessage(m, path.chain[i]);
  return m;
}
// The message that holds the path's last field, or null when a message on the way is absent (reading).
const Message* Holder(const Message& root, const ProtoPath& path) {
  const Message* m = &root;
  for (size_t i = 0; i + 1 < path.chain.size(); ++i) {
    if (!m->GetReflection()->HasField(*m, path.chain[i])) return nullptr;
    m = &m->GetReflection()->GetMessage(*m, path.chain[i]);
  }
  return m;
}

template <typename T>
T* As(Message* m) {
  return static_cast<T*>(m);
}
template <typename T>
const T& As(const Message& m) {
  return static_cast<const T&>(m);
}

void SetInt(Message* m, const FieldDescriptor* fd, int64_t v) {
  const Reflection* r = m->GetReflection();
  if (fd->is_repeated()) {
    if (fd->cpp_type() == FieldDescriptor::CPPTYPE_INT32) r->AddInt32(m, fd, static_cast<int32_t>(v));
    else r->AddInt64(m, fd, v);
  } else if (fd->cpp_type() == FieldDescriptor::CPPTYPE_INT32) {
    r->SetInt32(m, fd, static_cast<int32_t>(v));
  } else {
    r->SetInt64(m, fd, v);
  }
}
int64_t GetInt(const Message& m, const FieldDescriptor* fd) {
  const Reflection* r = m.GetReflection();
  if (fd->is_repeated()) {
    if (r->FieldSize(m, fd) == 0) return 0;
    return fd->cpp_type() == FieldDescriptor::CPPTYPE_INT32 ? r->GetRepeatedInt32(m, fd, 0)
                                                            : r->GetRepeatedInt64(m, fd, 0);
  }
  return fd->cpp_type() == FieldDescriptor::CPPTYPE_INT32 ? r->GetInt32(m, fd) : r->GetInt64(m, fd);
}

void WriteSharding(const Sharding& s, xla::OpSharding* p) {
  switch (s.type) {
    case Sharding::Type::kReplicated: p->set_type(xla::OpSharding::REPLICATED); break;
    case Sharding::Type::kManual: p->set_type(xla::OpSharding::MANUAL); break;
    case Sharding::Type::kUnknown: p->set_type(xla::OpSharding::UNKNOWN); break;
    case Sharding::Type::kUnreduced: p->set_type(xla::OpSharding::UNREDUCED); break;
    case Sharding::Type::kNamed: p->set_type(xla::OpSharding::UNKNOWN); break;  // no OpSharding form
    case Sharding::Type::kMaximal:
      p->set_type(xla::OpSharding::MAXIMAL);
      p->add_tile_assignment_dimensions(1);
      p->add_tile_assignment_devices(s.device);
      break;
    case Sharding::Type::kTuple:
      p->set_type(xla::OpSharding::TUPLE);
      for (const auto& e : s.tuple) WriteSharding(e, p->add_tuple_shardings());
      return;
    case Sharding::Type::kTiled:
      p->set_type(xla::OpSharding::OTHER);
      for (int64_t d : s.tile_dims) p->add_tile_assignment_dimensions(d);
      if (s.iota) {
        for (int64_t d : s.iota_reshape_dims) p->add_iota_reshape_dims(d);
        if (s.iota_transpose_perm.empty())
          for (size_t i = 0; i < s.iota_reshape_dims.size(); ++i) p->add_iota_transpose_perm(static_cast<int32_t>(i));
        for (int64_t d : s.iota_transpose_perm) p->add_iota_transpose_perm(static_cast<int32_t>(d));
      } else {
        for (int64_t d : s.devices) p->add_tile_assignment_devices(d);
      }
      p->set_replicate_on_last_tile_dim(s.last_tile_dim_replicate);
      for (auto t : s.last_tile_dims) {
        switch (t) {
          case Sharding::Type::kManual: p->add_last_tile_dims(xla::OpSharding::MANUAL); break;
          case Sharding::Type::kUnreduced: p->add_last_tile_dims(xla::OpSharding::UNREDUCED); break;
          case Sharding::Type::kMaximal: p->add_last_tile_dims(xla::OpSharding::MAXIMAL); break;
          case Sharding::Type::kUnknown: p->add_last_tile_dims(xla::OpSharding::UNKNOWN); break;
          default: p->add_last_tile_dims(xla::OpSharding::REPLICATED);
        }
      }
      break;
  }
  if (s.shard_group) {
    p->set_is_shard_group(true);
    p->set_shard_group_id(s.shard_group->second);
    p->set_shard_group_type(s.shard_group->first ? xla::OpSharding::AS : xla::OpSharding::LIKE);
  }
  for (const auto& m : s.metadata) WriteMetadata(m, p->add_metadata());
}

// The OpSharding form keeps everything but named shardings and metadata fields the IR keeps as text.
bool ShardingIsExact(const Sharding& s) {
  if (s.type == Sharding::Type::kNamed) return false;
  for (const auto& m : s.metadata)
    if (!m.unknown_fields.empty()) return false;
  for (const auto& e : s.tuple)
    if (!ShardingIsExact(e)) return false;
  return true;
}

Sharding ReadSharding(const xla::OpSharding& p) {
  Sharding s;
  auto type_of = [](int t) {
    switch (t) {
      case xla::OpSharding::MANUAL: return Sharding::Type::kManual;
      case xla::OpSharding::UNKNOWN: return Sharding::Type::kUnknown;
      case xla::OpSharding::UNREDUCED: return Sharding::Type::kUnreduced;
      case xla::OpSharding::MAXIMAL: return Sharding::Type::kMaximal;
      default: return Sharding::Type::kReplicated;
    }
  };
  switch (p.type()) {
    case xla::OpSharding::TUPLE:
      s.type = Sharding::Type::kTuple;
      for (const auto& e : p.tuple_shardings()) s.tuple.push_back(ReadSharding(e));
      return s;
    case xla::OpSharding::MAXIMAL:
      s.type = Sharding::Type::kMaximal;
      s.device = p.tile_assignment_devices_size() ? p.tile_assignment_devices(0) : 0;
      break;
    case xla::OpSharding::OTHER: {
      s.type = Sharding::Type::kTiled;
      s.tile_dims.assign(p.tile_assignment_dimensions().begin(), p.tile_assignment_dimensions().end());
      if (p.iota_reshape_dims_size()) {
        s.iota = true;
        s.iota_reshape_dims.assign(p.iota_reshape_dims().begin(), p.iota_reshape_dims().end());
        bool identity = true;
        for (int i = 0; i < p.iota_transpose_perm_size(); ++i) identity &= p.iota_transpose_perm(i) == i;
        if (!identity) s.iota_transpose_perm.assign(p.iota_transpose_perm().begin(), p.iota_transpose_perm().end());
      } else {
        s.devices.assign(p.tile_assignment_devices().begin(), p.tile_assignment_devices().end());
      }
      s.last_tile_dim_replicate = p.replicate_on_last_tile_dim();
      for (int t : p.last_tile_dims()) s.last_tile_dims.push_back(type_of(t));
      break;
    }
    default: s.type = type_of(p.type());
  }
  if (p.is_shard_group())
    s.shard_group = std::make_pair(p.shard_group_type() == xla::OpSharding::AS, p.shard_group_id());
  for (const auto& m : p.metadata()) s.metadata.push_back(ReadMetadata(m));
  return s;
}

// Writes one value into its proto place; returns whether that place holds it exactly (otherwise the printed
// text is kept too).
struct ValueWriter {
  const Instruction& in;
  xla::HloInstructionProto* root;
  Message* m;  // holder of the leaf field
  const FieldDescriptor* fd;

  Expected<bool> operator()(AttrKindTag<AttrKind::kInt>, int64_t v) const {
    SetInt(m, fd, v);
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kInt32>, int32_t v) const {
    SetInt(m, fd, v);
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kOptInt>, const std::optional<int64_t>& v) const {
    if (v) SetInt(m, fd, *v);
    return !v || *v != 0;  // proto3 cannot tell an explicit 0 from none
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kBool>, bool v) const {
    m->GetReflection()->SetBool(m, fd, v);
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kFloat>, float v) const {
    m->GetReflection()->SetFloat(m, fd, v);
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kString>, const std::string& v) const {
    m->GetReflection()->SetString(m, fd, v);
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kStringOrJson>, const std::string& v) const {
    m->GetReflection()->SetString(m, fd, v);
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kWord>, const std::string&) const {
    return false;  // WriteAttributes writes words itself (it needs the field's word table)
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kIntList>, const std::vector<int64_t>& v) const {
    for (int64_t x : v) SetInt(m, fd, x);
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kIntListList>, const std::vector<std::vector<int64_t>>& v) const {
    for (const auto& pair : v) {  // source_target_pairs
      if (pair.size() != 2) return false;
      auto* st = As<xla::SourceTarget>(m->GetReflection()->AddMessage(m, fd));
      st->set_source(pair[0]);
      st->set_target(pair[1]);
    }
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kBoolList>, const std::vector<bool>& v) const {
    for (bool b : v) m->GetReflection()->AddBool(m, fd, b);
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kNameList>, const std::vector<std::string>&) const {
    return true;  // control predecessors: written by the caller, which knows the ids
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kText>, const std::string&) const { return false; }
  Expected<bool> operator()(AttrKindTag<AttrKind::kWindow>, const support::HeapOptional<Window>& v) const {
    if (!v) return true;
    auto* w = As<xla::Window>(m->GetReflection()->MutableMessage(m, fd));
    for (const auto& d : v->dimensions) {
      auto* x = w->add_dimensions();
      x->set_size(d.size);
      x->set_stride(d.stride);
      x->set_padding_low(d.padding_low);
      x->set_padding_high(d.padding_high);
      x->set_window_dilation(d.window_dilation);
      x->set_base_dilation(d.base_dilation);
      x->set_window_reversal(d.window_reversal);
    }
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kConvDims>,
                            const support::HeapOptional<ConvolutionDimensionNumbers>& v) const {
    if (!v) return true;
    const auto& d = *v;
    auto* c = As<xla::ConvolutionDimensionNumbers>(m->GetReflection()->MutableMessage(m, fd));
    c->set_input_batch_dimension(d.input_batch_dimension);
    c->set_input_feature_dimension(d.input_feature_dimension);
    for (int64_t x : d.input_spatial_dimensions) c->add_input_spatial_dimensions(x);
    c->set_kernel_input_feature_dimension(d.kernel_input_feature_dimension);
    c->set_kernel_output_feature_dimension(d.kernel_output_feature_dimension);
    for (int64_t x : d.kernel_spatial_dimensions) c->add_kernel_spatial_dimensions(x);
    c->set_output_batch_dimension(d.output_batch_dimension);
    c->set_output_feature_dimension(d.output_feature_dimension);
    for (int64_t x : d.output_spatial_dimensions) c->add_output_spatial_dimensions(x);
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kSlice>, const support::HeapOptional<SliceDimensions>& v) const {
    if (!v) return true;
    const auto& s = *v;
    if (s.limits.size() != s.starts.size() || s.strides.size() != s.starts.size())
      return InvalidInput(fmt::format("instruction {}: malformed slice", in.name));
    for (size_t i = 0; i < s.starts.size(); ++i) {
      auto* d = As<xla::HloInstructionProto::SliceDimensions>(m->GetReflection()->AddMessage(m, fd));
      d->set_start(s.starts[i]);
      d->set_limit(s.limits[i]);
      d->set_stride(s.strides[i]);
    }
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kPadding>, const support::HeapOptional<PaddingConfig>& v) const {
    if (!v) return true;
    auto* c = As<xla::PaddingConfig>(m->GetReflection()->MutableMessage(m, fd));
    for (const auto& d : v->dimensions) {
      auto* x = c->add_dimensions();
      x->set_edge_padding_low(d.edge_padding_low);
      x->set_edge_padding_high(d.edge_padding_high);
      x->set_interior_padding(d.interior_padding);
    }
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kDirection>, ComparisonDirection v) const {
    m->GetReflection()->SetString(m, fd, std::string(ComparisonDirectionName(v)));
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kFftType>, FftType v) const {
    m->GetReflection()->SetEnumValue(m, fd, static_cast<int>(v));
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kDistribution>, RandomDistribution v) const {
    m->GetReflection()->SetEnumValue(m, fd, static_cast<int>(v));
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kTransposeA>, TransposeA v) const {
    m->GetReflection()->SetEnumValue(m, fd, static_cast<int>(v));
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kPrecisionList>, const std::vector<PrecisionLevel>& v) const {
    for (auto p : v) m->GetReflection()->AddEnumValue(m, fd, static_cast<int>(p));
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kMetadata>, const support::SharedValue<OpMetadata>& v) const {
    if (v->empty()) return true;
    WriteMetadata(*v, As<xla::OpMetadata>(m->GetReflection()->MutableMessage(m, fd)));
    return v->unknown_fields.empty();
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kSharding>, const support::HeapOptional<Sharding>& v) const {
    if (!v) return true;
    WriteSharding(*v, As<xla::OpSharding>(m->GetReflection()->MutableMessage(m, fd)));
    return ShardingIsExact(*v);
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kFrontendAttributes>,
                            const std::vector<std::pair<std::string, std::string>>& v) const {
    if (v.empty()) return true;
    auto* map = As<xla::FrontendAttributes>(m->GetReflection()->MutableMessage(m, fd))->mutable_map();
    bool sorted = true;
    for (size_t i = 0; i < v.size(); ++i) {
      (*map)[v[i].first] = v[i].second;
      if (i && !(v[i - 1].first < v[i].first)) sorted = false;
    }
    return sorted;  // a proto map reads back sorted
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kReplicaGroups>, const CollectiveDeviceList& v) const {
    if (!v.mesh.empty()) return false;
    if (v.iota) {
      auto* iota = root->mutable_collective_device_list()->mutable_iota_replica_group_list();
      iota->set_num_replica_groups(v.num_groups);
      iota->set_num_devices_per_group(v.group_size);
      for (int64_t d : v.iota_reshape_dims) iota->add_iota_reshape_dims(d);
      if (v.iota_transpose_perm.empty())
        for (size_t i = 0; i < v.iota_reshape_dims.size(); ++i) iota->add_iota_transpose_perm(static_cast<int32_t>(i));
      for (int64_t d : v.iota_transpose_perm) iota->add_iota_transpose_perm(static_cast<int32_t>(d));
      // Older XLAs read only the explicit groups: write them out too when the list is small.
      __int128 total = static_cast<__int128>(v.num_groups) * v.group_size;
      if (v.num_groups > 0 && v.group_size > 0 && total <= 65536) {
        std::vector<int64_t> ids(static_cast<size_t>(total));
        std::iota(ids.begin(), ids.end(), 0);
        // Reshape to iota_reshape_dims, transpose by the permutation, flatten.
        std::vector<int64_t> dims = v.iota_reshape_dims, perm = v.iota_transpose_perm;
        if (perm.empty())
          for (size_t i = 0; i < dims.size(); ++i) perm.push_back(static_cast<int64_t>(i));
        __int128 prod = 1;
        for (int64_t d : dims) prod *= d;
        if (prod == total && perm.size() == dims.size()) {
          std::vector<int64_t> tdims;
          tdims.reserve(perm.size());
          for (int64_t p : perm) tdims.push_back(dims[static_cast<size_t>(p)]);
          std::vector<int64_t> out(ids.size());
          std::vector<int64_t> idx(dims.size(), 0);
          for (size_t lin = 0; lin < out.size(); ++lin) {
            // idx walks the transposed array in row-major order; the source index permutes it back.
            int64_t src = 0;
            std::vector<int64_t> sidx(dims.size());
            for (size_t k = 0; k < perm.size(); ++k) sidx[static_cast<size_t>(perm[k])] = idx[k];
            for (size_t k = 0; k < dims.size(); ++k) src = src * dims[k] + sidx[k];
            out[lin] = ids[static_cast<size_t>(src)];
            for (size_t k = tdims.size(); k-- > 0;) {
              if (++idx[k] < tdims[k]) break;
              idx[k] = 0;
            }
          }
          for (int64_t g = 0; g < v.num_groups; ++g) {
            auto* group = root->add_replica_groups();
            for (int64_t j = 0; j < v.group_size; ++j)
              group->add_replica_ids(out[static_cast<size_t>(g * v.group_size + j)]);
          }
        }
      }
      return true;
    }
    for (const auto& g : v.groups) {
      auto* group = root->add_replica_groups();
      for (int64_t id : g) group->add_replica_ids(id);
    }
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kAliasing>, const std::vector<OutputOperandAlias>& v) const {
    for (const auto& a : v) {
      auto* x = As<xla::OutputOperandAliasing>(m->GetReflection()->AddMessage(m, fd));
      for (int64_t i : a.output_index) x->add_output_shape_index(i);
      x->set_operand_index(a.operand);
      for (int64_t i : a.operand_shape_index) x->add_operand_shape_index(i);
    }
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kShape>, const support::HeapOptional<Shape>& v) const {
    if (!v) return true;
    OPPROBE_RETURN_IF_ERROR(WriteShape(*v, As<xla::ShapeProto>(m->GetReflection()->MutableMessage(m, fd))));
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kShapeList>,
                            const support::HeapOptional<std::vector<Shape>>& v) const {
    if (!v) return true;
    root->set_constrain_layout(true);  // XLA's layout-constrained custom call
    for (const auto& s : *v)
      OPPROBE_RETURN_IF_ERROR(WriteShape(s, As<xla::ShapeProto>(m->GetReflection()->AddMessage(m, fd))));
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kLiteral>, const support::HeapOptional<Literal>& v) const {
    if (!v) return true;
    OPPROBE_RETURN_IF_ERROR(WriteLiteral(*v, As<xla::LiteralProto>(m->GetReflection()->MutableMessage(m, fd))));
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kResultAccuracy>,
                            const support::HeapOptional<ResultAccuracy>& v) const {
    if (!v) return true;
    auto* r = As<xla::ResultAccuracy>(m->GetReflection()->MutableMessage(m, fd));
    if (v->has_tolerance) {
      r->mutable_tolerance()->set_atol(v->atol);
      r->mutable_tolerance()->set_rtol(v->rtol);
      r->mutable_tolerance()->set_ulps(v->ulps);
    } else {
      r->set_mode(v->highest ? xla::ResultAccuracy::HIGHEST : xla::ResultAccuracy::DEFAULT);
    }
    return true;
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kComputation>, const std::vector<Computation*>&) const {
    return true;  // called_computation_ids: written by the caller
  }
  Expected<bool> operator()(AttrKindTag<AttrKind::kComputationList>, const std::vector<Computation*>&) const {
    return true;
  }
};

// Reads one value from its proto place (when the proto has it) into the field.
struct ValueReader {
  const xla::HloInstructionProto& root;
  const Message* m;  // holder of the leaf field; null when a message on the way is absent
  const FieldDescriptor* fd;
  const AttrSpec& spec;

  bool Has() const {
    if (!m) return false;
    if (fd->is_repeated()) return m->GetReflection()->FieldSize(*m, fd) > 0;
    if (fd->message_type() || fd->containing_oneof()) return m->GetReflection()->HasField(*m, fd);
    return true;
  }
  int Size() const { return m ? m->GetReflection()->FieldSize(*m, fd) : 0; }
  const Message& Sub() const { return m->GetReflection()->GetMessage(*m, fd); }

  Status operator()(AttrKindTag<AttrKind::kInt>, int64_t& v) const {
    if (!m) return Status::Ok();
    int64_t x = GetInt(*m, fd);
    if (x != 0) v = x;  // proto3's 0 is "unset": the IR default stays (feature_group_count=1)
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kInt32>, int32_t& v) const {
    if (m) v = static_cast<int32_t>(GetInt(*m, fd));
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kOptInt>, std::optional<int64_t>& v) const {
    if (!m) return Status::Ok();
    if (m->GetReflection()->HasField(*m, fd) && (fd->containing_oneof() || GetInt(*m, fd) > 0)) v = GetInt(*m, fd);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kBool>, bool& v) const {
    if (m) v = m->GetReflection()->GetBool(*m, fd);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kFloat>, float& v) const {
    if (m) v = m->GetReflection()->GetFloat(*m, fd);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kString>, std::string& v) const {
    if (m) v = m->GetReflection()->GetString(*m, fd);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kStringOrJson>, std::string& v) const {
    if (m) v = m->GetReflection()->GetString(*m, fd);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kWord>, std::string& v) const {
    if (!m) return Status::Ok();
    if (fd->cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {
      v = EnumToWord(spec.field, m->GetReflection()->GetEnumValue(*m, fd));
    } else {
      std::string s = m->GetReflection()->GetString(*m, fd);
      if (!s.empty()) v = std::move(s);
    }
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kIntList>, std::vector<int64_t>& v) const {
    v.clear();
    for (int i = 0; i < Size(); ++i)
      v.push_back(fd->cpp_type() == FieldDescriptor::CPPTYPE_INT32 ? m->GetReflection()->GetRepeatedInt32(*m, fd, i)
                                                                   : m->GetReflection()->GetRepeatedInt64(*m, fd, i));
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kIntListList>, std::vector<std::vector<int64_t>>& v) const {
    v.clear();
    for (int i = 0; i < Size(); ++i) {
      const auto& st = As<xla::SourceTarget>(m->GetReflection()->GetRepeatedMessage(*m, fd, i));
      v.push_back({st.source(), st.target()});
    }
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kBoolList>, std::vector<bool>& v) const {
    v.clear();
    for (int i = 0; i < Size(); ++i) v.push_back(m->GetReflection()->GetRepeatedBool(*m, fd, i));
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kNameList>, std::vector<std::string>&) const { return Status::Ok(); }
  Status operator()(AttrKindTag<AttrKind::kText>, std::string&) const { return Status::Ok(); }
  Status operator()(AttrKindTag<AttrKind::kWindow>, support::HeapOptional<Window>& v) const {
    if (!Has()) return Status::Ok();
    Window w;
    for (const auto& d : As<xla::Window>(Sub()).dimensions()) {
      WindowDimension wd;
      wd.size = d.size();
      wd.stride = d.stride();
      wd.padding_low = d.padding_low();
      wd.padding_high = d.padding_high();
      wd.window_dilation = d.window_dilation() ? d.window_dilation() : 1;
      wd.base_dilation = d.base_dilation() ? d.base_dilation() : 1;
      wd.window_reversal = d.window_reversal();
      w.dimensions.push_back(wd);
    }
    v = std::move(w);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kConvDims>, support::HeapOptional<ConvolutionDimensionNumbers>& v) const {
    if (!Has()) return Status::Ok();
    const auto& c = As<xla::ConvolutionDimensionNumbers>(Sub());
    ConvolutionDimensionNumbers d;
    d.input_batch_dimension = c.input_batch_dimension();
    d.input_feature_dimension = c.input_feature_dimension();
    d.input_spatial_dimensions.assign(c.input_spatial_dimensions().begin(), c.input_spatial_dimensions().end());
    d.kernel_input_feature_dimension = c.kernel_input_feature_dimension();
    d.kernel_output_feature_dimension = c.kernel_output_feature_dimension();
    d.kernel_spatial_dimensions.assign(c.kernel_spatial_dimensions().begin(), c.kernel_spatial_dimensions().end());
    d.output_batch_dimension = c.output_batch_dimension();
    d.output_feature_dimension = c.output_feature_dimension();
    d.output_spatial_dimensions.assign(c.output_spatial_dimensions().begin(), c.output_spatial_dimensions().end());
    v = std::move(d);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kSlice>, support::HeapOptional<SliceDimensions>& v) const {
    SliceDimensions s;
    for (int i = 0; i < Size(); ++i) {
      const auto& d = As<xla::HloInstructionProto::SliceDimensions>(m->GetReflection()->GetRepeatedMessage(*m, fd, i));
      s.starts.push_back(d.start());
      s.limits.push_back(d.limit());
      s.strides.push_back(d.stride() ? d.stride() : 1);
    }
    if (Size() || spec.need == AttrNeed::kRequired) v = std::move(s);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kPadding>, support::HeapOptional<PaddingConfig>& v) const {
    if (!Has()) return Status::Ok();
    PaddingConfig c;
    for (const auto& d : As<xla::PaddingConfig>(Sub()).dimensions())
      c.dimensions.push_back({d.edge_padding_low(), d.edge_padding_high(), d.interior_padding()});
    v = std::move(c);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kDirection>, ComparisonDirection& v) const {
    if (!m) return Status::Ok();
    const std::string s = m->GetReflection()->GetString(*m, fd);
    auto d = ComparisonDirectionFromName(s);
    if (!d) return InvalidInput(fmt::format("unknown comparison_direction {}", support::Quote(s)));
    v = *d;
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kFftType>, FftType& v) const {
    if (!m) return Status::Ok();
    int x = m->GetReflection()->GetEnumValue(*m, fd);
    if (x < 0 || x > 3) return InvalidInput("unknown fft_type");
    v = static_cast<FftType>(x);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kDistribution>, RandomDistribution& v) const {
    if (!m) return Status::Ok();
    int x = m->GetReflection()->GetEnumValue(*m, fd);
    if (x < 0 || x > 2) return InvalidInput("unknown distribution");
    v = static_cast<RandomDistribution>(x);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kTransposeA>, TransposeA& v) const {
    if (!m) return Status::Ok();
    int x = m->GetReflection()->GetEnumValue(*m, fd);
    // XLA treats an unset (0, TRANSPOSE_INVALID) as an error; it reads as NO_TRANSPOSE here.
    if (x < 0 || x > 3) return InvalidInput("unknown triangular_solve_options.transpose_a");
    v = x == 0 ? TransposeA::kNoTranspose : static_cast<TransposeA>(x);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kPrecisionList>, std::vector<PrecisionLevel>& v) const {
    v.clear();
    for (int i = 0; i < Size(); ++i) {
      int x = m->GetReflection()->GetRepeatedEnumValue(*m, fd, i);
      if (x < 0 || x > 3) {  // a precision this IR does not know: none
        v.clear();
        break;
      }
      v.push_back(static_cast<PrecisionLevel>(x));
    }
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kMetadata>, support::SharedValue<OpMetadata>& v) const {
    if (Has()) v = ReadMetadata(As<xla::OpMetadata>(Sub()));
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kSharding>, support::HeapOptional<Sharding>& v) const {
    if (Has()) v = ReadSharding(As<xla::OpSharding>(Sub()));
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kFrontendAttributes>,
                    std::vector<std::pair<std::string, std::string>>& v) const {
    if (!Has()) return Status::Ok();
    const auto& map = As<xla::FrontendAttributes>(Sub()).map();
    std::map<std::string, std::string> sorted(map.begin(), map.end());
    v.assign(sorted.begin(), sorted.end());
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kReplicaGroups>, CollectiveDeviceList& v) const {
    CollectiveDeviceList g;
    if (root.has_collective_device_list() && root.collective_device_list().has_iota_replica_group_list()) {
      const auto& iota = root.collective_device_list().iota_replica_group_list();
      g.iota = true;
      g.num_groups = iota.num_replica_groups();
      g.group_size = iota.num_devices_per_group();
      g.iota_reshape_dims.assign(iota.iota_reshape_dims().begin(), iota.iota_reshape_dims().end());
      bool identity = true;
      for (int i = 0; i < iota.iota_transpose_perm_size(); ++i) identity &= iota.iota_transpose_perm(i) == i;
      if (!identity) g.iota_transpose_perm.assign(iota.iota_transpose_perm().begin(), iota.iota_transpose_perm().end());
    } else {
      const auto& groups = root.has_collective_device_list() && root.collective_device_list().replica_groups_size()
                               ? root.collective_device_list().replica_groups()
                               : root.replica_groups();
      for (const auto& group : groups) g.groups.emplace_back(group.replica_ids().begin(), group.replica_ids().end());
    }
    v = std::move(g);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kAliasing>, std::vector<OutputOperandAlias>& v) const {
    v.clear();
    for (int i = 0; i < Size(); ++i) {
      const auto& a = As<xla::OutputOperandAliasing>(m->GetReflection()->GetRepeatedMessage(*m, fd, i));
      v.push_back({{a.output_shape_index().begin(), a.output_shape_index().end()},
                   a.operand_index(),
                   {a.operand_shape_index().begin(), a.operand_shape_index().end()}});
    }
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kShape>, support::HeapOptional<Shape>& v) const {
    if (!Has()) return Status::Ok();
    OPPROBE_ASSIGN_OR_RETURN(Shape s, ReadShape(As<xla::ShapeProto>(Sub())));
    v = std::move(s);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kShapeList>, support::HeapOptional<std::vector<Shape>>& v) const {
    if (!root.constrain_layout() && Size() == 0) return Status::Ok();
    std::vector<Shape> shapes;
    for (int i = 0; i < Size(); ++i) {
      OPPROBE_ASSIGN_OR_RETURN(Shape s,
                               ReadShape(As<xla::ShapeProto>(m->GetReflection()->GetRepeatedMessage(*m, fd, i))));
      shapes.push_back(std::move(s));
    }
    v = std::move(shapes);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kLiteral>, support::HeapOptional<Literal>& v) const {
    if (!Has()) return Status::Ok();
    OPPROBE_ASSIGN_OR_RETURN(Literal l, ReadLiteral(As<xla::LiteralProto>(Sub()), Shape()));
    v = std::move(l);
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kResultAccuracy>, support::HeapOptional<ResultAccuracy>& v) const {
    if (!Has()) return Status::Ok();
    const auto& r = As<xla::ResultAccuracy>(Sub());
    ResultAccuracy out;
    if (r.has_tolerance()) {
      out.has_tolerance = true;
      out.atol = r.tolerance().atol();
      out.rtol = r.tolerance().rtol();
      out.ulps = r.tolerance().ulps();
    } else {
      out.highest = r.mode() == xla::ResultAccuracy::HIGHEST;
    }
    v = out;
    return Status::Ok();
  }
  Status operator()(AttrKindTag<AttrKind::kComputation>, std::vector<Computation*>&) const { return Status::Ok(); }
  Status operator()(AttrKindTag<AttrKind::kComputationList>, std::vector<Computation*>&) const { return Status::Ok(); }
};

// The specs an instruction's attributes follow: its opcode's (known opcodes), then the generic ones.
template <typename Fn>
Status ForEachSpec(const Instruction& in, Fn fn) {
  if (in.unknown_opcode.empty())
    for (const AttrSpec& s : OpcodeAttributes(in.opcode)) OPPROBE_RETURN_IF_ERROR(fn(s));
  for (const AttrSpec& s : GenericAttributes()) OPPROBE_RETURN_IF_ERROR(fn(s));
  return Status::Ok();
}

bool IsComputation(const AttrSpec& s) {
  return s.kind() == AttrKind::kComputation || s.kind() == AttrKind::kComputationList;
}

}  // namespace

Status WriteAttributes(const Instruction& in, xla::HloInstructionProto* p) {
  auto text = [&](std::string_view key, const std::string& value) {
    auto* t = p->add_opprobe_text_attributes();
    t->set_key(std::string(key));
    t->set_value(value);
  };
  OPPROBE_RETURN_IF_ERROR(ForEachSpec(in, [&](const AttrSpec& spec) -> Status {
    if (IsComputation(spec) || spec.print == AttrPrint::kNever) return Status::Ok();
    const bool set = IsSet(spec.field, in);
    const ProtoPath& path = PathOf(spec.field);
    if (path.empty()) {  // XLA has no field for it
      if (set) text(spec.key, AttributeValueToString(in, spec));
      return Status::Ok();
    }
    // Enum words are written even when empty: their empty word stands for a value (API_VERSION_ORIGINAL).
    if (!set && spec.need != AttrNeed::kRequired && spec.print != AttrPrint::kAlways && spec.kind() != AttrKind::kWord)
      return Status::Ok();
    Message* holder = MutableHolder(p, path);
    bool exact = true;
    if (spec.kind() == AttrKind::kWord) {
      const std::string& word = *VisitField(spec.field, in, [](auto, const auto& v) -> const std::string* {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) {
          return &v;
        } else {
          static const std::string kNone;
          return &kNone;
        }
      });
      if (path.leaf()->cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {
        auto value = WordToEnum(spec.field, word);
        if (value) holder->GetReflection()->SetEnumValue(holder, path.leaf(), *value);
        exact = value.has_value();
      } else {
        holder->GetReflection()->SetString(holder, path.leaf(), word);
      }
    } else {
      auto r = VisitField(spec.field, in, ValueWriter{in, p, holder, path.leaf()});
      if (!r.ok()) return r.status();
      exact = *r;
    }
    if (set && !exact) text(spec.key, AttributeValueToString(in, spec));
    return Status::Ok();
  }));
  for (const auto& [k, v] : in.rare().unknown_attributes) text(k, v);
  return Status::Ok();
}

Status ReadAttributes(const xla::HloInstructionProto& p, Instruction& in, const std::string& where) {
  OPPROBE_RETURN_IF_ERROR(ForEachSpec(in, [&](const AttrSpec& spec) -> Status {
    if (IsComputation(spec) || spec.print == AttrPrint::kNever) return Status::Ok();
    const ProtoPath& path = PathOf(spec.field);
    if (!path.empty()) {
      const Message* holder = Holder(p, path);
      OPPROBE_RETURN_IF_ERROR(VisitField(spec.field, in, ValueReader{p, holder, path.leaf(), spec}));
    }
    if (spec.need == AttrNeed::kDefaulted && spec.field == AttrField::kWindow && !in.window) in.window.emplace();
    return Status::Ok();
  }));
  // Text opprobe wrote: attributes XLA's proto has no (exact) form for, and unknown ones.
  for (const auto& t : p.opprobe_text_attributes()) {
    if (FindAttribute(in, t.key())) {
      OPPROBE_RETURN_IF_ERROR(ParseAttributeValue(in, t.key(), t.value(), where));
    } else {
      in.mutable_rare().unknown_attributes.emplace_back(t.key(), t.value());
    }
  }
  in.ReleaseRareIfUnset();  // the walk above made them for every field it read
  return Status::Ok();
}

}  // namespace opprobe::hlo::proto_internal
