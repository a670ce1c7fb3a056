// Which kernel F.scaled_dot_product_attention takes on foo. ATen's
// composite asks the device type's _fused_sdp_choice_stub (past the
// dispatcher; its Meta kernel asks the same stub for fake foo tensors, so
// torch.compile traces the same choice). foo's fused kernel is CPU's flash
// attention run on the stream (Attention.cpp), served as PyTorch's
// OVERRIDEABLE backend; it is taken where CPU's flash kernel can serve, with
// CPU's rules, and the math composite elsewhere, as CUDA falls back to math.
#include <ATen/Context.h>
#include <ATen/core/grad_mode.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/native/transformers/sdp_utils_cpp.h>
#include <torch/library.h>

namespace foo::aten {
namespace {

bool check_head_dims_equal(const sdp::sdp_params& params, bool debug) {
  const c10::SymInt& e = params.query.sym_size(-1);
  if (e == params.key.sym_size(-1) && e == params.value.sym_size(-1)) return true;
  if (debug) {
    TORCH_WARN("foo's fused attention requires query, key and value to have the same last dimension. Got ",
               "Query.size(-1): ", e, ", Key.size(-1): ", params.key.sym_size(-1), ", Value.size(-1): ",
               params.value.sym_size(-1), " instead.");
  }
  return false;
}

// float64 goes to math: the overrideable schema's logsumexp is float32,
// which the backward of a double attention cannot use, and CUDA's fused
// kernels take no double either.
bool check_fused_dtype(const sdp::sdp_params& params, bool debug) {
  static constexpr std::array<at::ScalarType, 3> kDtypes{at::kFloat, at::kHalf, at::kBFloat16};
  return sdp::check_tensor_dtype(params, kDtypes, debug);
}

// CPU's flash kernel's constraints (ATen's sdp_utils_cpp.h), in CPU's
// order, but dropout: foo's fused kernel does dropout, as CUDA's do.
bool can_use_fused(const sdp::sdp_params& params, bool debug) {
  using Check = bool (*)(const sdp::sdp_params&, bool);
  static constexpr Check kChecks[] = {
      sdp::check_nested_tensor,
      sdp::check_tensor_shapes,
      sdp::check_batch_size_and_num_heads_dense<true /*supports_gqa*/>,
      sdp::check_attn_mask_shape,
      check_head_dims_equal,
      sdp::check_nonzero_sequence_lengths_dense,
      sdp::check_last_dim_stride_equals_1_dense<false /*ignore_singleton_dim*/>,
      check_fused_dtype,
  };
  for (Check check : kChecks) {
    if (!check(params, debug)) return false;
  }
  return true;
}

int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                         std::optional<double> scale, bool enable_gqa) {
  const sdp::sdp_params params{query, key, value, attn_mask, dropout_p, is_causal, enable_gqa};
  auto& ctx = at::globalContext();
  // The fused kernel is CPU's flash attention: code that asks for flash
  // attention (sdpa_kernel(FLASH_ATTENTION), as written for CUDA) gets it.
  const bool fused_enabled = ctx.userEnabledOverrideableSDP() || ctx.userEnabledFlashSDP();
  TORCH_CHECK(fused_enabled || ctx.userEnabledMathSDP(), "No viable backend for scaled_dot_product_attention was ",
              "found. This is likely due to turning off both the math kernel and the fused kernels.");
  if (fused_enabled && can_use_fused(params, /*debug=*/false)) {
    return static_cast<int64_t>(sdp::SDPBackend::overrideable);
  }
  if (ctx.userEnabledMathSDP()) return static_cast<int64_t>(sdp::SDPBackend::math);
  // Only the fused kernel is allowed and it cannot serve: say why, as CPU does.
  TORCH_WARN("Flash attention kernel not used because:");
  can_use_fused(params, /*debug=*/true);
  TORCH_CHECK(false, "No available kernel.  Aborting execution.");
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_sdp_choice", TORCH_FN(fused_sdp_choice));
}

}  // namespace
}  // namespace foo::aten

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &foo::aten::fused_sdp_choice)
}  // namespace at::native
