#include <torch/csrc/Event.h>

#include "aten/Gate.h"
#include "aten/Sleep.h"
#include "python/Bindings.h"
#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooInit.h"
#include "runtime/FooLaunch.h"
#include "runtime/FooStream.h"

namespace py = pybind11;

namespace foo::python {


void bind_streams(py::module& m) {
  m.def("_current_stream", [](int64_t d) { return getCurrentFooStream(device_index(d)).unwrap(); });
  m.def("_default_stream", [](int64_t d) { return getDefaultFooStream(device_index(d)).unwrap(); });
  m.def("_set_stream", [](c10::Stream s) { setCurrentFooStream(FooStream(s)); });
  m.def("_stream_from_external", [](uintptr_t ptr, int64_t d) {
    return getStreamFromExternal(reinterpret_cast<fooStream_t>(ptr), device_index(d)).unwrap();
  });
  m.def("_stream_native_handle", [](c10::Stream s) { return reinterpret_cast<uintptr_t>(FooStream(s).stream()); });
  m.def("_stream_priority", [](c10::Stream s) { return FooStream(s).priority(); });
  m.def("_sleep", &aten::sleep);
  m.def("_warn_in_kernel", &aten::warn_in_kernel);
  py::class_<aten::Gate>(m, "_Gate")
      .def(py::init<>())
      .def("open", &aten::Gate::open, py::call_guard<py::gil_scoped_release>());
  // torch.Event.elapsed_time accepts only the exact torch.Event type; this
  // serves torch.foo.Event, a subclass, with the same c10::Event underneath.
  m.def("_event_elapsed_time", [](py::handle start, py::handle end) {
    TORCH_CHECK(THPEvent_Check(start.ptr()) && THPEvent_Check(end.ptr()),
                "elapsed_time expects torch.Event objects, got ", py::str(py::type::of(end)).cast<std::string>());
    auto& a = reinterpret_cast<THPEvent*>(start.ptr())->event;
    auto& b = reinterpret_cast<THPEvent*>(end.ptr())->event;
    return a.elapsedTime(b);
  });
  // A stream made directly with foo_sim, as another library would; for
  // ExternalStream examples and tests.
  m.def("_raw_stream_create", [](int64_t d, int priority) {
    check_device_index(device_index(d));
    lazy_init();
    fooStream_t s = nullptr;
    FOO_CHECK(on_device(device_index(d), [&] { return fooStreamCreateWithPriority(&s, fooStreamDefault, priority); }));
    return reinterpret_cast<uintptr_t>(s);
  });
  m.def("_raw_stream_destroy", [](uintptr_t ptr) { FOO_CHECK(fooStreamDestroy(reinterpret_cast<fooStream_t>(ptr))); });
}

}  // namespace foo::python
