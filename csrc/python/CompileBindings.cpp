#include <cstdint>

#include <torch/csrc/autograd/python_variable.h>

#include "aten/CompiledKernels.h"
#include "aten/Convolution.h"
#include "aten/RaceAccesses.h"
#include "python/Bindings.h"

namespace py = pybind11;

namespace foo::python {

namespace {

// Tensors, ints (and bools) and floats, taken at the time of the call;
// with `tensors`, each tensor also at its position there.
void add_kernel_arg(aten::CompiledKernelArgs& args, PyObject* obj, size_t n, std::vector<at::Tensor>* tensors) {
  if (THPVariable_Check(obj)) {
    const at::Tensor& t = THPVariable_Unpack(obj);
    args.add_tensor(t);
    if (tensors != nullptr) (*tensors)[n] = t;
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
  py::class_<aten::CompiledKernel>(m, "_CompiledKernel")
      .def(py::init([](uintptr_t fn, const std::string& name, std::vector<bool> writes) {
             return std::make_unique<aten::CompiledKernel>(reinterpret_cast<aten::PackedKernelFn>(fn), name,
                                                           std::move(writes));
           }),
           py::arg("address"), py::arg("name"), py::arg("writes"));
  m.def("_launch_compiled_kernel", [](const aten::CompiledKernel& kernel, int device, py::tuple args) {
    aten::CompiledKernelArgs packed;
    // The tensors by position only for the race detector: off, a launch pays nothing for it.
    std::vector<at::Tensor> tensors;
    if (aten::race_check_on()) tensors.resize(args.size());
    for (size_t n = 0; n < args.size(); ++n) {
      add_kernel_arg(packed, args[n].ptr(), n, tensors.empty() ? nullptr : &tensors);
    }
    kernel.launch(static_cast<c10::DeviceIndex>(device), std::move(packed), tensors);
  });
  m.def("_live_compiled_kernels", &aten::CompiledKernel::live_count);
  // The layout of a foo convolution's output, for fake tensors.
  m.def("_convolution_memory_format", [](const at::Tensor& input, const at::Tensor& weight) {
    return aten::convolution_memory_format(input, weight);
  });
}

}  // namespace foo::python
