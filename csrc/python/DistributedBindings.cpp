// torch_foo._C._distributed: the fooccl backend class. Bound on demand
// (torch_foo.distributed calls _init_distributed) because its base class,
// c10d's Backend, exists in Python only once torch.distributed is loaded.
#include <pybind11/chrono.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/utils/pybind.h>

#include "distributed/FooBackend.h"
#include "python/Bindings.h"

namespace foo::python {

namespace py = pybind11;

void bind_distributed(py::module& m) {
  m.def("_init_distributed", [m]() mutable {
    if (py::hasattr(m, "_distributed")) return;
    py::module dist = m.def_submodule("_distributed", "fooccl, the c10d backend for foo tensors");
    py::class_<distributed::FooOptions, c10d::Backend::Options, c10::intrusive_ptr<distributed::FooOptions>>(
        dist, "FooOptions")
        .def("__deepcopy__", [](const distributed::FooOptions& o, const py::dict&) {
          return c10::make_intrusive<distributed::FooOptions>(o);
        });
    py::class_<distributed::FooBackend, c10d::Backend, c10::intrusive_ptr<distributed::FooBackend>>(dist, "FooBackend")
        .def(py::init<c10::intrusive_ptr<c10d::Backend>, c10::intrusive_ptr<c10d::Backend>,
                      c10::intrusive_ptr<c10d::Backend>, int, int, std::chrono::milliseconds>(),
             py::arg("gloo"), py::arg("fingerprints"), py::arg("host"), py::arg("rank"), py::arg("size"),
             py::arg("timeout"))
        .def_property_readonly("transport", &distributed::FooBackend::transport,
                               "The gloo process group that carries the data.")
        // What split_group copies for the new group (its timeout).
        .def_property_readonly("options", &distributed::FooBackend::getBackendOptions)
        // torch calls it on the parent of a group created by splitting, on
        // ranks outside the new group (NCCL's has to join the split there);
        // a fooccl split involves only the new group's ranks.
        .def("perform_nocolor_split", [](distributed::FooBackend&, const at::Device&) {});
    dist.def("_set_split_creator", [](py::object create) {
      auto* kept = new py::object(std::move(create));  // for the life of the process, as the creator
      distributed::FooBackend::set_creator(
          [kept](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout) {
            py::gil_scoped_acquire gil;
            return (*kept)(store, rank, size, timeout).cast<c10::intrusive_ptr<c10d::Backend>>();
          });
    });
  });
}

}  // namespace foo::python
