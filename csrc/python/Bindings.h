#pragma once

#include <torch/csrc/utils/pybind.h>

namespace foo::python {

void bind_devices(pybind11::module& m);
void bind_streams(pybind11::module& m);
void bind_tensors(pybind11::module& m);
void bind_compile(pybind11::module& m);
void bind_memory(pybind11::module& m);
void bind_distributed(pybind11::module& m);
void bind_graphs(pybind11::module& m);
void bind_race(pybind11::module& m);
void install_launch_site_provider();

}  // namespace foo::python
