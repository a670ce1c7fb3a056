// torch.foo.race_check / race_reports: foo_sim's stream race detector.
#include <string>

#include <torch/csrc/Exceptions.h>

#include "aten/RaceAccesses.h"
#include "python/Bindings.h"
#include "python/UserSite.h"
#include "runtime/FooException.h"
#include "runtime/FooRace.h"

namespace py = pybind11;

namespace foo::python {
namespace {

PyObject* g_race_error = nullptr;  // torch_foo.RaceError, set by the package

// Raise mode: torch_foo.RaceError, through torch's error handling.
void throw_race(const std::string& message) {
  if (g_race_error == nullptr || !Py_IsInitialized()) return;  // the caller throws a c10::Error
  py::gil_scoped_acquire gil;
  PyErr_SetString(g_race_error, message.c_str());
  throw python_error();
}

py::dict side(const fooRaceSide& s) {
  py::dict d;
  d["op"] = s.op;
  d["access"] = s.write ? "write" : "read";
  d["tensor"] = s.what;
  d["site"] = s.site;
  d["device"] = s.device < 0 ? py::object(py::none()) : py::object(py::str("foo:" + std::to_string(s.device)));
  d["stream"] = s.device < 0 ? py::object(py::none()) : py::object(py::int_(reinterpret_cast<uintptr_t>(s.handle)));
  d["default_stream"] = s.isDefaultStream != 0;
  return d;
}

}  // namespace

void bind_race(py::module& m) {
  m.def("_race_set_error_type", [](py::object type) {
    Py_XINCREF(type.ptr());
    g_race_error = type.ptr();
  });
  m.def("_race_set_mode", [](int mode) {
    FOO_CHECK(fooRaceSetMode(static_cast<fooRaceMode>(mode)));
    aten::sync_race_hooks();
  });
  m.def("_race_get_mode", [] {
    fooRaceMode mode = fooRaceGetMode();
    aten::sync_race_hooks();  // FOO_SIM_RACE_CHECK may have turned it on
    return static_cast<int>(mode);
  });
  m.def("_race_reports", [] {
    py::list out;
    fooRaceGetReports(
        [](const fooRaceReport* r, void* p) {
          py::dict d;
          d["kind"] = r->kind == fooRaceKindUseAfterFree ? "use after free"
                      : r->kind == fooRaceKindHost        ? "host"
                                                          : "unordered";
          d["first"] = side(r->first);
          d["second"] = side(r->second);
          d["bytes"] = r->bytes;
          d["count"] = r->count;
          d["fix"] = race_fix(*r);
          d["message"] = race_message(*r);
          static_cast<py::list*>(p)->append(std::move(d));
        },
        &out);
    return out;
  });
  m.def("_race_clear_reports", [] { fooRaceClearReports(); });
  set_race_thrower(&throw_race);
  aten::set_race_site_provider(&user_site);
}

}  // namespace foo::python
