#include "aten/Fallback.h"
#include "python/Bindings.h"
#include "runtime/FooCachingAllocator.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooGenerator.h"

namespace py = pybind11;

namespace foo::python {

void bind_memory(py::module& m) {
  m.def("_fallback_ops", &aten::fallback_ops);
  m.def("_default_generator", [](int d) { return default_generator(static_cast<c10::DeviceIndex>(d)); });
}

}  // namespace foo::python
