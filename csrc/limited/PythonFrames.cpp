#include "limited/PythonFrames.h"

#include <Python.h>

namespace foo::limited {
namespace {

// Takes the GIL for its scope (Python's threads may already hold it).
class Gil {
 public:
  Gil() : state_(PyGILState_Ensure()) {}
  ~Gil() { PyGILState_Release(state_); }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  PyGILState_STATE state_;
};

std::string utf8_attr(PyObject* obj, const char* name) {
  std::string out;
  if (PyObject* value = PyObject_GetAttrString(obj, name)) {
    Py_ssize_t size = 0;
    if (const char* text = PyUnicode_AsUTF8AndSize(value, &size)) out.assign(text, static_cast<size_t>(size));
    Py_DECREF(value);
  }
  return out;
}

std::string package_dir(const char* package) {
  std::string dir;
  if (PyObject* module = PyImport_ImportModule(package)) {
    dir = utf8_attr(module, "__file__");
    Py_DECREF(module);
  }
  PyErr_Clear();
  return dir.substr(0, dir.rfind('/') + 1);
}

bool is_library_file(const std::string& file) {
  static const std::string torch_dir = package_dir("torch");
  static const std::string foo_dir = package_dir("torch_foo");
  return file.rfind(torch_dir, 0) == 0 || file.rfind(foo_dir, 0) == 0 || file.rfind("<frozen", 0) == 0;
}

}  // namespace

void walk_python_frames(const std::function<bool(const std::string&, int, const std::string&)>& visit) {
  if (!Py_IsInitialized() || PyGILState_GetThisThreadState() == nullptr) return;
  Gil gil;
  // PyFrameObject is opaque here: frames are handled as PyObject*.
  PyObject* frame = reinterpret_cast<PyObject*>(PyEval_GetFrame());
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(reinterpret_cast<PyFrameObject*>(frame));
    std::string file = utf8_attr(reinterpret_cast<PyObject*>(code), "co_filename");
    std::string name = utf8_attr(reinterpret_cast<PyObject*>(code), "co_name");
    Py_DECREF(code);
    bool more = visit(file, PyFrame_GetLineNumber(reinterpret_cast<PyFrameObject*>(frame)), name);
    PyObject* back = more ? PyObject_GetAttrString(frame, "f_back") : nullptr;
    Py_DECREF(frame);
    if (back == Py_None) {
      Py_DECREF(back);
      back = nullptr;
    }
    frame = back;
  }
  if (PyErr_Occurred()) PyErr_Clear();
}

std::string user_site() {
  std::string site;
  walk_python_frames([&site](const std::string& file, int line, const std::string&) {
    if (is_library_file(file)) return true;
    site = file + ":" + std::to_string(line);
    return false;
  });
  return site;
}

}  // namespace foo::limited
