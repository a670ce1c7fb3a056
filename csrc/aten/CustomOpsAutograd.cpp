// Autograd for the foo operators, as C++ torch::autograd::Functions
// registered for the Autograd key: torch.ops.foo.* differentiate on every
// device, and the backward of scaled_silu is itself an operator (so double
// backward works too).
#include <ATen/TensorOperators.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

namespace foo::aten {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor call_mymuladd(const at::Tensor& a, const at::Tensor& b, double c) {
  static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("foo::mymuladd", "").typed<decltype(call_mymuladd)>();
  return op.call(a, b, c);
}

at::Tensor call_scaled_silu(const at::Tensor& x, double scale) {
  static auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("foo::scaled_silu", "").typed<decltype(call_scaled_silu)>();
  return op.call(x, scale);
}

at::Tensor call_scaled_silu_backward(const at::Tensor& grad, const at::Tensor& x, double scale) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("foo::scaled_silu_backward", "")
                       .typed<decltype(call_scaled_silu_backward)>();
  return op.call(grad, x, scale);
}

struct MulAddFunction : public torch::autograd::Function<MulAddFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b, double c) {
    ctx->save_for_backward({a, b});
    at::AutoDispatchBelowADInplaceOrView guard;
    return call_mymuladd(a, b, c);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& g = grads[0];
    return {g * saved[1], g * saved[0], at::Tensor()};  // no gradient for the float c
  }
};

struct ScaledSiluFunction : public torch::autograd::Function<ScaledSiluFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, double scale) {
    ctx->save_for_backward({x});
    ctx->saved_data["scale"] = scale;
    at::AutoDispatchBelowADInplaceOrView guard;
    return call_scaled_silu(x, scale);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor x = ctx->get_saved_variables()[0];
    double scale = ctx->saved_data["scale"].toDouble();
    return {ScaledSiluBackwardFunction::apply(grads[0], x, scale), at::Tensor()};
  }

  // The backward is differentiable too: d/dgrad is the derivative itself,
  // d/dx is computed with autograd over ATen operators.
  struct ScaledSiluBackwardFunction : public torch::autograd::Function<ScaledSiluBackwardFunction> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& grad, const at::Tensor& x, double scale) {
      ctx->save_for_backward({grad, x});
      ctx->saved_data["scale"] = scale;
      at::AutoDispatchBelowADInplaceOrView guard;
      return call_scaled_silu_backward(grad, x, scale);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
      auto saved = ctx->get_saved_variables();
      double scale = ctx->saved_data["scale"].toDouble();
      at::Tensor grad = saved[0], x = saved[1], gg = grads[0];
      at::Tensor s = x.sigmoid();
      at::Tensor dydx = scale * s * (1 + x * (1 - s));
      at::Tensor d2ydx2 = scale * s * (1 - s) * (2 + x * (1 - 2 * s));
      return {gg * dydx, gg * grad * d2ydx2, at::Tensor()};
    }
  };
};

at::Tensor mymuladd_autograd(const at::Tensor& a, const at::Tensor& b, double c) {
  return MulAddFunction::apply(a, b, c);
}

at::Tensor scaled_silu_autograd(const at::Tensor& x, double scale) { return ScaledSiluFunction::apply(x, scale); }

at::Tensor scaled_silu_backward_autograd(const at::Tensor& grad, const at::Tensor& x, double scale) {
  return ScaledSiluFunction::ScaledSiluBackwardFunction::apply(grad, x, scale);
}

TORCH_LIBRARY_IMPL(foo, Autograd, m) {
  m.impl("mymuladd", TORCH_FN(mymuladd_autograd));
  m.impl("scaled_silu", TORCH_FN(scaled_silu_autograd));
  m.impl("scaled_silu_backward", TORCH_FN(scaled_silu_backward_autograd));
}

}  // namespace
}  // namespace foo::aten
