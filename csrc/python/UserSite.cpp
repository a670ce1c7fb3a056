#include "python/UserSite.h"

#include <cstdlib>

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

// Where inductor writes the wrapper code it generates (torch.compile): its
// frames stand between a compiled call and the kernels it launches. Read at
// each call: inductor sets the variable when it first compiles.
bool is_generated_file(const std::string& file) {
  const char* dir = std::getenv("TORCHINDUCTOR_CACHE_DIR");
  if (dir == nullptr || *dir == '\0') return false;
  std::string prefix = std::string(dir) + "/";
  return file.rfind(prefix, 0) == 0;
}

bool is_library_file(const std::string& file) {
  static const std::string torch_dir = package_dir("torch");
  static const std::string foo_dir = package_dir("torch_foo");
  return file.rfind(torch_dir, 0) == 0 || file.rfind(foo_dir, 0) == 0 || file.rfind("<frozen", 0) == 0 ||
         is_generated_file(file);
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
