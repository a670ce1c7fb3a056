#include <torch/csrc/Storage.h>

#include "python/Bindings.h"
#include "aten_runtime/FooIpc.h"
#include "runtime/FooIpcEvent.h"
#include "runtime/FooStream.h"

namespace py = pybind11;

namespace foo::python {

// Storage sharing for torch_foo/foo/_ipc.py's reductions, with the fields
// of torch.UntypedStorage._share_cuda_ and _new_shared_cuda.
void bind_ipc(py::module& m) {
  m.def("_share_storage", [](py::handle storage) {
    TORCH_CHECK_TYPE(THPStorage_Check(storage.ptr()), "_share_storage expects a torch.UntypedStorage");
    ipc::SharedStorage s = ipc::share(THPStorage_Unpack(storage.ptr()));
    py::object handle = s.handle.empty() ? py::object(py::none()) : py::object(py::bytes(s.handle));
    py::object event = s.event_handle.empty() ? py::object(py::none()) : py::object(py::bytes(s.event_handle));
    return py::make_tuple(s.device, handle, s.storage_size_bytes, s.storage_offset_bytes,
                          py::bytes(s.ref_counter_handle), s.ref_counter_offset, event, s.event_sync_required);
  });
  m.def("_new_shared_storage", [](int64_t device, py::bytes handle, size_t size, size_t offset,
                                  py::bytes ref_counter_handle, size_t ref_counter_offset, py::object event_handle,
                                  bool event_sync_required) {
    ipc::SharedStorage s;
    s.device = device_index(device);
    s.handle = handle;
    s.storage_size_bytes = size;
    s.storage_offset_bytes = offset;
    s.ref_counter_handle = ref_counter_handle;
    s.ref_counter_offset = ref_counter_offset;
    if (!event_handle.is_none()) s.event_handle = event_handle.cast<std::string>();
    s.event_sync_required = event_sync_required;
    c10::Storage storage;
    {
      py::gil_scoped_release no_gil;
      storage = ipc::open(s);
    }
    return py::reinterpret_steal<py::object>(THPStorage_Wrap(std::move(storage)));
  });
  m.def("_release_ipc_counter", [](py::bytes ref_counter_handle, size_t ref_counter_offset) {
    ipc::release_counter(ref_counter_handle, ref_counter_offset);
  });
  m.def("_ipc_collect", [] { return ipc::collect(); }, py::call_guard<py::gil_scoped_release>());
  m.def("_ipc_limbo_size", &ipc::limbo_size);

  py::class_<FooIpcEvent>(m, "_IpcEvent")
      .def(py::init([](int64_t device) { return new FooIpcEvent(device_index(device)); }))
      .def(py::init([](int64_t device, py::bytes handle) { return new FooIpcEvent(device_index(device), handle); }))
      .def_property_readonly("device_index", &FooIpcEvent::device_index)
      .def("record", [](FooIpcEvent& e, c10::Stream s) { e.record(FooStream(s)); })
      .def("block", [](FooIpcEvent& e, c10::Stream s) { e.block(FooStream(s)); })
      .def("query", &FooIpcEvent::query)
      .def("synchronize", &FooIpcEvent::synchronize, py::call_guard<py::gil_scoped_release>())
      .def("ipc_handle", [](FooIpcEvent& e) { return py::bytes(e.ipc_handle()); });
}

}  // namespace foo::python
