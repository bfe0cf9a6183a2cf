// The capture's fast path (see capture_native.py, which builds and loads it): a boxed fallback on the dispatch key
// just above the Python key (DispatchKey::Fake, an out-of-core key no kernel of PyTorch itself uses), switched on
// for the capture's thread through the thread's included dispatch keys. It sees every call the capture's dispatch
// mode would see (below autograd; calls made inside a call are not seen), at the same place.
//
// Per call it builds a key from what the Python recorder's entry depends on: the operator, each argument's and
// output's dtype and sizes or value, the Python call site (each frame's code object and instruction up to the
// innermost frame of the user's own files) and a context number the recorder keeps up to date (module path,
// phase). A key seen before only counts its entry; a key not seen before is handed to the Python recorder
// (capture_recorder.py), which stays the one place that encodes a call, and says whether the entry may be counted
// by its key from now on, and which place names the autograd node of the call's outputs (the recorder's pending
// forward link: while this file is loaded the recorder hands every such link here, and this file names the node at
// the next call, for the calls it counts too). Every call it cannot key (a tensor subclass,
// a symbolic size, a Generator, another thread, a frame the recorder marks as deciding the phase, a context of -1)
// goes on to the Python dispatch mode below it, as if this fallback did not exist.
#include <Python.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/python_anomaly_mode.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/library.h>
#include <torch/version.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_set>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

constexpr c10::DispatchKey kKey = c10::DispatchKey::Fake;

struct State {
  bool on = false;
  std::thread::id thread;
  long context = -1;              // -1: every call goes to the Python dispatch mode
  PyObject* classify = nullptr;   // classify(code) -> 0 torch/shim, 1 library, 2 user's, -1 decides the phase
  PyObject* record = nullptr;     // record(op, overload, args, out) -> entry number, or -1: ask every time
  std::unordered_map<PyObject*, int> kinds;  // code object (a reference held) -> classify's answer
  struct Entry {
    long number;        // the recorder's entry; -1: every such call goes to the recorder
    PyObject* forward;  // a forward call's place, for the autograd node of its outputs (a reference), or null
  };
  std::unordered_map<std::string, Entry> keys;
  std::vector<long long> counts;  // by entry number: calls counted here, not yet added to the recorder's
  PyObject* forward_key = nullptr;  // the key of the forward call's place in an autograd node's metadata
  // The outputs of the last forward call that autograd links to a node, and that call's place: as the recorder's
  // own pending link, the node (made after the call returns) is named at the next call.
  std::vector<c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>> pending;
  PyObject* pending_forward = nullptr;
  std::unordered_set<PyObject*> forwards;  // forward places keyed by identity (a reference held: ids stay unique)
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

// Appends the call site: each frame's code object and instruction, innermost first, up to the innermost frame of the
// user's own files (*user: whether there is one). False where a frame decides the phase, or the stack is deeper than
// the key should be.
bool KeyOfSite(State* s, std::string& k, bool* user) {
  *user = false;
  PyFrameObject* f = PyEval_GetFrame();  // borrowed
  Py_XINCREF(f);
  bool ok = true;
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
    Put<const void*>(k, code);
    Put<int32_t>(k, PyFrame_GetLasti(f));
    if (kind == 2) {
      *user = true;
      break;
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
  for (auto& weak : s->pending) {
    auto strong = weak.lock();
    if (!strong) continue;
    at::Tensor t(std::move(strong));
    std::shared_ptr<torch::autograd::Node> node = t.grad_fn();
    if (!node) continue;
    auto* md = static_cast<torch::autograd::PyAnomalyMetadata*>(node->metadata());
    PyObject* d = md != nullptr ? md->dict() : nullptr;
    if (d != nullptr && PyDict_SetDefault(d, s->forward_key, forward) == nullptr) PyErr_Clear();
  }
  s->pending.clear();
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
    PyObject* r = PyObject_CallFunction(s->record, "ssOO", name.name.c_str(), name.overload_name.c_str(), py_args,
                                        out);
    PyObject *number = nullptr, *fwd = nullptr;
    if (r != nullptr && PyArg_ParseTuple(r, "OO", &number, &fwd)) {
      entry = PyLong_AsLong(number);
      if (fwd != Py_None) forward = Py_NewRef(fwd);
    }
    Py_XDECREF(r);
  } catch (const std::exception&) {
    entry = -1;
  }
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
  c10::impl::ExcludeDispatchKeyGuard guard(c10::DispatchKeySet({kKey, c10::DispatchKey::Python,
                                                                c10::DispatchKey::PythonTLSSnapshot}));
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
  const bool grad = at::GradMode::is_enabled();
  thread_local std::string key;
  key.clear();
  Put<const void*>(key, &op.schema());
  for (size_t i = stack->size() - nargs; i < stack->size(); ++i) {
    if (!KeyOf((*stack)[i], key, grad)) return PythonPath(op, ks, stack);
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
  if (!ok) return PythonPath(op, ks, stack);
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
  key.push_back('|');
  const size_t nouts = op.schema().returns().size();
  bool keyed = true;
  for (size_t i = stack->size() - nouts; i < stack->size(); ++i) {
    if (!KeyOf((*stack)[i], key, false)) {
      keyed = false;
      break;
    }
  }
  if (keyed) {
    auto it = s->keys.find(key);
    if (it != s->keys.end() && it->second.number >= 0) {
      ++s->counts[it->second.number];
      if (it->second.forward != nullptr) SetPending(s, *stack, nouts, it->second.forward);
      return;
    }
  }
  torch::jit::Stack outs(stack->end() - static_cast<std::ptrdiff_t>(nouts), stack->end());
  {
    // What the recorder does is not recorded (as in the dispatch mode, which is off while it records).
    c10::impl::ExcludeDispatchKeyGuard guard(c10::DispatchKeySet({kKey, c10::DispatchKey::Python,
                                                                  c10::DispatchKey::PythonTLSSnapshot}));
    gil = PyGILState_Ensure();
    ToPython(op, s, args, outs, keyed ? &key : nullptr);
    PyGILState_Release(gil);
  }
  Rethrow();
}

TORCH_LIBRARY_IMPL(_, Fake, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&Fallback>());
}

// -- the module's functions -----------------------------------------------------------------------------------------

PyObject* Start(PyObject*, PyObject* args) {
  PyObject *classify, *record, *forward_key;
  if (!PyArg_ParseTuple(args, "OOO", &classify, &record, &forward_key)) return nullptr;
  State* s = state();
  Py_XSETREF(s->forward_key, Py_NewRef(forward_key));
  Py_XSETREF(s->classify, Py_NewRef(classify));
  Py_XSETREF(s->record, Py_NewRef(record));
  s->thread = std::this_thread::get_id();
  s->on = true;
  c10::impl::tls_set_dispatch_key_included(kKey, true);
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
    {"start", Start, METH_VARARGS, "start(classify, record): the fast path on for this thread"},
    {"stop", Stop, METH_NOARGS, "stop(): the fast path off"},
    {"flush", Flush, METH_NOARGS, "flush(): names the node of the last linked forward call now"},
    {"take_pending", TakePending, METH_VARARGS, "take_pending(tensors, place): the recorder's pending link"},
    {"set_context", SetContext, METH_O, "set_context(n): the recorder's context number; -1: the Python path"},
    {"take_counts", TakeCounts, METH_NOARGS, "take_counts() -> {entry: count} counted here since the last call"},
    {"pending", Pending, METH_NOARGS, "pending() -> calls counted here and not yet taken"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "opprobe_capture_fastpath", nullptr, -1, kMethods,
                       nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_opprobe_capture_fastpath() {
  return PyModule_Create(&kModule);
}
