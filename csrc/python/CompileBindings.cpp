#include <cstdint>

#include <torch/csrc/autograd/python_variable.h>

#include "aten/CompiledKernels.h"
#include "aten/Convolution.h"
#include "python/Bindings.h"

namespace py = pybind11;

namespace foo::python {

namespace {

// Tensors, ints (and bools) and floats, taken at the time of the call.
void add_kernel_arg(aten::CompiledKernelArgs& args, PyObject* obj, size_t n) {
  if (THPVariable_Check(obj)) {
    args.add_tensor(THPVariable_Unpack(obj));
  } else if (PyLong_Check(obj)) {
    int64_t v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    args.add_int(v);
  } else if (PyFloat_Check(obj)) {
    args.add_double(PyFloat_AS_DOUBLE(obj));
  } else {
    throw py::type_error("torch.compile kernel launch: argument " + std::to_string(n) +
                         " is neither a tensor, an int nor a float: " +
                         py::str(py::type::of(py::handle(obj))).cast<std::string>());
  }
}

}  // namespace

// torch.compile: queueing inductor's compiled C++ kernels on foo streams.
void bind_compile(py::module& m) {
  m.def("_launch_compiled_kernel", [](uintptr_t fn, int device, py::tuple args) {
    aten::CompiledKernelArgs packed;
    for (size_t n = 0; n < args.size(); ++n) add_kernel_arg(packed, args[n].ptr(), n);
    aten::launch_compiled_kernel(static_cast<c10::DeviceIndex>(device),
                                 reinterpret_cast<aten::PackedKernelFn>(fn), std::move(packed));
  });
  m.def("_name_compiled_kernel", [](uintptr_t fn, const std::string& name) {
    aten::name_compiled_kernel(reinterpret_cast<aten::PackedKernelFn>(fn), name);
  });
  // The layout of a foo convolution's output, for fake tensors.
  m.def("_convolution_memory_format", [](const at::Tensor& input, const at::Tensor& weight) {
    return aten::convolution_memory_format(input, weight);
  });
}

}  // namespace foo::python
