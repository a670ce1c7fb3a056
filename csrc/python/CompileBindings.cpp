#include <cstdint>
#include <vector>

#include <torch/csrc/autograd/python_variable.h>

#include "aten/CompiledKernels.h"
#include "python/Bindings.h"

namespace py = pybind11;

namespace foo::python {

namespace {

// Tensors become their data pointers, ints and bools 64-bit integers,
// floats doubles: the values at the time of the call.
aten::CompiledKernelArg to_kernel_arg(PyObject* obj, size_t n) {
  aten::CompiledKernelArg a{};
  if (THPVariable_Check(obj)) {
    a.ptr = THPVariable_Unpack(obj).data_ptr();
  } else if (PyLong_Check(obj)) {
    a.i = PyLong_AsLongLong(obj);
    if (a.i == -1 && PyErr_Occurred()) throw py::error_already_set();
  } else if (PyFloat_Check(obj)) {
    a.d = PyFloat_AS_DOUBLE(obj);
  } else {
    throw py::type_error("torch.compile kernel launch: argument " + std::to_string(n) +
                         " is neither a tensor, an int nor a float: " +
                         py::str(py::type::of(py::handle(obj))).cast<std::string>());
  }
  return a;
}

}  // namespace

// torch.compile: queueing inductor's compiled C++ kernels on foo streams.
void bind_compile(py::module& m) {
  m.def("_launch_compiled_kernel", [](uintptr_t fn, int device, py::tuple args) {
    std::vector<aten::CompiledKernelArg> packed;
    packed.reserve(args.size());
    for (size_t n = 0; n < args.size(); ++n) packed.push_back(to_kernel_arg(args[n].ptr(), n));
    aten::launch_compiled_kernel(static_cast<c10::DeviceIndex>(device),
                                 reinterpret_cast<aten::PackedKernelFn>(fn), std::move(packed));
  });
}

}  // namespace foo::python
