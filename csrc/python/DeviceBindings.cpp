#include <torch/csrc/utils/device_lazy_init.h>

#include "python/Bindings.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooInit.h"
#include "runtime/FooStream.h"

namespace py = pybind11;

namespace foo::python {

void bind_devices(py::module& m) {
  py::class_<fooDeviceProp>(m, "_FooDeviceProperties")
      .def_property_readonly("name", [](const fooDeviceProp& p) { return std::string(p.name); })
      .def_readonly("total_memory", &fooDeviceProp::totalGlobalMem)
      .def_readonly("major", &fooDeviceProp::major)
      .def_readonly("minor", &fooDeviceProp::minor)
      .def_readonly("executor_count", &fooDeviceProp::executorCount)
      // The CUDA name for the units that run work in parallel.
      .def_readonly("multi_processor_count", &fooDeviceProp::executorCount)
      .def("__repr__", [](const fooDeviceProp& p) {
        return "_FooDeviceProperties(name='" + std::string(p.name) + "', major=" + std::to_string(p.major) +
               ", minor=" + std::to_string(p.minor) + ", total_memory=" + std::to_string(p.totalGlobalMem >> 20) +
               "MB, executor_count=" + std::to_string(p.executorCount) + ")";
      });

  m.def("_device_count", [] { return static_cast<int>(device_count()); });
  m.def("_no_device_reason", &no_device_reason);
  m.def("_get_device", [] { return static_cast<int>(current_device()); });
  m.def("_set_device", [](int d) { set_device(static_cast<c10::DeviceIndex>(d)); });
  m.def("_exchange_device", [](int d) { return static_cast<int>(exchange_device(static_cast<c10::DeviceIndex>(d))); });
  m.def("_synchronize", [](int d) { device_synchronize(static_cast<c10::DeviceIndex>(d)); },
        py::call_guard<py::gil_scoped_release>());
  m.def("_get_device_properties", [](int d) { return get_device_properties(static_cast<c10::DeviceIndex>(d)); });
  m.def("_init", [] {
    lazy_init();
    // After a fork, torch asks torch.foo._lazy_init again before any tensor
    // factory touches foo, so the child gets the bad-fork error from it.
    torch::utils::register_fork_handler_for_device_init(at::kPrivateUse1);
  });
  m.def("_is_initialized", &is_initialized);
  m.def("_is_in_bad_fork", &in_bad_fork);
  m.def("_stream_priority_range", &FooStream::priority_range);
}

}  // namespace foo::python
