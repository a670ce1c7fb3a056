#include "python/UserSite.h"

#include <cstdlib>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "python/Bindings.h"

// After Bindings.h, which brings in Python.h.
#include <frameobject.h>

namespace py = pybind11;

namespace foo::python {
namespace {

std::string package_dir(const char* package) {
  return py::module::import("os.path").attr("dirname")(py::module::import(package).attr("__file__")).cast<std::string>() +
         "/";
}

// Where inductor writes the wrapper code it generates (torch.compile): its
// frames stand between a compiled call and the kernels it launches. Read
// for each code object seen first: inductor sets the variable when it first
// compiles, before it writes any wrapper.
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

// Where in a code object the frame is: its last instruction, a cheap key
// for the line (computed once per instruction).
int position_in(PyFrameObject* frame) {
#if PY_VERSION_HEX >= 0x030B0000
  return PyFrame_GetLasti(frame);
#else
  return PyFrame_GetLineNumber(frame);
#endif
}

// What a launch needs to know of a code object, found once. A launch pays
// a lookup per frame it walks: the user's line is found by skipping
// library frames (is_library_file, decided once per code object), and its
// "file:line" is built once per launching instruction.
struct CodeSites {
  bool library = false;
  std::string file;
  std::unordered_map<int, const char*> site_at;  // position_in(frame) -> "file:line"
};

// Guarded by the GIL. Each key holds a reference to its code object, so
// that no key is the address of a freed code object reused by another.
// Code objects made without end (exec'd strings) would grow it without
// end: past kMaxCodes, sites are found without the cache.
std::unordered_map<PyCodeObject*, CodeSites>& codes() {
  // Never destroyed: its keys hold references that Python may not take back after it finalizes.
  static auto* instance = new std::unordered_map<PyCodeObject*, CodeSites>();
  return *instance;
}
constexpr size_t kMaxCodes = 1 << 14;

// Every site returned, as long as the process lives: queued kernels and
// race records keep the pointers.
const char* interned(std::string site) {
  static auto* sites = new std::unordered_set<std::string>();
  return sites->insert(std::move(site)).first->c_str();
}

std::string file_of(PyCodeObject* code) {
  const char* name = PyUnicode_AsUTF8(code->co_filename);
  return name ? name : "";
}

// The frame's site if its code is the user's; nullptr for library code.
const char* user_site_of(PyFrameObject* frame, PyCodeObject* code) {
  auto it = codes().find(code);
  if (it == codes().end()) {
    CodeSites fresh;
    fresh.file = file_of(code);
    fresh.library = is_library_file(fresh.file);
    if (codes().size() >= kMaxCodes) {
      return fresh.library ? nullptr : interned(fresh.file + ":" + std::to_string(PyFrame_GetLineNumber(frame)));
    }
    Py_INCREF(code);
    it = codes().emplace(code, std::move(fresh)).first;
  }
  CodeSites& sites = it->second;
  if (sites.library) return nullptr;
  const char*& site = sites.site_at[position_in(frame)];
  if (site == nullptr) site = interned(sites.file + ":" + std::to_string(PyFrame_GetLineNumber(frame)));
  return site;
}

}  // namespace

const char* user_site() {
  if (!Py_IsInitialized() || PyGILState_GetThisThreadState() == nullptr) return nullptr;
  PyGILState_STATE gil = PyGILState_Ensure();
  const char* site = nullptr;
  PyFrameObject* frame = PyEval_GetFrame();
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    site = user_site_of(frame, code);
    Py_DECREF(code);
    if (site != nullptr) {
      Py_DECREF(frame);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  if (PyErr_Occurred()) PyErr_Clear();
  PyGILState_Release(gil);
  return site;
}

}  // namespace foo::python
