// The foo operator namespace: an example of custom operators for vendors.
//
//   foo::mymuladd(Tensor a, Tensor b, float c) -> Tensor          a * b + c
//   foo::scaled_silu(Tensor x, float scale) -> Tensor             scale * x * sigmoid(x)
//   foo::scaled_silu_backward(Tensor grad, Tensor x, float scale) -> Tensor
//
// Each has CPU, PrivateUse1 (queued on the stream) and Meta (shapes only,
// for fake tensors) kernels. Autograd is in CustomOpsAutograd.cpp.
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sigmoid.h>
#include <torch/library.h>

#include "aten/Launch.h"
#include "aten/TensorInfo.h"

namespace foo::aten {
namespace {

void check_pair(const char* op, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.sizes() == b.sizes(), op, ": the tensors must have the same shape, got ", a.sizes(), " and ",
              b.sizes());
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), op, ": the tensors must have the same dtype, got ",
              a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK(a.device() == b.device(), op, ": the tensors must be on the same device, got ", a.device(), " and ",
              b.device());
  TORCH_CHECK(at::isFloatingType(a.scalar_type()), op, ": expected floating-point tensors, got ", a.scalar_type());
}

// The computations, on CPU tensors (the CPU kernels' arguments, or CPU
// aliases of foo memory inside a foo kernel).
void muladd_into(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, double c) {
  at::mul_out(out, a, b);
  out.add_(c);
}

void scaled_silu_into(at::Tensor& out, const at::Tensor& x, double scale) {
  at::mul_out(out, x, at::sigmoid(x));
  out.mul_(scale);
}

// d/dx [scale * x * s(x)] = scale * s(x) * (1 + x * (1 - s(x)))
void scaled_silu_backward_into(at::Tensor& out, const at::Tensor& grad, const at::Tensor& x, double scale) {
  at::Tensor s = at::sigmoid(x);
  at::mul_out(out, s, (x * (1 - s)).add_(1));
  out.mul_(grad).mul_(scale);
}

// ------------------------------------------------------------------ CPU and Meta

at::Tensor mymuladd_cpu(const at::Tensor& a, const at::Tensor& b, double c) {
  check_pair("foo::mymuladd", a, b);
  at::Tensor out = at::empty_like(a, at::MemoryFormat::Contiguous);
  muladd_into(out, a, b, c);
  return out;
}

at::Tensor scaled_silu_cpu(const at::Tensor& x, double scale) {
  TORCH_CHECK(at::isFloatingType(x.scalar_type()), "foo::scaled_silu: expected a floating-point tensor, got ",
              x.scalar_type());
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  scaled_silu_into(out, x, scale);
  return out;
}

at::Tensor scaled_silu_backward_cpu(const at::Tensor& grad, const at::Tensor& x, double scale) {
  check_pair("foo::scaled_silu_backward", grad, x);
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  scaled_silu_backward_into(out, grad, x, scale);
  return out;
}

at::Tensor mymuladd_meta(const at::Tensor& a, const at::Tensor& b, double) {
  check_pair("foo::mymuladd", a, b);
  return at::empty_like(a, at::MemoryFormat::Contiguous);
}

at::Tensor scaled_silu_meta(const at::Tensor& x, double) { return at::empty_like(x, at::MemoryFormat::Contiguous); }

at::Tensor scaled_silu_backward_meta(const at::Tensor& grad, const at::Tensor& x, double) {
  check_pair("foo::scaled_silu_backward", grad, x);
  return at::empty_like(x, at::MemoryFormat::Contiguous);
}

// ------------------------------------------------------------------------- foo

at::Tensor mymuladd_foo(const at::Tensor& a, const at::Tensor& b, double c) {
  at::Tensor out = mymuladd_meta(a, b, c);
  if (out.numel() == 0) return out;
  launch_op(a.device().index(), "foo::mymuladd",
            [o = TensorInfo(out), ka = TensorInfo(a), kb = TensorInfo(b), c] {
              at::Tensor dst = o.cpu();
              muladd_into(dst, ka.cpu(), kb.cpu(), c);
            });
  return out;
}

at::Tensor scaled_silu_foo(const at::Tensor& x, double scale) {
  TORCH_CHECK(at::isFloatingType(x.scalar_type()), "foo::scaled_silu: expected a floating-point tensor, got ",
              x.scalar_type());
  at::Tensor out = scaled_silu_meta(x, scale);
  if (out.numel() == 0) return out;
  launch_op(x.device().index(), "foo::scaled_silu", [o = TensorInfo(out), kx = TensorInfo(x), scale] {
    at::Tensor dst = o.cpu();
    scaled_silu_into(dst, kx.cpu(), scale);
  });
  return out;
}

at::Tensor scaled_silu_backward_foo(const at::Tensor& grad, const at::Tensor& x, double scale) {
  at::Tensor out = scaled_silu_backward_meta(grad, x, scale);
  if (out.numel() == 0) return out;
  launch_op(x.device().index(), "foo::scaled_silu_backward",
            [o = TensorInfo(out), kg = TensorInfo(grad), kx = TensorInfo(x), scale] {
              at::Tensor dst = o.cpu();
              scaled_silu_backward_into(dst, kg.cpu(), kx.cpu(), scale);
            });
  return out;
}

TORCH_LIBRARY(foo, m) {
  m.def("mymuladd(Tensor a, Tensor b, float c) -> Tensor");
  m.def("scaled_silu(Tensor x, float scale) -> Tensor");
  m.def("scaled_silu_backward(Tensor grad, Tensor x, float scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(foo, CPU, m) {
  m.impl("mymuladd", TORCH_FN(mymuladd_cpu));
  m.impl("scaled_silu", TORCH_FN(scaled_silu_cpu));
  m.impl("scaled_silu_backward", TORCH_FN(scaled_silu_backward_cpu));
}

TORCH_LIBRARY_IMPL(foo, Meta, m) {
  m.impl("mymuladd", TORCH_FN(mymuladd_meta));
  m.impl("scaled_silu", TORCH_FN(scaled_silu_meta));
  m.impl("scaled_silu_backward", TORCH_FN(scaled_silu_backward_meta));
}

TORCH_LIBRARY_IMPL(foo, PrivateUse1, m) {
  m.impl("mymuladd", TORCH_FN(mymuladd_foo));
  m.impl("scaled_silu", TORCH_FN(scaled_silu_foo));
  m.impl("scaled_silu_backward", TORCH_FN(scaled_silu_backward_foo));
}

}  // namespace
}  // namespace foo::aten
