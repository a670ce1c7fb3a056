// torch_foo._C: the Python extension. Loading it loads libtorch_foo, whose
// static registrations (backend name, hooks, guard) make foo a device.
#include <torch/csrc/utils/pybind.h>

#include "python/Bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "Bindings of the foo backend's runtime; use torch.foo instead.";
  foo::python::bind_devices(m);
  foo::python::bind_streams(m);
  foo::python::bind_tensors(m);
  foo::python::bind_compile(m);
  foo::python::bind_memory(m);
  foo::python::bind_mem_pools(m);
  foo::python::bind_distributed(m);
  foo::python::bind_graphs(m);
  foo::python::bind_race(m);
  foo::python::bind_testing(m);
  foo::python::bind_ipc(m);
  foo::python::install_launch_site_provider();
}
