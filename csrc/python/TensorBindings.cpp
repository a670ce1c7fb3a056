#include <pybind11/stl.h>

#include "aten/Fallback.h"
#include "aten/OpCounts.h"
#include "aten_runtime/FooGenerator.h"
#include "aten_runtime/FooHostAllocator.h"
#include "aten_runtime/FooSerialization.h"
#include "aten_runtime/Philox.h"
#include "python/Bindings.h"
#include "runtime/FooFunctions.h"

namespace py = pybind11;

namespace foo::python {

// Tensor-level services: the fallback's log, generators, backend metadata.
void bind_tensors(py::module& m) {
  m.def("_fallback_ops", &aten::fallback_ops);
  // The pinned host allocator's counters, named as torch.cuda.host_memory_stats names them.
  m.def("_host_memory_stats", [] {
    at::HostStats s = getFooHostAllocator()->get_stats();
    std::map<std::string, int64_t> out;
    auto put = [&out](const std::string& name, const c10::CachingAllocator::Stat& stat) {
      out[name + ".current"] = stat.current;
      out[name + ".peak"] = stat.peak;
      out[name + ".allocated"] = stat.allocated;
      out[name + ".freed"] = stat.freed;
    };
    put("active_requests", s.active_requests);
    put("active_bytes", s.active_bytes);
    put("allocations", s.allocations);
    put("allocated_bytes", s.allocated_bytes);
    out["num_host_alloc"] = s.num_host_alloc;
    out["num_host_free"] = s.num_host_free;
    return out;
  });
  m.def("_synchronizing_ops", &aten::synchronizing_ops);
  // For the known-answer test of the generator's counter-based core.
  m.def("_philox4x32_10", &philox4x32_10);
  m.def("_set_backend_flag", &set_backend_flag);
  m.def("_backend_flags", &backend_flags);
  m.def("_default_generator", [](int64_t d) { return default_generator(device_index(d)); });
}

}  // namespace foo::python
