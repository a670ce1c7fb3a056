#include "limited/PythonCalls.h"

#include <exception>
#include <vector>

#include <c10/util/Exception.h>

namespace foo::limited {
namespace {

class CollectedWarnings : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override { warnings.push_back(warning); }
  std::vector<c10::Warning> warnings;
};

PyObject* torch_attribute(const char* name) {
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == nullptr) return nullptr;
  PyObject* attr = PyObject_GetAttrString(torch, name);
  Py_DECREF(torch);
  return attr;
}

void set_error(PyObject* type, const char* message) {
  PyErr_SetString(type != nullptr ? type : PyExc_RuntimeError, message);
}

// As torch's translation: the message without the C++ backtrace.
void set_python_error(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const c10::OutOfMemoryError& e) {
    PyObject* type = torch_attribute("OutOfMemoryError");
    set_error(type, e.what_without_backtrace());
    Py_XDECREF(type);
  } catch (const c10::IndexError& e) {
    set_error(PyExc_IndexError, e.what_without_backtrace());
  } catch (const c10::ValueError& e) {
    set_error(PyExc_ValueError, e.what_without_backtrace());
  } catch (const c10::TypeError& e) {
    set_error(PyExc_TypeError, e.what_without_backtrace());
  } catch (const c10::NotImplementedError& e) {
    set_error(PyExc_NotImplementedError, e.what_without_backtrace());
  } catch (const c10::Error& e) {
    set_error(PyExc_RuntimeError, e.what_without_backtrace());
  } catch (const std::exception& e) {
    set_error(PyExc_RuntimeError, e.what());
  }
}

// False if the warnings filter turned a warning into an exception (set).
bool warn_in_python(const std::vector<c10::Warning>& warnings) {
  for (const c10::Warning& w : warnings) {
    PyObject* category = std::holds_alternative<c10::DeprecationWarning>(w.type()) ? PyExc_DeprecationWarning
                                                                                    : PyExc_UserWarning;
    if (PyErr_WarnEx(category, w.msg().c_str(), 1) < 0) return false;
  }
  return true;
}

}  // namespace

PyObject* call_without_gil(const std::function<void()>& fn) {
  CollectedWarnings collected;
  std::exception_ptr error;
  {
    c10::WarningUtils::WarningHandlerGuard guard(&collected);
    PyThreadState* saved = PyEval_SaveThread();
    try {
      fn();
    } catch (...) {
      error = std::current_exception();
    }
    PyEval_RestoreThread(saved);
  }
  if (!warn_in_python(collected.warnings)) return nullptr;
  if (error) {
    set_python_error(error);
    return nullptr;
  }
  Py_RETURN_NONE;
}

bool to_int64(PyObject* obj, int64_t* out) {
  long long v = PyLong_AsLongLong(obj);
  if (v == -1 && PyErr_Occurred()) return false;
  *out = v;
  return true;
}

}  // namespace foo::limited
