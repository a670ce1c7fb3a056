// The operators nn.SyncBatchNorm is made of: per-rank statistics, their
// combination across ranks, and the element-wise steps forward and
// backward. ATen has them for CUDA, XPU and MPS only (no CPU kernel for
// the fallback to run), so foo composes them from its own operators: every
// step is queued on the current stream like any other foo operator, and the
// host never waits.
// As CUDA's kernels: statistics in the accumulation type (float for half and
// bfloat16 input), results in the input's dtype and memory format, and an
// inverse standard deviation of 0 where variance and eps are both 0.
#include <ATen/ATen.h>
#include <ATen/AccumulateType.h>
#include <torch/library.h>

namespace foo::aten {
namespace {

using OptionalTensor = std::optional<at::Tensor>;

at::ScalarType accumulate_type(const at::Tensor& input) {
  return at::toAccumulateType(input.scalar_type(), c10::DeviceType::CUDA);
}

void check_input(const at::Tensor& input, const char* op) {
  TORCH_CHECK(input.dim() >= 2, op, ": expected an input with at least 2 dimensions (N, C, ...), got ",
              input.sizes());
}

// Every dimension but the channels' (dim 1).
std::vector<int64_t> reduced_dims(const at::Tensor& input) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  return dims;
}

// A per-channel vector shaped to broadcast against `input`: (1, C, 1, ...).
at::Tensor per_channel(const at::Tensor& v, const at::Tensor& input) {
  std::vector<int64_t> shape(input.dim(), 1);
  shape[1] = input.size(1);
  return v.view(shape);
}

bool present(const OptionalTensor& t) { return t.has_value() && t->defined(); }

at::Tensor inverse_std(const at::Tensor& var, double eps) {
  if (eps != 0) return at::rsqrt(var + eps);
  return at::where(var == 0, at::zeros_like(var), at::rsqrt(var));
}

std::tuple<at::Tensor, at::Tensor> sync_stats(const at::Tensor& input, double eps) {
  check_input(input, "batch_norm_stats");
  auto [var, mean] = at::var_mean(input.to(accumulate_type(input)), reduced_dims(input), /*correction=*/0);
  return {mean, inverse_std(var, eps)};
}

std::tuple<at::Tensor, at::Tensor> sync_gather_stats_with_counts(
    const at::Tensor& input, const at::Tensor& mean, const at::Tensor& invstd, const OptionalTensor& running_mean,
    const OptionalTensor& running_var, double momentum, double eps, const at::Tensor& counts) {
  check_input(input, "batch_norm_gather_stats_with_counts");
  TORCH_CHECK(mean.dim() == 2 && invstd.sizes() == mean.sizes() && counts.numel() == mean.size(0),
              "batch_norm_gather_stats_with_counts: expected mean and invstd of shape (ranks, channels) and one "
              "count per rank, got ", mean.sizes(), ", ", invstd.sizes(), " and ", counts.sizes());
  // Each rank's biased variance times its count is its sum of squared
  // deviations; around the global mean they add up with the spread of the
  // ranks' means.
  at::Tensor n_i = counts.to(mean.scalar_type()).view({-1, 1});
  at::Tensor n = n_i.sum();
  at::Tensor global_mean = (mean * n_i).sum(0) / n;
  at::Tensor var_i = invstd.reciprocal().square() - eps;
  at::Tensor squares = (var_i * n_i).sum(0) + ((mean - global_mean).square() * n_i).sum(0);
  at::Tensor global_invstd = inverse_std(squares / n, eps);
  // Running statistics as every batch norm updates them, the variance
  // unbiased.
  if (present(running_mean)) {
    at::Tensor updated = running_mean->to(global_mean.scalar_type()) * (1 - momentum) + global_mean * momentum;
    running_mean->copy_(updated);
  }
  if (present(running_var)) {
    at::Tensor unbiased = squares / (n - 1);
    at::Tensor updated = running_var->to(unbiased.scalar_type()) * (1 - momentum) + unbiased * momentum;
    running_var->copy_(updated);
  }
  return {global_mean, global_invstd};
}

std::tuple<at::Tensor, at::Tensor> sync_gather_stats(const at::Tensor& input, const at::Tensor& mean,
                                                           const at::Tensor& invstd, const OptionalTensor& running_mean,
                                                           const OptionalTensor& running_var, double momentum,
                                                           double eps, int64_t count) {
  TORCH_CHECK(mean.dim() == 2, "batch_norm_gather_stats: expected mean of shape (ranks, channels), got ",
              mean.sizes());
  at::Tensor counts = at::full({mean.size(0)}, static_cast<double>(count), mean.options());
  return sync_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts);
}

at::Tensor sync_elemt(const at::Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                            const at::Tensor& mean, const at::Tensor& invstd, double /*eps: in invstd already*/) {
  check_input(input, "batch_norm_elemt");
  at::Tensor out = (input.to(accumulate_type(input)) - per_channel(mean, input)) * per_channel(invstd, input);
  if (present(weight)) out = out * per_channel(*weight, input);
  if (present(bias)) out = out + per_channel(*bias, input);
  return out.to(input.scalar_type()).contiguous(input.suggest_memory_format());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> sync_backward_reduce(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean, const at::Tensor& invstd,
    const OptionalTensor& weight, bool input_g, bool weight_g, bool bias_g) {
  check_input(input, "batch_norm_backward_reduce");
  const auto acc = accumulate_type(input);
  const auto dims = reduced_dims(input);
  at::Tensor dy = grad_out.to(acc);
  at::Tensor sum_dy = dy.sum(dims);
  at::Tensor sum_dy_xmu = (dy * (input.to(acc) - per_channel(mean, input))).sum(dims);
  const auto param_dtype = present(weight) ? weight->scalar_type() : mean.scalar_type();
  at::Tensor grad_weight = weight_g ? (sum_dy_xmu * invstd).to(param_dtype) : at::Tensor();
  at::Tensor grad_bias = bias_g ? sum_dy.to(param_dtype) : at::Tensor();
  if (!input_g) sum_dy = sum_dy_xmu = at::Tensor();
  return {sum_dy, sum_dy_xmu, grad_weight, grad_bias};
}

at::Tensor sync_backward_elemt(const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean,
                                     const at::Tensor& invstd, const OptionalTensor& weight, const at::Tensor& sum_dy,
                                     const at::Tensor& sum_dy_xmu, const at::Tensor& count) {
  check_input(input, "batch_norm_backward_elemt");
  const auto acc = accumulate_type(input);
  // `count` holds every rank's element count per channel: their total is
  // the number the sums were taken over.
  at::Tensor n = count.sum().to(acc);
  at::Tensor s = per_channel(invstd, input);
  at::Tensor mean_dy = per_channel(sum_dy, input) / n;
  at::Tensor mean_dy_xmu = per_channel(sum_dy_xmu, input) / n;
  at::Tensor xmu = input.to(acc) - per_channel(mean, input);
  at::Tensor grad_in = (grad_out.to(acc) - mean_dy - xmu * s.square() * mean_dy_xmu) * s;
  if (present(weight)) grad_in = grad_in * per_channel(*weight, input);
  return grad_in.to(input.scalar_type()).contiguous(input.suggest_memory_format());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("batch_norm_stats", TORCH_FN(sync_stats));
  m.impl("batch_norm_gather_stats", TORCH_FN(sync_gather_stats));
  m.impl("batch_norm_gather_stats_with_counts", TORCH_FN(sync_gather_stats_with_counts));
  m.impl("batch_norm_elemt", TORCH_FN(sync_elemt));
  m.impl("batch_norm_backward_reduce", TORCH_FN(sync_backward_reduce));
  m.impl("batch_norm_backward_elemt", TORCH_FN(sync_backward_elemt));
}

}  // namespace foo::aten
