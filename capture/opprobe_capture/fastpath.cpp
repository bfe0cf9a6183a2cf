// The capture's fast path (see native.py, which builds and loads it): a boxed fallback on the dispatch key
// just above the Python key (DispatchKey::Fake, an out-of-core key no kernel of PyTorch itself uses), switched on
// for the capture's thread through the thread's included dispatch keys. It sees every call the capture's dispatch
// mode would see (below autograd; calls made inside a call are not seen), at the same place.
//
// Per call it builds a key from what the Python recorder's entry depends on: the operator, each argument's and
// output's dtype and sizes or value, the Python call site (the innermost frame of the user's own files, the innermost
// library frame inside it, each by code object and instruction, and the phase an autograd or optimizer frame marks)
// and a context number the recorder keeps up to date (module path, phase). A key seen before only counts its entry; a
// key not seen before is handed to the Python recorder (recorder.py), which stays the one place that encodes a call,
// and says whether the entry may be counted by its key from now on, and which place names the autograd node of the
// call's outputs (the recorder's pending forward link: while this file is loaded the recorder hands every such link
// here, and this file names the node at the next call, for the calls it counts too). Every call it cannot key (a tensor
// subclass, a symbolic size, a Generator, another thread, a frame the recorder marks as deciding the phase, a context
// of -1) goes on to the Python dispatch mode below it, as if this fallback did not exist. On PyTorch 2.9 the detach
// calls that reach the mode without the dispatcher (a shallow copy of a tensor while a mode is entered) are keyed and
// counted the same way, through a wrapper of the Python interpreter's `detach` ("the detach of a dispatch mode").
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/detach_ops.h>
#include <Python.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/python_anomaly_mode.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/library.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR == 9
#include <torch/csrc/PyInterpreter.h>
#endif

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

constexpr c10::DispatchKey kKey = c10::DispatchKey::Fake;
// The bits of the recorder's classification of a code object (classify) that name the phase it marks: 4 autograd's
// backward, 8 an optimizer's step; the low two bits are its kind (0 torch or the shim, 1 a library, 2 the user's).
constexpr int kMarks = 4 | 8;

struct State {
  bool on = false;
  std::thread::id thread;
  long context = -1;             // -1: every call goes to the Python dispatch mode
  PyObject* classify = nullptr;  // classify(code) -> kind | the phase it marks (kMarks), or -1: decides the phase
  PyObject* record = nullptr;    // record(op, overload, args, out) -> entry number, or -1: ask every time
  std::unordered_map<PyObject*, int> kinds;  // code object (a reference held) -> classify's answer
  struct Entry {
    long number;        // the recorder's entry; -1: every such call goes to the recorder
    PyObject* forward;  // a forward call's place, for the autograd node of its outputs (a reference), or null
  };
  std::unordered_map<std::string, Entry> keys;
  std::vector<long long> counts;    // by entry number: calls counted here, not yet added to the recorder's
  PyObject* forward_key = nullptr;  // the key of the forward call's place in an autograd node's metadata
  // The outputs of the last forward call that autograd links to a node, and that call's place: as the recorder's
  // own pending link, the node (made after the call returns) is named at the next call.
  std::vector<c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>> pending;
  PyObject* pending_forward = nullptr;
  std::unordered_set<PyObject*> forwards;  // forward places keyed by identity (a reference held: ids stay unique)
  PyObject* mode = nullptr;  // the capture's dispatch mode (a reference), whose detach calls are keyed here
  std::unique_ptr<c10::OperatorHandle> detach_op;  // aten::detach
};

State* state() {
  static State* s = new State();  // never destroyed: the fallback may run during interpreter shutdown
  return s;
}

// A Python error raised in the recorder's callbacks: an Exception is the recorder's own failure (the call is then
// not keyed); anything else (KeyboardInterrupt, the shim's SIGTERM exception) is raised in the script, as the
// dispatch mode would raise it, once the GIL is released (Rethrow). Needs the GIL.
thread_local std::unique_ptr<python_error> interrupt;

bool ClearError() {
  if (!PyErr_Occurred()) return false;
  if (PyErr_ExceptionMatches(PyExc_Exception) || interrupt) {
    PyErr_Clear();
  } else {
    interrupt = std::make_unique<python_error>();
    interrupt->persist();
  }
  return true;
}

void Rethrow() {
  if (!interrupt) return;
  python_error e(std::move(*interrupt));
  interrupt.reset();
  throw e;
}

template <typename T>
void Put(std::string& k, T v) {
  k.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

// Appends a value's key; false where it has none (the call then goes to the Python path).
bool KeyOf(const c10::IValue& v, std::string& k, bool grad) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) {
      k.push_back('n');
      return true;
    }
    c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    if (impl->key_set().has(c10::DispatchKey::Python)) return false;  // a tensor subclass: its own dispatch
    if (impl->has_symbolic_sizes_strides()) return false;
    // (whether autograd will link the outputs to a node, and so whether the recorder names the node)
    k.push_back(impl->is_wrapped_number() ? 'w' : grad && t.requires_grad() ? 'g' : 't');
    Put<int8_t>(k, static_cast<int8_t>(t.scalar_type()));
    if (impl->is_wrapped_number()) {  // a Python number made a tensor (`x * 2`): the dispatch mode sees the number
      k.append(static_cast<const char*>(impl->data()), static_cast<size_t>(t.element_size()));
      return true;
    }
    auto sizes = t.sizes();
    Put<uint32_t>(k, static_cast<uint32_t>(sizes.size()));
    for (int64_t s : sizes) Put<int64_t>(k, s);
    return true;
  }
  if (v.isNone()) {
    k.push_back('n');
  } else if (v.isBool()) {
    k.push_back(v.toBool() ? 'B' : 'b');
  } else if (v.isInt()) {
    k.push_back('i');
    Put<int64_t>(k, v.toInt());
  } else if (v.isDouble()) {
    k.push_back('d');
    Put<double>(k, v.toDouble());
  } else if (v.isString()) {
    const std::string& s = v.toStringRef();
    k.push_back('s');
    Put<uint32_t>(k, static_cast<uint32_t>(s.size()));
    k.append(s);
  } else if (v.isDevice()) {
    k.push_back('v');
    Put<int16_t>(k, static_cast<int16_t>(v.toDevice().type()));
    Put<int16_t>(k, static_cast<int16_t>(v.toDevice().index()));
  } else if (v.isIntList()) {
    auto l = v.toIntList();
    k.push_back('I');
    Put<uint32_t>(k, static_cast<uint32_t>(l.size()));
    for (int64_t x : l) Put<int64_t>(k, x);
  } else if (v.isDoubleList()) {
    auto l = v.toDoubleList();
    k.push_back('D');
    Put<uint32_t>(k, static_cast<uint32_t>(l.size()));
    for (double x : l) Put<double>(k, x);
  } else if (v.isBoolList()) {
    auto l = v.toBoolList();
    k.push_back('L');
    Put<uint32_t>(k, static_cast<uint32_t>(l.size()));
    for (bool x : l) k.push_back(x ? '1' : '0');
  } else if (v.isTensorList() || v.isList()) {
    auto l = v.isTensorList() ? c10::IValue(v.toTensorList()).toList() : v.toList();
    k.push_back(v.isTensorList() ? 'T' : 'l');
    Put<uint32_t>(k, static_cast<uint32_t>(l.size()));
    for (const c10::IValue& x : l) {
      if (!KeyOf(x, k, grad)) return false;
    }
  } else {
    return false;
  }
  return true;
}

// Appends what the recorder's entry takes from the call site, walking the frames innermost first up to the innermost
// frame of the user's own files (*user: whether there is one): the phase marked by the innermost frame of autograd's
// or an optimizer's code, the innermost library frame and the user's frame (each by its code object and instruction,
// which decide the file and line). Other frames of torch and of libraries change nothing in the entry and are left
// out of the key. False where a frame decides the phase by more than its code, or the stack is deeper than 64 frames.
bool KeyOfSite(State* s, std::string& k, bool* user) {
  *user = false;
  PyFrameObject* f = PyEval_GetFrame();  // borrowed
  Py_XINCREF(f);
  bool ok = true, marked = false, library = false;
  for (int depth = 0; f != nullptr; ++depth) {
    if (depth == 64) {
      ok = false;
      break;
    }
    PyCodeObject* code = PyFrame_GetCode(f);  // new reference
    auto it = s->kinds.find(reinterpret_cast<PyObject*>(code));
    int kind;
    if (it != s->kinds.end()) {
      kind = it->second;
      Py_DECREF(code);
    } else {
      PyObject* r = PyObject_CallOneArg(s->classify, reinterpret_cast<PyObject*>(code));
      kind = r != nullptr ? static_cast<int>(PyLong_AsLong(r)) : -1;
      Py_XDECREF(r);
      if (ClearError()) kind = -1;
      s->kinds.emplace(reinterpret_cast<PyObject*>(code), kind);  // keeps the reference
    }
    if (kind < 0) {
      ok = false;
      break;
    }
    if ((kind & kMarks) != 0 && !marked) {
      k.push_back('M');
      k.push_back(static_cast<char>(kind & kMarks));
      marked = true;
    }
    const int where = kind & 3;
    if (where == 2 || (where == 1 && !library)) {
      k.push_back(where == 2 ? 'U' : 'L');
      Put<const void*>(k, code);
      Put<int32_t>(k, PyFrame_GetLasti(f));
      if (where == 2) {
        *user = true;
        break;
      }
      library = true;
    }
    PyFrameObject* back = PyFrame_GetBack(f);  // new reference
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  return ok;
}

// Names the autograd node of the last linked forward call's outputs with its place, where the node has none yet
// (the recorder's flush_pending). `hidden`: the calls this makes (a view's grad_fn may be remade) are not recorded,
// as when the recorder flushes inside the dispatch mode; the flush before a backward() records them, as the
// recorder's own does there. Needs the GIL.
void FlushPending(State* s, bool hidden = true) {
  std::unique_ptr<c10::impl::ExcludeDispatchKeyGuard> guard;
  if (hidden) {
    guard = std::make_unique<c10::impl::ExcludeDispatchKeyGuard>(
        c10::DispatchKeySet({kKey, c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
  }
  PyObject* forward = s->pending_forward;
  s->pending_forward = nullptr;
  // (taken out first: a call made while a node is named, such as a view's grad_fn remade by a visible flush, may
  // leave a link of its own)
  std::vector<c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>> pending;
  pending.swap(s->pending);
  for (auto& weak : pending) {
    auto strong = weak.lock();
    if (!strong) continue;
    at::Tensor t(std::move(strong));
    std::shared_ptr<torch::autograd::Node> node = t.grad_fn();
    if (!node) continue;
    auto* md = static_cast<torch::autograd::PyAnomalyMetadata*>(node->metadata());
    PyObject* d = md != nullptr ? md->dict() : nullptr;
    if (d != nullptr && PyDict_SetDefault(d, s->forward_key, forward) == nullptr) PyErr_Clear();
  }
  pending.clear();
  if (s->pending.empty()) s->pending.swap(pending);  // (keeps the vector's room)
  Py_XDECREF(forward);
}

void SetPending(State* s, const torch::jit::Stack& stack, size_t nouts, PyObject* forward) {
  for (size_t i = stack.size() - nouts; i < stack.size(); ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor()) {
      if (v.toTensor().defined()) s->pending.emplace_back(v.toTensor().getIntrusivePtr());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList().vec()) {
        if (t.defined()) s->pending.emplace_back(t.getIntrusivePtr());
      }
    }
  }
  if (s->pending.empty()) return;
  s->pending_forward = Py_NewRef(forward);
}

void ToPython(const c10::OperatorHandle& op, State* s, const std::vector<c10::IValue>& args,
              const torch::jit::Stack& outs, std::string* key) {
  PyObject* py_args = PyList_New(static_cast<Py_ssize_t>(args.size()));
  PyObject* out = nullptr;
  long entry = -1;
  PyObject* forward = nullptr;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      PyList_SET_ITEM(py_args, static_cast<Py_ssize_t>(i), torch::jit::toPyObject(args[i]).release().ptr());
    }
    if (outs.empty()) {
      out = Py_NewRef(Py_None);
    } else if (outs.size() == 1) {
      out = torch::jit::toPyObject(outs[0]).release().ptr();
    } else {
      out = PyTuple_New(static_cast<Py_ssize_t>(outs.size()));
      for (size_t i = 0; i < outs.size(); ++i) {
        PyTuple_SET_ITEM(out, static_cast<Py_ssize_t>(i), torch::jit::toPyObject(outs[i]).release().ptr());
      }
    }
    const auto& name = op.schema().operator_name();
    PyObject* r = PyObject_CallFunction(s->record, "ssOO", name.name.c_str(), name.overload_name.c_str(), py_args, out);
    PyObject *number = nullptr, *fwd = nullptr;
    if (r != nullptr && PyArg_ParseTuple(r, "OO", &number, &fwd)) {
      entry = PyLong_AsLong(number);
      if (fwd != Py_None) forward = Py_NewRef(fwd);
    }
    Py_XDECREF(r);
  } catch (const std::exception&) { entry = -1; }
  if (ClearError()) entry = -1;
  Py_XDECREF(py_args);
  Py_XDECREF(out);
  if (key != nullptr) {
    if (entry >= 0 && static_cast<size_t>(entry) >= s->counts.size()) s->counts.resize(entry + 1, 0);
    s->keys.emplace(std::move(*key), State::Entry{entry, forward});  // keeps the reference
  } else {
    Py_XDECREF(forward);
  }
}

void RunBelow(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  c10::impl::ExcludeDispatchKeyGuard guard(
      c10::DispatchKeySet({kKey, c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
  op.redispatchBoxed(ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, c10::DispatchKey::Python), stack);
}

void PythonPath(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  State* s = state();
  if (s->pending_forward != nullptr && std::this_thread::get_id() == s->thread) {
    PyGILState_STATE gil = PyGILState_Ensure();
    FlushPending(s);
    PyGILState_Release(gil);
  }
  c10::impl::ExcludeDispatchKeyGuard guard(kKey);
  op.redispatchBoxed(ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kKey), stack);
}

// Appends what a call's key holds before it runs: the operator, its arguments, the context number, the call site and
// (2.x) the forward call of the running autograd node. False where the key cannot decide the recorder's entry (the
// call then goes to the Python path). Names the node of the pending forward link first, as the recorder does at
// every call. Raises what the recorder's callbacks raised that is not their own failure.
bool KeyBefore(State* s, const c10::OperatorHandle& op, const c10::IValue* args, size_t nargs, std::string& key) {
  const bool grad = at::GradMode::is_enabled();
  Put<const void*>(key, &op.schema());
  for (size_t i = 0; i < nargs; ++i) {
    if (!KeyOf(args[i], key, grad)) return false;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  if (s->pending_forward != nullptr) FlushPending(s);
  Put<long>(key, s->context);
  bool user = false;
  bool ok = s->context >= 0 && KeyOfSite(s, key, &user);
#if TORCH_VERSION_MAJOR >= 2
  // A backward call (PyTorch 2.x): the recorder names the forward call from the running autograd node's metadata,
  // so the key holds that place (by identity: the recorder makes equal places one object). Without a frame of the
  // user's the recorder falls back on the backward() line, which the key does not hold.
  if (ok) {
    std::shared_ptr<torch::autograd::Node> node = torch::autograd::get_current_node();
    if (node) {
      auto* md = static_cast<torch::autograd::PyAnomalyMetadata*>(node->metadata());
      PyObject* d = md != nullptr ? md->dict() : nullptr;
      PyObject* forward = d != nullptr ? PyDict_GetItemWithError(d, s->forward_key) : nullptr;  // borrowed
      if (ClearError() || !user) {
        ok = false;
      } else {
        key.push_back('N');
        Put<const void*>(key, forward);
        if (forward != nullptr && s->forwards.insert(forward).second) Py_INCREF(forward);
      }
    }
  }
#endif
  PyGILState_Release(gil);
  Rethrow();
  return ok;
}

// After the call ran (its `nouts` outputs last on `stack`): completes the key with the outputs and counts the call
// where the key is known, or hands it to the recorder (ToPython), which says how later calls with the key are kept.
void Finish(State* s, const c10::OperatorHandle& op, std::string& key, const std::vector<c10::IValue>& args,
            const torch::jit::Stack& stack, size_t nouts) {
  key.push_back('|');
  bool keyed = true;
  for (size_t i = stack.size() - nouts; i < stack.size(); ++i) {
    if (!KeyOf(stack[i], key, false)) {
      keyed = false;
      break;
    }
  }
  if (keyed) {
    auto it = s->keys.find(key);
    if (it != s->keys.end() && it->second.number >= 0) {
      ++s->counts[it->second.number];
      if (it->second.forward != nullptr) SetPending(s, stack, nouts, it->second.forward);
      return;
    }
  }
  torch::jit::Stack outs(stack.end() - static_cast<std::ptrdiff_t>(nouts), stack.end());
  {
    // What the recorder does is not recorded (as in the dispatch mode, which is off while it records).
    c10::impl::ExcludeDispatchKeyGuard guard(
        c10::DispatchKeySet({kKey, c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
    PyGILState_STATE gil = PyGILState_Ensure();
    ToPython(op, s, args, outs, keyed ? &key : nullptr);
    PyGILState_Release(gil);
  }
  Rethrow();
}

void Fallback(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  State* s = state();
  // Without the Python key the dispatch mode would not see this call either (PyTorch turns modes off around some
  // calls of its own, such as the detach in nn.Parameter's constructor, or redispatches below it): it goes on
  // unrecorded, and the calls it makes come back here as they would reach the mode.
  if (!s->on || !ks.has(c10::DispatchKey::Python)) {
    return op.redispatchBoxed(ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kKey), stack);
  }
  if (s->context < 0 || std::this_thread::get_id() != s->thread) return PythonPath(op, ks, stack);
  const size_t nargs = op.schema().arguments().size();
  thread_local std::string key;
  key.clear();
  if (!KeyBefore(s, op, stack->data() + (stack->size() - nargs), nargs, key)) return PythonPath(op, ks, stack);
  std::vector<c10::IValue> args(stack->end() - static_cast<std::ptrdiff_t>(nargs), stack->end());
  try {
    RunBelow(op, ks, stack);
  } catch (const std::exception&) {
    // The dispatch mode decides what a failing call does (a dtype-promoting retry under an XLA stand-in, or the
    // error itself): it gets the call as it came.
    stack->resize(stack->size() - std::min(stack->size(), nargs));
    stack->insert(stack->end(), args.begin(), args.end());
    return PythonPath(op, ks, stack);
  }
  Finish(s, op, key, args, *stack, op.schema().returns().size());
}

TORCH_LIBRARY_IMPL(_, Fake, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&Fallback>()); }

// -- the detach of a dispatch mode (PyTorch 2.9) ---------------------------------------------------------------------
// While a dispatch mode is entered, PyTorch 2.x makes every shallow copy of a tensor (TensorImpl::
// shallow_copy_and_detach: the view that ADInplaceOrView's detach returns, a SavedVariable saving or unpacking an
// output, `.data`) call the mode's __torch_dispatch__ with aten::detach, through its Python interpreter's `detach`
// and not through the dispatcher: the fallback above never sees these calls (about 260 a training step of resnet50:
// AccumulateGrad's detach of each gradient, nn.ReLU's saved output and its unpacking in backward). The recorder
// records them as any other call. While the fast path is on, the interpreter's table of methods is wrapped: its
// `detach` keys such a call as the fallback keys a dispatcher call (the same key for the same call), counts it where
// the key is known, else runs it and hands it to the recorder, and returns what the mode's detach returns (the op run
// with the mode hidden); every other case (another mode on top, another thread, a tensor subclass, a context of -1)
// and every other method go to PyTorch's own table. The table's methods are those of PyTorch 2.9 (pinned by
// requirements/torch2.txt); with another version these calls go to the dispatch mode as before.
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR == 9
#define OPPROBE_WRAPS_DETACH 1

c10::intrusive_ptr<c10::TensorImpl> Detach(const c10::impl::PyInterpreterVTable* base, const c10::TensorImpl* self);

class Interpreter final : public c10::impl::PyInterpreterVTable {
 public:
  explicit Interpreter(const c10::impl::PyInterpreterVTable* base) : base_(base) {}
  const c10::impl::PyInterpreterVTable* base() const { return base_; }

  c10::intrusive_ptr<c10::TensorImpl> detach(const c10::TensorImpl* self) const override { return Detach(base_, self); }

  std::string name() const override { return base_->name(); }
  void incref(PyObject* o) const override { base_->incref(o); }
  void decref(PyObject* o, bool has_pyobj_slot) const override { base_->decref(o, has_pyobj_slot); }
  void dispatch(const c10::OperatorHandle& op, torch::jit::Stack* stack) const override { base_->dispatch(op, stack); }
  void reportErrorCallback(PyObject* callback, c10::DispatchKey key) const override {
    base_->reportErrorCallback(callback, key);
  }
  void python_op_registration_trampoline(const c10::OperatorHandle& op, c10::DispatchKey k, c10::DispatchKeySet ks,
                                         torch::jit::Stack* stack, bool with_keyset, bool with_op) const override {
    base_->python_op_registration_trampoline(op, k, ks, stack, with_keyset, with_op);
  }
  void throw_abstract_impl_not_imported_error(std::string opname, const char* pymodule,
                                              const char* context) const override {
    base_->throw_abstract_impl_not_imported_error(std::move(opname), pymodule, context);
  }
  void python_dispatcher(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                         torch::jit::Stack* stack) const override {
    base_->python_dispatcher(op, ks, stack);
  }
  bool is_contiguous(const c10::TensorImpl* t, at::MemoryFormat f) const override { return base_->is_contiguous(t, f); }
  c10::SymBool sym_is_contiguous(const c10::TensorImpl* t, at::MemoryFormat f) const override {
    return base_->sym_is_contiguous(t, f);
  }
  bool is_strides_like(const c10::TensorImpl* t, at::MemoryFormat f) const override {
    return base_->is_strides_like(t, f);
  }
  bool is_non_overlapping_and_dense(const c10::TensorImpl* t) const override {
    return base_->is_non_overlapping_and_dense(t);
  }
  c10::Device device(const c10::TensorImpl* t) const override { return base_->device(t); }
  int64_t dim(const c10::TensorImpl* t) const override { return base_->dim(t); }
  c10::IntArrayRef strides(const c10::TensorImpl* t) const override { return base_->strides(t); }
  c10::IntArrayRef sizes(const c10::TensorImpl* t) const override { return base_->sizes(t); }
  c10::SymIntArrayRef sym_sizes(const c10::TensorImpl* t) const override { return base_->sym_sizes(t); }
  c10::Layout layout(const c10::TensorImpl* t) const override { return base_->layout(t); }
  int64_t numel(const c10::TensorImpl* t) const override { return base_->numel(t); }
  c10::SymInt sym_numel(const c10::TensorImpl* t) const override { return base_->sym_numel(t); }
  c10::SymIntArrayRef sym_strides(const c10::TensorImpl* t) const override { return base_->sym_strides(t); }
  c10::SymInt sym_storage_offset(const c10::TensorImpl* t) const override { return base_->sym_storage_offset(t); }
  void trace_gpu_event_creation(c10::DeviceType d, uintptr_t event) const override {
    base_->trace_gpu_event_creation(d, event);
  }
  void trace_gpu_event_deletion(c10::DeviceType d, uintptr_t event) const override {
    base_->trace_gpu_event_deletion(d, event);
  }
  void trace_gpu_event_record(c10::DeviceType d, uintptr_t event, uintptr_t stream) const override {
    base_->trace_gpu_event_record(d, event, stream);
  }
  void trace_gpu_event_wait(c10::DeviceType d, uintptr_t event, uintptr_t stream) const override {
    base_->trace_gpu_event_wait(d, event, stream);
  }
  void trace_gpu_memory_allocation(c10::DeviceType d, uintptr_t ptr) const override {
    base_->trace_gpu_memory_allocation(d, ptr);
  }
  void trace_gpu_memory_deallocation(c10::DeviceType d, uintptr_t ptr) const override {
    base_->trace_gpu_memory_deallocation(d, ptr);
  }
  void trace_gpu_stream_creation(c10::DeviceType d, uintptr_t stream) const override {
    base_->trace_gpu_stream_creation(d, stream);
  }
  void trace_gpu_device_synchronization(c10::DeviceType d) const override {
    base_->trace_gpu_device_synchronization(d);
  }
  void trace_gpu_stream_synchronization(c10::DeviceType d, uintptr_t stream) const override {
    base_->trace_gpu_stream_synchronization(d, stream);
  }
  void trace_gpu_event_synchronization(c10::DeviceType d, uintptr_t event) const override {
    base_->trace_gpu_event_synchronization(d, event);
  }
  void reset_backward_hooks(const c10::TensorImpl* t) const override { base_->reset_backward_hooks(t); }

 private:
  const c10::impl::PyInterpreterVTable* base_;
};

Interpreter* interpreter = nullptr;  // made once, never destroyed (another thread may be inside one of its methods)

// Whether the mode on top of the thread's mode stack is the capture's own (the one a detach would call).
bool CaptureModeOnTop(State* s) {
  const int64_t n = c10::impl::TorchDispatchModeTLS::stack_len();
  if (n <= 0 || s->mode == nullptr) return false;
  return c10::impl::TorchDispatchModeTLS::get_stack_at(n - 1)->ptr(getPyInterpreter()) == s->mode;
}

c10::intrusive_ptr<c10::TensorImpl> Detach(const c10::impl::PyInterpreterVTable* base, const c10::TensorImpl* self) {
  State* s = state();
  if (!s->on || s->context < 0 || std::this_thread::get_id() != s->thread || !s->detach_op || !CaptureModeOnTop(s)) {
    return base->detach(self);
  }
  const at::Tensor t(c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::unsafe_reclaim_from_nonowning(
      const_cast<c10::TensorImpl*>(self)));
  const c10::OperatorHandle& op = *s->detach_op;
  std::vector<c10::IValue> args{c10::IValue(t)};
  std::string key;  // (not the fallback's: a detach may run while the fallback keys a call)
  if (!KeyBefore(s, op, args.data(), 1, key)) return base->detach(self);
  torch::jit::Stack out;
  {
    // As the dispatch mode runs it: with the mode (and this fast path) out of the way.
    c10::impl::ExcludeDispatchKeyGuard guard(
        c10::DispatchKeySet({kKey, c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
    out.emplace_back(at::_ops::detach::call(t));
  }
  Finish(s, op, key, args, out, 1);
  return out[0].toTensor().getIntrusivePtr();
}

void WrapInterpreter() {
  c10::impl::PyInterpreter* py = getPyInterpreter();
  if (interpreter == nullptr) interpreter = new Interpreter(py->vtable_);
  if (py->vtable_ != interpreter) py->vtable_ = interpreter;
}

void UnwrapInterpreter() {
  c10::impl::PyInterpreter* py = getPyInterpreter();
  if (interpreter != nullptr && py->vtable_ == interpreter) py->vtable_ = interpreter->base();
}
#else
void WrapInterpreter() {}
void UnwrapInterpreter() {}
#endif

// -- the module's functions -----------------------------------------------------------------------------------------

PyObject* Start(PyObject*, PyObject* args) {
  PyObject *classify, *record, *forward_key, *mode;
  if (!PyArg_ParseTuple(args, "OOOO", &classify, &record, &forward_key, &mode)) return nullptr;
  State* s = state();
  Py_XSETREF(s->mode, Py_NewRef(mode));
  if (!s->detach_op) {
    auto detach = c10::Dispatcher::singleton().findSchema({"aten::detach", ""});
    if (detach) s->detach_op = std::make_unique<c10::OperatorHandle>(*detach);
  }
  Py_XSETREF(s->forward_key, Py_NewRef(forward_key));
  Py_XSETREF(s->classify, Py_NewRef(classify));
  Py_XSETREF(s->record, Py_NewRef(record));
  s->thread = std::this_thread::get_id();
  s->on = true;
  c10::impl::tls_set_dispatch_key_included(kKey, true);
  WrapInterpreter();
  Py_RETURN_NONE;
}

// take_pending(tensors, place): the recorder's pending forward link (a call it recorded, here or through the dispatch
// mode), kept here from now on: the node is named at the next call, as the recorder would.
PyObject* TakePending(PyObject*, PyObject* args) {
  PyObject *tensors, *forward;
  if (!PyArg_ParseTuple(args, "OO", &tensors, &forward)) return nullptr;
  State* s = state();
  if (s->pending_forward != nullptr) FlushPending(s);
  PyObject* seq = PySequence_Fast(tensors, "take_pending: a sequence of tensors");
  if (seq == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
    PyObject* t = PySequence_Fast_GET_ITEM(seq, i);
    if (THPVariable_Check(t)) {
      const at::Tensor& tensor = THPVariable_Unpack(t);
      if (tensor.defined()) s->pending.emplace_back(tensor.getIntrusivePtr());
    }
  }
  Py_DECREF(seq);
  if (!s->pending.empty()) s->pending_forward = Py_NewRef(forward);
  Py_RETURN_NONE;
}

PyObject* Flush(PyObject*, PyObject*) {
  State* s = state();
  if (s->pending_forward != nullptr) FlushPending(s, /*hidden=*/false);
  Py_RETURN_NONE;
}

PyObject* Stop(PyObject*, PyObject*) {
  State* s = state();
  if (s->pending_forward != nullptr) FlushPending(s);
  s->on = false;
  c10::impl::tls_set_dispatch_key_included(kKey, false);
  UnwrapInterpreter();
  Py_RETURN_NONE;
}

PyObject* SetContext(PyObject*, PyObject* arg) {
  long c = PyLong_AsLong(arg);
  if (c == -1 && PyErr_Occurred()) return nullptr;
  state()->context = c;
  Py_RETURN_NONE;
}

// The counts kept here since the last call, as {entry number: count}; they are reset.
PyObject* TakeCounts(PyObject*, PyObject*) {
  State* s = state();
  PyObject* d = PyDict_New();
  for (size_t i = 0; i < s->counts.size(); ++i) {
    if (s->counts[i] == 0) continue;
    PyObject* k = PyLong_FromSize_t(i);
    PyObject* v = PyLong_FromLongLong(s->counts[i]);
    PyDict_SetItem(d, k, v);
    Py_DECREF(k);
    Py_DECREF(v);
    s->counts[i] = 0;
  }
  return d;
}

PyObject* Pending(PyObject*, PyObject*) {
  long long n = 0;
  for (long long c : state()->counts) n += c;
  return PyLong_FromLongLong(n);
}

PyMethodDef kMethods[] = {
    {"start", Start, METH_VARARGS, "start(classify, record, forward_key, mode): the fast path on for this thread"},
    {"stop", Stop, METH_NOARGS, "stop(): the fast path off"},
    {"flush", Flush, METH_NOARGS, "flush(): names the node of the last linked forward call now"},
    {"take_pending", TakePending, METH_VARARGS, "take_pending(tensors, place): the recorder's pending link"},
    {"set_context", SetContext, METH_O, "set_context(n): the recorder's context number; -1: the Python path"},
    {"take_counts", TakeCounts, METH_NOARGS, "take_counts() -> {entry: count} counted here since the last call"},
    {"pending", Pending, METH_NOARGS, "pending() -> calls counted here and not yet taken"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "opprobe_capture_fastpath", nullptr, -1, kMethods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_opprobe_capture_fastpath() { return PyModule_Create(&kModule); }
