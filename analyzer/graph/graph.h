// analyzer::Graph: the aten-level model every loader produces and every lowering consumes.
#pragma once

#include <complex>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hlo/types.h"

namespace opprobe::analyzer {

// A tensor's dtype and sizes. Symbolic sizes carry their hint in `sizes` and are flagged dynamic.
struct TensorMeta {
  hlo::PrimitiveType dtype = hlo::PrimitiveType::F32;
  std::vector<int64_t> sizes;
  std::vector<bool> dynamic;  // empty, or one flag per size (true: a SymInt; sizes holds its hint)
  // The torch dtype when XLA has no element type for it (`qint8`, `quint4x2`, `complex32`, `bits8`, ...): `dtype`
  // then holds its storage type (s8, u8, c64, ...) and no lowering treats the tensor as that type. Empty otherwise.
  std::string torch_dtype;
  bool is_dynamic() const;
  int64_t numel() const;
  int rank() const { return static_cast<int>(sizes.size()); }
  // `f32[4,3]` (`f32[<=4,3]` when the first size is symbolic).
  std::string ToString() const;
  void AppendTo(std::string& out) const;  // ToString() added to `out`
  bool operator==(const TensorMeta&) const = default;
};

// One argument value of an aten call, as its schema types it.
struct Value {
  enum class Kind {
    kNone,
    kTensor,
    kTensorList,  // entries may be None (optional tensor lists, e.g. index.Tensor)
    kBool,
    kInt,
    kFloat,
    kComplex,
    kString,
    kIntList,
    kFloatList,
    kBoolList,
    kDtype,  // torch.dtype as an XLA element type
    kDevice,
    kLayout,
    kMemoryFormat,
  };
  Kind kind = Kind::kNone;
  TensorMeta tensor;                               // kTensor
  std::vector<std::optional<TensorMeta>> tensors;  // kTensorList
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::complex<double> c;
  std::string s;  // kString, kDevice, kLayout, kMemoryFormat
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<bool> bools;
  hlo::PrimitiveType dtype =
      hlo::PrimitiveType::PRIMITIVE_TYPE_INVALID;  // kDtype; `s` names a torch dtype
                                                   // without an XLA type (TensorMeta::torch_dtype)
  bool symbolic = false;                           // an int (or int list) that came from a SymInt without a hint

  static Value None() { return {}; }
  static Value Tensor(TensorMeta m);
  static Value Int(int64_t v);
  static Value Float(double v);
  static Value Bool(bool v);
  static Value IntList(std::vector<int64_t> v);
  static Value Dtype(hlo::PrimitiveType t);
  static Value String(std::string v);

  bool is_none() const { return kind == Kind::kNone; }
  bool is_tensor() const { return kind == Kind::kTensor; }
  // Number-like access: a Bool, Int or Float as double; 0 otherwise.
  double AsDouble() const;
  // A short canonical text used for signatures and dedup keys: `f32[4]`, `10`, `[1,2]`, `None`.
  std::string ToString() const;
  void AppendTo(std::string& out) const;  // ToString() added to `out` (without a string of its own for the usual kinds)
  bool operator==(const Value&) const = default;
};

// A vector whose copies share one storage until one of them is changed (copy on write): the calls of a large trace
// with the same arguments hold them once. It reads as a const std::vector<T>; any non-const member (operator[],
// begin, push_back, ...) first gives this copy a storage of its own.
template <typename T>
class SharedVector {
 public:
  using value_type = T;
  using const_iterator = typename std::vector<T>::const_iterator;
  using iterator = typename std::vector<T>::iterator;

  SharedVector() = default;
  SharedVector(std::vector<T> v)  // NOLINT(implicit): assigned from vectors where a vector was before
      : p_(v.empty() ? nullptr : std::make_shared<std::vector<T>>(std::move(v))) {}
  SharedVector(std::initializer_list<T> l) : SharedVector(std::vector<T>(l)) {}
  SharedVector& operator=(std::vector<T> v) { return *this = SharedVector(std::move(v)); }
  SharedVector& operator=(std::initializer_list<T> l) { return *this = SharedVector(std::vector<T>(l)); }

  const std::vector<T>& get() const { return p_ ? *p_ : Empty(); }
  operator const std::vector<T>&() const { return get(); }  // NOLINT(implicit)
  size_t size() const { return get().size(); }
  bool empty() const { return get().empty(); }
  const T& operator[](size_t i) const { return get()[i]; }
  const T& front() const { return get().front(); }
  const T& back() const { return get().back(); }
  const_iterator begin() const { return get().begin(); }
  const_iterator end() const { return get().end(); }

  // This copy's own vector, to change.
  std::vector<T>& mutable_get() {
    if (!p_) p_ = std::make_shared<std::vector<T>>();
    else if (p_.use_count() > 1) p_ = std::make_shared<std::vector<T>>(*p_);
    return *p_;
  }
  T& operator[](size_t i) { return mutable_get()[i]; }
  T& front() { return mutable_get().front(); }
  T& back() { return mutable_get().back(); }
  iterator begin() { return mutable_get().begin(); }
  iterator end() { return mutable_get().end(); }
  void push_back(const T& v) { mutable_get().push_back(v); }
  void push_back(T&& v) { mutable_get().push_back(std::move(v)); }
  template <typename... A>
  T& emplace_back(A&&... a) {
    return mutable_get().emplace_back(std::forward<A>(a)...);
  }
  void resize(size_t n) { mutable_get().resize(n); }
  void reserve(size_t n) { mutable_get().reserve(n); }
  void clear() { p_.reset(); }

  // The shared storage (nullptr when empty): two vectors with the same one hold the same elements.
  const void* storage() const { return p_.get(); }

  friend bool operator==(const SharedVector& a, const SharedVector& b) { return a.get() == b.get(); }

 private:
  static const std::vector<T>& Empty() {
    static const std::vector<T> empty;
    return empty;
  }
  std::shared_ptr<std::vector<T>> p_;
};

struct Argument {
  std::string name;  // schema argument name (`self`, `other`, `alpha`); may be empty for positional-only traces
  Value value;
  bool operator==(const Argument&) const = default;
};

struct SourceLoc {
  std::string file;  // as recorded (a path); reports show its base name
  int line = 0;
  bool empty() const { return file.empty() && line == 0; }
  // Neuron's `call` form: `unsupported.py 24`.
  std::string ToString() const;
  bool operator==(const SourceLoc&) const = default;
};

// Traces: the forward call whose autograd node made a backward call, as the capture recorded it when it was made.
struct ForwardCall {
  std::string op;  // `aten::convolution`, `aten::mul.Tensor` (the default overload left out); empty: none known
  SourceLoc loc;
  SourceLoc lib_loc;
  std::string module_path;
  bool empty() const { return op.empty(); }
  bool operator==(const ForwardCall&) const = default;
};

struct Node {
  std::string op;               // `aten::convolution`
  std::string overload;         // `default`, `Tensor`, `Scalar`, ...
  SharedVector<Argument> args;  // shared between calls with the same arguments (a trace loader reads them once)
  SharedVector<Value> outputs;
  SourceLoc loc;
  std::string module_path;  // `layer1.0.conv1`
  std::string phase;        // `forward`, `backward`, `optimizer`, or empty
  std::string program;      // which program of a multi-program input (pt2 method, HLO module)
  int64_t count = 1;        // identical calls merged into this node
  int64_t step = 0;         // traces: the step (between step boundaries such as xm.mark_step) of the first call
  SourceLoc lib_loc;        // traces: the innermost library frame (site-packages, stdlib) inside `loc`, if any
  ForwardCall forward;      // traces: for a backward call, the forward call that made its autograd node, if known
  bool dynamic_shape = false;
  std::string note;  // e.g. why the node is dynamic-shape

  // `aten::add.Tensor`, or `aten::relu` for the default overload.
  std::string qualified_name() const;
  // Argument by schema name, else by position; nullptr when absent.
  const Value* arg(const std::string& name, size_t position) const;
  // What makes two calls identical for lowering: op, overload, args (not place or count). With `tensor_signature`,
  // TensorSignature() is also written there (from the same text, not formatted twice).
  std::string SignatureKey(std::string* tensor_signature = nullptr) const;
  // dtype/shape signature shown in reports: `f32[4], c64[4]`.
  std::string TensorSignature() const;
};

// How a captured script ended, as the capture shim recorded it (trace `capture` object). A script that raised or
// exited non-zero gives a partial graph: every report marks it so.
struct CaptureStatus {
  enum class Status { kOk, kFailed };
  Status status = Status::kOk;
  int exit_code = 0;
  std::string exception_type;     // `RuntimeError`; empty when the script exited non-zero without raising
  std::string exception_message;  // first line of the exception's message
  SourceLoc location;             // innermost frame in the user's own files where it was raised
  bool failed() const { return status == Status::kFailed; }
  // How a failed script ended, as every report and message says it: `failed at train.py:41 (RuntimeError: boom)`, or
  // `failed with exit status 3`.
  std::string Failure() const;
  bool operator==(const CaptureStatus&) const = default;
};

// The graphs torch_xla would compile and run for a captured script (the trace's `graphs`, from the capture's model of
// torch_xla's lazy tensors, capture/opprobe_capture/steps.py): how many steps, how many graphs ran and how many
// distinct ones (each compiled once), why each new graph after the first differs from the closest earlier one, and the
// cuts inside steps (value reads on the host, CPU fallbacks) with the graphs each adds.
struct StepGraphs {
  struct Recompilation {
    int64_t step = 0;          // the step (0-based) that first ran the graph
    int64_t graph = 0;         // its number among the distinct graphs
    std::string trigger_kind;  // `step_end`, `value_read`, `cpu_fallback`
    std::string trigger_op;    // `xm.mark_step`, `aten::_local_scalar_dense`, `aten::nonzero`
    SourceLoc trigger_loc;
    std::string op;  // the first call that differs from the closest earlier graph; empty: none
    SourceLoc loc;
    std::string before;  // that call's arguments in the closest graph, and in this one
    std::string after;
    std::string cause;  // in words
    bool operator==(const Recompilation&) const = default;
  };
  struct Cut {
    std::string kind;  // `value_read`, `cpu_fallback`
    std::string op;
    SourceLoc loc;
    int64_t count = 0;         // times it cut a step
    int64_t extra_graphs = 0;  // distinct graphs it made run
    bool operator==(const Cut&) const = default;
  };
  std::string model;  // what decided the graphs: `torch_xla lazy tensor`
  int64_t steps = 0;
  int64_t executed_graphs = 0;
  int64_t distinct_graphs = 0;
  std::vector<Recompilation> recompilations;
  std::vector<Cut> cuts;
  bool operator==(const StepGraphs&) const = default;
};

// The data flow of a captured script's first training step (the trace's `program`, capture/opprobe_capture/program.py):
// its calls in order with the values each reads and makes, and the values the step reads from outside and leaves
// behind. What analyzer/program builds as one HLO program for --fit.
struct StepDataFlow {
  struct Call {
    int64_t node = 0;              // the call's index in the trace's calls (Graph::nodes)
    std::vector<int64_t> inputs;   // value ids, one per tensor argument (and per tensor of a list), in argument order
    std::vector<int64_t> outputs;  // value ids, one per output that is not None; -1: not a tensor (an int)
    bool operator==(const Call&) const = default;
  };
  struct Value {
    int64_t value = 0;
    std::string kind;      // `parameter`, `buffer`, `optimizer_state`, `gradient`, `data` (inputs), `output`
    std::string name;      // `layers.0.mlp.weight`, `layers.0.mlp.weight.exp_avg`; empty when the capture knows none
    int64_t aliases = -1;  // outputs: the input (index into inputs) whose data this output updates in place
    // inputs: how the script itself shards it over `mesh` (xs.mark_sharding): per dimension, the mesh axes that
    // split it (none: not split); empty when the script marked none.
    std::vector<std::vector<int64_t>> sharding;
    bool operator==(const Value&) const = default;
  };
  // The device mesh the script's own shardings use (torch_xla SPMD's xs.Mesh): its shape and its devices in
  // row-major order; empty when it marked none.
  struct Mesh {
    std::vector<int64_t> shape;
    std::vector<int64_t> devices;
    bool operator==(const Mesh&) const = default;
  };
  std::string scope;     // `first training step`
  SourceLoc begin, end;  // its first call, and what ended it
  std::string end_kind;  // `optimizer_step`, `step_boundary`, `second_forward`, `script_end`
  std::vector<Call> calls;
  std::vector<Value> inputs;
  std::vector<Value> outputs;
  int64_t untracked_writes = 0;  // reads of data changed through another view (each such read is a new input)
  Mesh mesh;
  bool operator==(const StepDataFlow&) const = default;
};

struct Graph {
  std::string model;                  // what was analyzed: script or file name
  std::string input_kind;             // `trace`, `pt2`, `hlo`
  std::vector<std::string> programs;  // names of programs/modules in the input, in order
  std::vector<Node> nodes;
  std::string torch_version;             // as recorded by the capture or the archive, when known
  std::optional<CaptureStatus> capture;  // traces only: how the captured script ended
  std::optional<StepGraphs> steps;       // traces of a script that used the XLA device: its graphs
  std::optional<StepDataFlow> program;   // traces captured with --program: the first step's data flow
};

// Receives the nodes of a graph one at a time, in order, as a loader reads them: a large trace is analyzed as it is
// read (analyzer/driver's GraphAnalysis) and never held whole, or its nodes are collected (GraphNodes).
class NodeSink {
 public:
  virtual ~NodeSink() = default;
  virtual void Add(Node&& node) = 0;
};

// Collects the nodes into a Graph.
class GraphNodes final : public NodeSink {
 public:
  explicit GraphNodes(Graph& graph) : graph_(graph) {}
  void Add(Node&& node) override { graph_.nodes.push_back(std::move(node)); }

 private:
  Graph& graph_;
};

// `aten::add.Tensor`, or `aten::relu` for the default (or no) overload.
std::string QualifiedOpName(const std::string& op, const std::string& overload);

// Maps torch dtype names (`float32`, `torch.float32`, `bfloat16`, `bool`, `complex64`, ...) to XLA types. Every
// torch dtype maps: one without an XLA element type (quantized, complex32, bits, sub-byte uints) to its storage
// type, which TorchDtypeWithoutXlaType tells apart.
std::optional<hlo::PrimitiveType> DtypeFromTorchName(std::string_view name);
// The canonical torch name (`qint8`, `complex32`) when `name` is a torch dtype that XLA has no element type for;
// empty for the others (and for unknown names).
std::string TorchDtypeWithoutXlaType(std::string_view name);
// The first tensor (argument or output) or dtype argument of the node whose torch dtype has no XLA element
// type; empty when there is none.
std::string FirstDtypeWithoutXlaType(const Node& node);

}  // namespace opprobe::analyzer
