#include <pybind11/stl.h>

#include "aten/Fallback.h"
#include "python/Bindings.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooGenerator.h"
#include "runtime/FooSerialization.h"

namespace py = pybind11;

namespace foo::python {

// Tensor-level services: the fallback's log, generators, backend metadata.
void bind_tensors(py::module& m) {
  m.def("_fallback_ops", &aten::fallback_ops);
  m.def("_set_backend_flag", &set_backend_flag);
  m.def("_backend_flags", &backend_flags);
  m.def("_default_generator", [](int d) { return default_generator(static_cast<c10::DeviceIndex>(d)); });
}

}  // namespace foo::python
