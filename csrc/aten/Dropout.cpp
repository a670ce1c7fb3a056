// native_dropout on foo. Its CPU kernel draws from the global CPU generator,
// so foo implements it here with the device's foo generator instead.
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ones_like.h>
#include <torch/library.h>

#include "aten/Launch.h"
#include "aten/TensorInfo.h"
#include "aten_runtime/FooGenerator.h"

namespace foo::aten {
namespace {

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (!train.value_or(true) || p == 0 || input.numel() == 0) {
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  at::Tensor output = at::empty_like(input);
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool));
  at::Generator gen = default_generator(input.device().index());
  PhiloxFooState rng;
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    rng = gen.get<FooGeneratorImpl>()->philox_foo_state();
  }
  launch_op(input.device().index(), "aten::native_dropout",
            [in = TensorInfo(input), out = TensorInfo(output), m = TensorInfo(mask), p, rng] {
              at::Tensor x = in.cpu();
              at::Tensor keep = at::empty_like(x).bernoulli_(1 - p, rng.generator());
              m.cpu().copy_(keep);
              double scale = p == 1 ? 0.0 : 1.0 / (1.0 - p);
              at::Tensor o = out.cpu();
              at::mul_out(o, x, keep);
              o.mul_(scale);
            });
  return {output, mask};
}

at::Tensor native_dropout_backward(const at::Tensor& grad_output, const at::Tensor& mask, double scale) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be Bool Scalar Type", mask.scalar_type());
  TORCH_CHECK(mask.device() == grad_output.device() && mask.sizes() == grad_output.sizes(),
              "native_dropout_backward: mask must match grad_output's shape and device");
  // CUDA's kernel exists for floating types only; CPU's would return a
  // float result for an integer gradient. foo refuses at the call, as CUDA.
  TORCH_CHECK(at::isFloatingType(grad_output.scalar_type()), "\"masked_scale\" not implemented for '",
              grad_output.scalar_type(), "'");
  at::Tensor grad_input = at::empty_like(grad_output);
  if (grad_input.numel() == 0) return grad_input;
  launch_op(grad_output.device().index(), "aten::native_dropout_backward",
            [g = TensorInfo(grad_output), m = TensorInfo(mask), out = TensorInfo(grad_input), scale] {
              at::Tensor o = out.cpu();
              at::mul_out(o, g.cpu(), m.cpu());
              o.mul_(scale);
            });
  return grad_input;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("native_dropout_backward", TORCH_FN(native_dropout_backward));
}

}  // namespace
}  // namespace foo::aten
