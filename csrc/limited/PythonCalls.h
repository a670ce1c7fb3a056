// Calling C++ from a Limited API function as torch's own bindings do:
// without the GIL, with c10's warnings handed to Python's warnings module
// afterwards on the calling thread, and a c10 exception turned into the
// Python exception torch raises for it.
#pragma once

#include <Python.h>

#include <functional>

namespace foo::limited {

// Runs fn; returns None, or nullptr with a Python exception set.
PyObject* call_without_gil(const std::function<void()>& fn);

// A Python int as int64; false (with a Python exception set) otherwise.
bool to_int64(PyObject* obj, int64_t* out);

}  // namespace foo::limited
