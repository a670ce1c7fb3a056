#include <limits>

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/device_lazy_init.h>

#include "python/Bindings.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooInit.h"
#include "runtime/FooStream.h"

namespace py = pybind11;

namespace foo::python {

c10::DeviceIndex device_index(int64_t d) {
  constexpr int64_t lowest = std::numeric_limits<c10::DeviceIndex>::min();
  constexpr int64_t highest = std::numeric_limits<c10::DeviceIndex>::max();
  if (d < lowest || d > highest) throw_invalid_device(d);
  return static_cast<c10::DeviceIndex>(d);
}

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
  m.def("_set_device", [](int64_t d) { set_device(device_index(d)); });
  m.def("_exchange_device", [](int64_t d) { return static_cast<int>(exchange_device(device_index(d))); });
  // Wrapped by torch so that warnings the device's kernels raised, which the
  // wait raises on the host, reach Python's warnings.
  m.def("_synchronize", torch::wrap_pybind_function([](int64_t d) {
          c10::DeviceIndex index = device_index(d);
          py::gil_scoped_release no_gil;
          device_synchronize(index);
        }));
  m.def("_get_device_properties", [](int64_t d) { return get_device_properties(device_index(d)); });
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
