// torch.foo.MemPool's C++ half and use_mem_pool's entry and exit.
#include <memory>
#include <utility>

#include "python/Bindings.h"
#include "runtime/FooCachingAllocator.h"
#include "runtime/FooMemPool.h"

namespace py = pybind11;

namespace foo::python {

namespace {

using PoolId = std::pair<uint64_t, uint64_t>;

c10::MempoolId_t pool_id(const PoolId& id) { return {id.first, id.second}; }

}  // namespace

void bind_mem_pools(py::module& m) {
  // The allocator's locks are taken without the GIL, as everywhere; the
  // last release of a pool may also wait for streams that still use it.
  py::class_<FooMemPool, std::shared_ptr<FooMemPool>>(m, "_MemPool")
      .def(py::init([](bool use_on_oom, bool no_split) {
        py::gil_scoped_release no_gil;
        return std::shared_ptr<FooMemPool>(new FooMemPool(use_on_oom, no_split), [](FooMemPool* pool) {
          py::gil_scoped_release released;
          delete pool;
        });
      }), py::arg("use_on_oom"), py::arg("no_split"))
      .def_property_readonly("id", [](const FooMemPool& p) { return PoolId(p.id().first, p.id().second); })
      .def_property_readonly("device", [](const FooMemPool& p) { return static_cast<int>(p.device()); })
      .def("use_count", &FooMemPool::use_count, py::call_guard<py::gil_scoped_release>());
  m.def(
      "_begin_allocate_current_thread_to_pool",
      [](int64_t device, const PoolId& id) { begin_allocate_current_thread_to_pool(device_index(device), pool_id(id)); },
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "_end_allocate_to_pool",
      [](int64_t device, const PoolId& id) { end_allocate_to_pool(device_index(device), pool_id(id)); },
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "_release_pool", [](int64_t device, const PoolId& id) { release_pool(device_index(device), pool_id(id)); },
      py::call_guard<py::gil_scoped_release>());
}

}  // namespace foo::python
