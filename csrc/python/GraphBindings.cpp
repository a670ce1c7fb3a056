// Graph capture helpers for torch.foo; the graph itself is torch's
// _acceleratorGraph over FooGraphImpl.
#include "python/Bindings.h"

#include "runtime/FooCachingAllocator.h"
#include "runtime/FooGraphsUtils.h"
#include "runtime/FooStream.h"

namespace foo::python {

void bind_graphs(pybind11::module& m) {
  m.def("_graph_pool_handle", [] { return foo::graph_pool_handle(); });
  m.def("_is_current_stream_capturing", [] { return foo::is_capturing(foo::getCurrentFooStream()); });
  m.def("_graph_pool_use_count", [](c10::DeviceIndex device, std::pair<uint64_t, uint64_t> pool) {
    return foo::pool_use_count(device, {pool.first, pool.second});
  });
}

}  // namespace foo::python
