// Attention with dropout, which CPU's flash kernel does not do: blocks of
// query rows at a time, so that memory stays linear in the sequence length
// (a block's scores, its rows by all keys, of a bounded size, are the
// largest temporary).
// The dropout mask is a function of the call's seed and of each weight's
// place in the (B, H, L, S) attention (Philox4x32-10, as CUDA's dropout), so
// the backward regenerates exactly the forward's mask from the seed alone.
//
// All tensors are CPU views (B, H, L, E) or (B, H_kv, S, E) with H a
// multiple of H_kv; `mask` broadcasts to (B, H, L, S) and is added to the
// scores; logsumexp is (B, H, L) float32, of the scores before dropout.
#pragma once

#include <cstdint>
#include <optional>

#include <ATen/core/Tensor.h>

namespace foo::aten {

struct AttentionDropout {
  double p;       // the probability of dropping a weight, in (0, 1]
  uint64_t seed;  // the call's key for every block's generator
};

// Writes `out` and `logsumexp`, and the kept weights into `kept` (bool,
// (B, H, L, S)) if given.
void attention_with_dropout(const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor& query,
                            const at::Tensor& key, const at::Tensor& value, const std::optional<at::Tensor>& mask,
                            bool is_causal, std::optional<double> scale, AttentionDropout dropout,
                            const std::optional<at::Tensor>& kept);

// Writes the gradients (shaped as query, key, value) of the forward's `out`.
void attention_with_dropout_backward(const at::Tensor& grad_query, const at::Tensor& grad_key,
                                     const at::Tensor& grad_value, const at::Tensor& grad_out, const at::Tensor& query,
                                     const at::Tensor& key, const at::Tensor& value, const at::Tensor& out,
                                     const at::Tensor& logsumexp, const std::optional<at::Tensor>& mask,
                                     bool is_causal, std::optional<double> scale, AttentionDropout dropout);

}  // namespace foo::aten
