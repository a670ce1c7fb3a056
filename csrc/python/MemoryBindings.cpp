#include "aten/Fallback.h"
#include "python/Bindings.h"
#include "runtime/FooCachingAllocator.h"

namespace py = pybind11;

namespace foo::python {

void bind_memory(py::module& m) {
  m.def("_fallback_ops", &aten::fallback_ops);
}

}  // namespace foo::python
