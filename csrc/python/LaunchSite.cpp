// Tells the runtime where in the user's Python program the host is, for
// errors raised by the call that launched a failing kernel.
#include <string>

#include "python/Bindings.h"

// After Bindings.h, which brings in Python.h.
#include <frameobject.h>
#include "runtime/FooException.h"

namespace py = pybind11;

namespace foo::python {
namespace {

std::string filename_of(PyFrameObject* frame) {
  PyCodeObject* code = PyFrame_GetCode(frame);
  const char* name = PyUnicode_AsUTF8(code->co_filename);
  std::string out = name ? name : "";
  Py_DECREF(code);
  return out;
}

std::string package_dir(const char* package) {
  return py::module::import("os.path").attr("dirname")(py::module::import(package).attr("__file__")).cast<std::string>() +
         "/";
}

// The innermost frame outside torch and torch_foo: the user's line, not the
// library code between it and the operator.
std::string python_launch_site() {
  if (!Py_IsInitialized()) return {};
  py::gil_scoped_acquire gil;
  static const std::string torch_dir = package_dir("torch");
  static const std::string foo_dir = package_dir("torch_foo");
  PyFrameObject* frame = PyEval_GetFrame();
  Py_XINCREF(frame);
  std::string site;
  while (frame != nullptr) {
    std::string file = filename_of(frame);
    if (file.rfind(torch_dir, 0) != 0 && file.rfind(foo_dir, 0) != 0) {
      site = file + ":" + std::to_string(PyFrame_GetLineNumber(frame));
      Py_DECREF(frame);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return site;
}

}  // namespace

void install_launch_site_provider() { set_launch_site_provider(&python_launch_site); }

}  // namespace foo::python
