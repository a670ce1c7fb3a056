// torch_foo._C_limited: the extension of the Limited API build, built
// against Python's stable ABI (abi3) and neither pybind11 nor
// torch_python. Loading it loads libtorch_foo and registers the
// torch.ops._foo_C operators that torch_foo/_C.py (this build's _C) calls;
// it holds only what needs Python objects: the out-of-memory observer and
// the Python frames that errors and race reports name.
#include <Python.h>

#include <exception>

#include "aten/RaceAccesses.h"
#include "limited/Ops.h"
#include "limited/PythonCalls.h"
#include "limited/PythonFrames.h"
#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooMemoryHistory.h"

namespace {

// Race reports name the user's line only on threads that run Python code:
// the autograd engine's threads have none, and taking the GIL there for
// every operator would serialize them.
std::string race_site() {
  if (!Py_IsInitialized() || PyGILState_GetThisThreadState() == nullptr) return {};
  return foo::limited::user_site();
}

PyObject* attach_out_of_memory_observer(PyObject* /*module*/, PyObject* observer) {
  if (!PyCallable_Check(observer)) {
    PyErr_SetString(PyExc_TypeError, "_attach_out_of_memory_observer expects a callable");
    return nullptr;
  }
  Py_INCREF(observer);  // kept for the life of the process, as CUDA's observers are
  try {
    foo::attach_out_of_memory_observer([observer](int64_t device, size_t requested, size_t total, size_t free) {
      PyGILState_STATE gil = PyGILState_Ensure();
      PyObject* result = PyObject_CallFunction(observer, "LKKK", static_cast<long long>(device),
                                               static_cast<unsigned long long>(requested),
                                               static_cast<unsigned long long>(total),
                                               static_cast<unsigned long long>(free));
      // The OutOfMemoryError is what the caller must see; a failing
      // observer is reported as unraisable, as Python does for callbacks.
      if (result == nullptr) {
        PyErr_WriteUnraisable(observer);
      } else {
        Py_DECREF(result);
      }
      PyGILState_Release(gil);
    });
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  Py_RETURN_NONE;
}

// An extension function, not an operator: torch's operator calls show
// c10's warnings only on stderr, and the kernels' warnings that a wait
// raises must reach Python's warnings.
PyObject* synchronize(PyObject* /*module*/, PyObject* device) {
  int64_t d = 0;
  if (!foo::limited::to_int64(device, &d)) return nullptr;
  return foo::limited::call_without_gil([d] { foo::device_synchronize(foo::limited::device_index(d)); });
}

PyMethodDef methods[] = {
    {"_synchronize", synchronize, METH_O, "Waits for all work queued on a foo device."},
    {"_attach_out_of_memory_observer", attach_out_of_memory_observer, METH_O,
     "Calls observer(device, requested, total, free) when a foo allocation fails for want of memory."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_C_limited",
    "The Limited API build's extension of torch_foo; use torch.foo instead.", -1, methods,
    nullptr, nullptr, nullptr, nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit__C_limited() {
  foo::set_launch_site_provider(&foo::limited::user_site);
  foo::aten::set_race_site_provider(&race_site);
  return PyModule_Create(&module_def);
}
