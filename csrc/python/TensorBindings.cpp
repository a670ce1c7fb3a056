#include <pybind11/stl.h>

#include "aten/Fallback.h"
#include "python/Bindings.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooGenerator.h"
#include "runtime/Philox.h"
#include "runtime/FooSerialization.h"

namespace py = pybind11;

namespace foo::python {

// Tensor-level services: the fallback's log, generators, backend metadata.
void bind_tensors(py::module& m) {
  m.def("_fallback_ops", &aten::fallback_ops);
  m.def("_synchronizing_ops", &aten::synchronizing_ops);
  // For the known-answer test of the generator's counter-based core.
  m.def("_philox4x32_10", &philox4x32_10);
  m.def("_set_backend_flag", &set_backend_flag);
  m.def("_backend_flags", &backend_flags);
  m.def("_default_generator", [](int d) { return default_generator(static_cast<c10::DeviceIndex>(d)); });
}

}  // namespace foo::python
