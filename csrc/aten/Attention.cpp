// Fused scaled dot-product attention on foo: PyTorch's overrideable SDPA
// operator and its backward, queued on the current stream, running CPU's
// flash-attention kernels (ATen's flash_attention_kernel stubs) on CPU
// aliases of the foo tensors, writing straight into the foo outputs; with
// dropout, which CPU's kernels lack, foo's own (AttentionDropout.h), its
// numbers from the device's generator as foo's other random kernels draw
// them. The attention matrix is never built: a call allocates only its
// output and the logsumexp (one float per query row and head).
//
// Layouts are those of the operator's meta function (PyTorch's
// _meta_registrations.py), so eager and compiled code agree: the output
// like the query, logsumexp (B, H, L) float32, gradients like their inputs.
// CPU's kernels take (B, L, H, E) views of all of them, index them by their
// strides and need the last dimension dense; they do GQA themselves (heads
// of query a multiple of those of key and value). Calling a stub needs
// libtorch_cpu's CPU-capability declarations, which the build passes to
// every operator source (cmake/DispatchStubAbi.cmake).

#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "aten/AttentionBiasGrad.h"
#include "aten/AttentionDropout.h"
#include "aten/DeviceCheck.h"
#include "aten/Launch.h"
#include "aten/TensorInfo.h"
#include "aten_runtime/FooGenerator.h"

namespace foo::aten {
namespace {

constexpr const char* kForward = "aten::_scaled_dot_product_fused_attention_overrideable";
constexpr const char* kBackward = "aten::_scaled_dot_product_fused_attention_overrideable_backward";

// The (B, H, L, E) form of a 3-D (H, L, E) or 4-D input.
at::Tensor four_d(const at::Tensor& t) { return t.dim() == 3 ? t.unsqueeze(0) : t; }

// What CPU's _scaled_dot_product_flash_attention_for_cpu checks before it
// runs its kernel, with its messages, and what its kernel assumes without
// checking (it would read out of bounds), made on the host at the call.
void check_inputs(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                  const std::optional<at::Tensor>& attn_mask, double dropout_p, const char* op_name) {
  const c10::Device device = query.device();
  check_same_device(device, key, op_name);
  check_same_device(device, value, op_name);
  if (attn_mask) check_same_device(device, *attn_mask, op_name);
  const at::ScalarType dtype = query.scalar_type();
  TORCH_CHECK(c10::isFloatingType(dtype),
              "scaled_dot_product_attention_flash_attention: Expected data type in FP32, FP64, BF16, FP16, but got ",
              dtype, " instead.");
  TORCH_CHECK(dtype != at::kDouble, op_name, ": foo's fused attention takes float32, float16 and bfloat16 "
              "(its logsumexp is float32); float64 attention takes the math kernel");
  TORCH_CHECK(key.scalar_type() == dtype && value.scalar_type() == dtype,
              "Expected query, key, and value to have the same dtype, but got query.dtype: ", dtype,
              " key.dtype: ", key.scalar_type(), " and value.dtype: ", value.scalar_type(), " instead.");
  TORCH_CHECK(query.dim() == key.dim() && query.dim() == value.dim() && (query.dim() == 4 || query.dim() == 3),
              "scaled_dot_product_attention_flash_attention: Accept only 4 dims inputs shape of {B, H, T, K}");
  TORCH_CHECK(dropout_p >= 0 && dropout_p <= 1, "dropout probability has to be between 0 and 1, but got ", dropout_p);
  TORCH_CHECK(query.size(-1) == value.size(-1) && key.size(-1) == value.size(-1),
              "scaled_dot_product_attention_flash_attention: Q/K/V should have the same head size");
  const at::Tensor q = four_d(query), k = four_d(key), v = four_d(value);
  TORCH_CHECK(q.size(0) == k.size(0) && q.size(0) == v.size(0) && k.size(1) == v.size(1) && k.size(2) == v.size(2) &&
                  (k.size(1) > 0 ? q.size(1) % k.size(1) == 0 : q.size(1) == 0),
              op_name, ": expected key and value of one shape (B, H_kv, S, E) and query (B, H, L, E) with H a ",
              "multiple of H_kv; got query ", query.sizes(), ", key ", key.sizes(), ", value ", value.sizes());
  TORCH_CHECK(q.numel() == 0 || (k.size(2) > 0 && q.size(3) > 0), op_name,
              ": the fused kernel needs nonzero key sequence length and head size; got query ", query.sizes(),
              ", key ", key.sizes());
  if (!attn_mask) return;
  const at::Tensor& mask = *attn_mask;
  TORCH_CHECK(mask.scalar_type() == at::kFloat || mask.scalar_type() == dtype,
              "scaled_dot_product_attention_flash_attention: Attention mask is the same data type as query");
  TORCH_CHECK(mask.dim() == 2 || mask.dim() == 4,
              "scaled_dot_product_attention_flash_attention: Attention mask dim in {2, 4}");
  auto fits = [](int64_t size, int64_t target) { return size == target || size == 1; };
  TORCH_CHECK(fits(mask.size(-2), q.size(2)) && fits(mask.size(-1), k.size(2)) &&
                  (mask.dim() == 2 || (fits(mask.size(0), q.size(0)) && fits(mask.size(1), q.size(1)))),
              op_name, ": attn_bias of sizes ", mask.sizes(), " does not broadcast to the attention's (B, H, L, S) = (",
              q.size(0), ", ", q.size(1), ", ", q.size(2), ", ", k.size(2), ")");
}

// A CPU view with a dense last dimension, as CPU's kernels index: `t`
// itself, or a contiguous copy.
at::Tensor dense_rows(const at::Tensor& t) { return t.stride(-1) == 1 ? t : t.contiguous(); }

// Runs `kernel` writing into `outs` (CPU aliases), through contiguous
// temporaries for any whose last dimension is not dense, copied back.
template <class F>
void into_dense_rows(std::vector<at::Tensor> outs, F kernel) {
  std::vector<at::Tensor> targets;
  for (const at::Tensor& o : outs) targets.push_back(o.stride(-1) == 1 ? o : at::empty(o.sizes(), o.options()));
  kernel(targets);
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!targets[i].is_same(outs[i])) outs[i].copy_(targets[i]);
  }
}

std::optional<at::Tensor> mask_of(const std::optional<TensorInfo>& mask) {
  if (!mask) return std::nullopt;
  // A 2-D mask broadcasts over (B, H) in CPU's kernel as it is; a 4-D one
  // is read by its strides, its last dimension dense.
  return dense_rows(mask->cpu());
}

// The seed of a dropout call's blocks (AttentionDropout.h): drawn when the
// kernel runs from the generator state it was launched with (in a graph,
// the replay's), and handed to the backward in a foo tensor, in stream order.
struct DropoutSeed {
  PhiloxFooState rng;
  TensorInfo seed;  // int64, 0-dim
  uint64_t draw() const {
    at::Generator gen = rng.generator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    return gen.get<at::CPUGeneratorImpl>()->random64();
  }
};

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor, at::Tensor, at::Tensor>
fused_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                const std::optional<at::Tensor>& attn_bias, double dropout_p, bool is_causal, bool return_debug_mask,
                std::optional<double> scale) {
  std::optional<at::Tensor> mask = attn_bias.has_value() && attn_bias->defined() ? attn_bias : std::nullopt;
  check_inputs(query, key, value, mask, dropout_p, kForward);
  const c10::Device device = query.device();
  at::Tensor output = at::empty_like(query);
  const at::Tensor q = four_d(query), k = four_d(key), v = four_d(value);
  at::Tensor logsumexp = at::empty({q.size(0), q.size(1), q.size(2)}, query.options().dtype(at::kFloat));
  if (dropout_p == 0) {
    if (output.numel() > 0) {
      launch_op(device.index(), kForward,
                [q = TensorInfo(q), k = TensorInfo(k), v = TensorInfo(v),
                 m = mask ? std::optional<TensorInfo>(*mask) : std::nullopt,
                 out = TensorInfo(four_d(output).transpose(1, 2)), lse = TensorInfo(logsumexp.transpose(1, 2)),
                 is_causal, scale] {
                  into_dense_rows({out.cpu()}, [&](const std::vector<at::Tensor>& o) {
                    at::native::flash_attention_kernel(at::kCPU, o[0], lse.cpu(), dense_rows(q.cpu()),
                                                       dense_rows(k.cpu()), dense_rows(v.cpu()), 0.0, is_causal,
                                                       mask_of(m), scale);
                  });
                });
    }
    // As CUDA's flash attention without dropout: no Philox state to hand on.
    return {output, logsumexp, at::Tensor(), at::Tensor(), c10::SymInt(q.size(2)), c10::SymInt(k.size(2)),
            at::empty({}, at::dtype(at::kLong)), at::empty({}, at::dtype(at::kLong)), at::Tensor()};
  }
  // With dropout: the seed on the device, as CUDA's kernels keep it under
  // graph capture (and always, here: the kernel draws it as it runs).
  at::Tensor philox_seed = at::empty({}, query.options().dtype(at::kLong));
  at::Tensor philox_offset = at::zeros({}, query.options().dtype(at::kLong));
  at::Tensor kept = return_debug_mask ? at::empty({q.size(0), q.size(1), q.size(2), k.size(2)},
                                                  query.options().dtype(at::kBool))
                                      : at::Tensor();
  PhiloxFooState rng;
  {
    at::Generator gen = default_generator(device.index());
    std::lock_guard<std::mutex> lock(gen.mutex());
    rng = gen.get<FooGeneratorImpl>()->philox_foo_state();
  }
  launch_op(device.index(), kForward,
            [q = TensorInfo(q), k = TensorInfo(k), v = TensorInfo(v),
             m = mask ? std::optional<TensorInfo>(*mask) : std::nullopt, out = TensorInfo(four_d(output)),
             lse = TensorInfo(logsumexp), kept = kept.defined() ? std::optional<TensorInfo>(kept) : std::nullopt,
             seed = DropoutSeed{rng, TensorInfo(philox_seed)}, dropout_p, is_causal, scale] {
              const uint64_t drawn = seed.draw();
              seed.seed.cpu().fill_(static_cast<int64_t>(drawn));
              attention_with_dropout(out.cpu(), lse.cpu(), q.cpu(), k.cpu(), v.cpu(),
                                     m ? std::optional<at::Tensor>(m->cpu()) : std::nullopt, is_causal, scale,
                                     AttentionDropout{dropout_p, drawn},
                                     kept ? std::optional<at::Tensor>(kept->cpu()) : std::nullopt);
            });
  return {output,      logsumexp,     at::Tensor(), at::Tensor(), c10::SymInt(q.size(2)), c10::SymInt(k.size(2)),
          philox_seed, philox_offset, kept};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask, const at::Tensor& out,
    const at::Tensor& logsumexp, const at::Tensor& /*cum_seq_q*/, const at::Tensor& /*cum_seq_k*/, int64_t /*max_q*/,
    int64_t /*max_k*/, double dropout_p, bool is_causal, const at::Tensor& philox_seed,
    const at::Tensor& /*philox_offset*/, std::optional<double> scale) {
  std::optional<at::Tensor> mask = attn_bias.defined() ? std::optional<at::Tensor>(attn_bias) : std::nullopt;
  check_inputs(query, key, value, mask, dropout_p, kBackward);
  const c10::Device device = query.device();
  for (const at::Tensor* t : {&grad_out, &out, &logsumexp}) check_same_device(device, *t, kBackward);
  TORCH_CHECK(grad_out.sizes() == query.sizes() && out.sizes() == query.sizes() &&
                  grad_out.scalar_type() == query.scalar_type() && out.scalar_type() == query.scalar_type(),
              kBackward, ": grad_out and out must have the query's sizes and dtype; got grad_out ", grad_out.sizes(),
              " ", grad_out.scalar_type(), ", out ", out.sizes(), " ", out.scalar_type(), ", query ", query.sizes(),
              " ", query.scalar_type());
  const at::Tensor q = four_d(query);
  TORCH_CHECK(logsumexp.scalar_type() == at::kFloat &&
                  logsumexp.sizes() == at::IntArrayRef({q.size(0), q.size(1), q.size(2)}),
              kBackward, ": logsumexp must be float32 of sizes (B, H, L) of the query; got ", logsumexp.sizes(), " ",
              logsumexp.scalar_type());
  TORCH_CHECK(dropout_p == 0 || (philox_seed.defined() && philox_seed.device() == device &&
                                 philox_seed.scalar_type() == at::kLong && philox_seed.dim() == 0),
              kBackward, ": with dropout, philox_seed must be the forward's (an int64 scalar on ", device, ")");
  at::Tensor grad_q = at::empty_like(query), grad_k = at::empty_like(key), grad_v = at::empty_like(value);
  // The mask's gradient, as CUDA's memory-efficient kernel gives it.
  at::Tensor grad_bias = mask && grad_input_mask[3] ? at::zeros_like(*mask) : at::Tensor();
  if (grad_q.numel() + grad_k.numel() + grad_v.numel() == 0) return {grad_q, grad_k, grad_v, grad_bias};
  std::optional<TensorInfo> gb = grad_bias.defined() ? std::optional<TensorInfo>(grad_bias) : std::nullopt;
  if (dropout_p == 0) {
    auto blhe = [](const at::Tensor& t) { return TensorInfo(four_d(t).transpose(1, 2)); };
    launch_op(device.index(), kBackward,
              [go = blhe(grad_out), q = blhe(query), k = blhe(key), v = blhe(value), o = blhe(out),
               lse = TensorInfo(logsumexp.transpose(1, 2)),
               m = mask ? std::optional<TensorInfo>(*mask) : std::nullopt, gq = blhe(grad_q), gk = blhe(grad_k),
               gv = blhe(grad_v), gb, is_causal, scale] {
                into_dense_rows({gq.cpu(), gk.cpu(), gv.cpu()}, [&](const std::vector<at::Tensor>& g) {
                  for (const at::Tensor& t : g) t.zero_();  // the kernel accumulates into them
                  at::native::flash_attention_backward_kernel(
                      at::kCPU, g[0], g[1], g[2], go.cpu(), dense_rows(q.cpu()), dense_rows(k.cpu()),
                      dense_rows(v.cpu()), dense_rows(o.cpu()), lse.cpu(), 0.0, is_causal, mask_of(m), scale);
                });
                if (gb) {
                  auto bhle = [](const TensorInfo& t) { return t.cpu().transpose(1, 2); };
                  attention_bias_backward(gb->cpu(), bhle(go), bhle(q), bhle(k), bhle(v), bhle(o), bhle(lse),
                                          m->cpu(), is_causal, scale, std::nullopt, 0.0);
                }
              });
  } else {
    auto bhle = [](const at::Tensor& t) { return TensorInfo(four_d(t)); };
    launch_op(device.index(), kBackward,
              [go = bhle(grad_out), q = bhle(query), k = bhle(key), v = bhle(value), o = bhle(out),
               lse = TensorInfo(logsumexp), m = mask ? std::optional<TensorInfo>(*mask) : std::nullopt,
               gq = bhle(grad_q), gk = bhle(grad_k), gv = bhle(grad_v), gb, seed = TensorInfo(philox_seed),
               dropout_p, is_causal, scale] {
                const auto drawn = static_cast<uint64_t>(seed.cpu().item<int64_t>());
                const std::optional<at::Tensor> cpu_mask = m ? std::optional<at::Tensor>(m->cpu()) : std::nullopt;
                attention_with_dropout_backward(gq.cpu(), gk.cpu(), gv.cpu(), go.cpu(), q.cpu(), k.cpu(), v.cpu(),
                                                o.cpu(), lse.cpu(), cpu_mask, is_causal, scale,
                                                AttentionDropout{dropout_p, drawn});
                if (gb) {
                  // The forward's kept weights, regenerated from its seed.
                  at::Tensor kept = at::empty({q.cpu().size(0), q.cpu().size(1), q.cpu().size(2), k.cpu().size(2)},
                                              at::dtype(at::kBool));
                  attention_with_dropout(at::empty_like(o.cpu()), at::empty_like(lse.cpu()), q.cpu(), k.cpu(),
                                         v.cpu(), cpu_mask, is_causal, scale, AttentionDropout{dropout_p, drawn},
                                         kept);
                  attention_bias_backward(gb->cpu(), go.cpu(), q.cpu(), k.cpu(), v.cpu(), o.cpu(), lse.cpu(),
                                          *cpu_mask, is_causal, scale, kept, dropout_p);
                }
              });
  }
  return {grad_q, grad_k, grad_v, grad_bias};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(fused_attention));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", TORCH_FN(fused_attention_backward));
}

}  // namespace
}  // namespace foo::aten
