// The gradient of attention's additive mask (attn_bias), which CPU's flash
// kernel does not compute and CUDA's memory-efficient kernel does: the
// gradient of the scores, dS = P * (dP - D), with P the forward's weights
// rebuilt from the scores and the logsumexp, dP = grad_out V^T (scaled by
// the kept weights with dropout) and D the rows of grad_out * out summed,
// then summed over the dimensions the mask broadcasts on. It builds the
// (B, H, L, S) scores, as CUDA's kernel writes a (B, H, L, S) gradient.
//
// All tensors are CPU views (B, H, L, E), or (B, H_kv, S, E) with H a
// multiple of H_kv; logsumexp (B, H, L) float32; `kept` the forward's kept
// weights (bool, (B, H, L, S)) when it had dropout `dropout_p`.
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>

namespace foo::aten {

void attention_bias_backward(const at::Tensor& grad_bias, const at::Tensor& grad_out, const at::Tensor& query,
                             const at::Tensor& key, const at::Tensor& value, const at::Tensor& out,
                             const at::Tensor& logsumexp, const at::Tensor& mask, bool is_causal,
                             std::optional<double> scale, const std::optional<at::Tensor>& kept, double dropout_p);

}  // namespace foo::aten
