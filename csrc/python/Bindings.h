#pragma once

#include <cstdint>

#include <c10/core/Device.h>
#include <torch/csrc/utils/pybind.h>

namespace foo::python {

// A Python int as a foo device index: one outside c10::DeviceIndex's range
// is an invalid index, not a truncated one (257 is not device 1).
c10::DeviceIndex device_index(int64_t d);

void bind_devices(pybind11::module& m);
void bind_streams(pybind11::module& m);
void bind_tensors(pybind11::module& m);
void bind_compile(pybind11::module& m);
void bind_memory(pybind11::module& m);
void bind_mem_pools(pybind11::module& m);
void bind_distributed(pybind11::module& m);
void bind_graphs(pybind11::module& m);
void bind_race(pybind11::module& m);
void bind_testing(pybind11::module& m);
void bind_ipc(pybind11::module& m);
void install_launch_site_provider();

}  // namespace foo::python
