// What torch_foo.testing (the pytest plugin, fault injection) needs of the
// runtime: per-operator counts since the last take, faults, launch sites.
#include <pybind11/stl.h>

#include "aten/OpCounts.h"
#include "python/Bindings.h"
#include "runtime/FooException.h"
#include "runtime/FooFaults.h"

namespace py = pybind11;

namespace foo::python {

void bind_testing(py::module& m) {
  // (fallback calls, synchronizing calls) per operator since the previous call.
  m.def("_take_op_counts", [] {
    aten::OpCounts counts = aten::take_op_counts();
    return std::make_pair(counts.fallback, counts.synchronizing);
  });
  m.def("_faults_check", &check_fault_spec);
  m.def("_faults_push", &push_faults);
  m.def("_faults_pop", &pop_faults);
  m.def("_set_record_launch_sites", &set_record_launch_sites);
}

}  // namespace foo::python
