#include "python/UserSite.h"

#include "python/Bindings.h"

// After Bindings.h, which brings in Python.h.
#include <frameobject.h>

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

bool is_library_file(const std::string& file) {
  static const std::string torch_dir = package_dir("torch");
  static const std::string foo_dir = package_dir("torch_foo");
  return file.rfind(torch_dir, 0) == 0 || file.rfind(foo_dir, 0) == 0 || file.rfind("<frozen", 0) == 0;
}

}  // namespace

std::string user_site() {
  if (!Py_IsInitialized()) return {};
  py::gil_scoped_acquire gil;
  PyFrameObject* frame = PyEval_GetFrame();
  Py_XINCREF(frame);
  std::string site;
  while (frame != nullptr) {
    std::string file = filename_of(frame);
    if (!is_library_file(file)) {
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

}  // namespace foo::python
