#include "aten/AttentionBiasGrad.h"

#include <cmath>
#include <limits>

#include <ATen/ExpandUtils.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>

namespace foo::aten {

void attention_bias_backward(const at::Tensor& grad_bias, const at::Tensor& grad_out, const at::Tensor& query,
                             const at::Tensor& key, const at::Tensor& value, const at::Tensor& out,
                             const at::Tensor& logsumexp, const at::Tensor& mask, bool is_causal,
                             std::optional<double> scale, const std::optional<at::Tensor>& kept, double dropout_p) {
  auto f32 = [](const at::Tensor& t) { return t.to(at::kFloat); };
  const int64_t group = query.size(1) / key.size(1);  // query heads per key/value head (GQA)
  const at::Tensor k = f32(key).repeat_interleave(group, 1), v = f32(value).repeat_interleave(group, 1);
  const double s = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  at::Tensor scores = at::matmul(f32(query), k.transpose(-2, -1)).mul_(s).add_(f32(mask));
  if (is_causal) {  // top-left aligned, as CPU's flash kernel masks
    at::Tensor future = at::ones({scores.size(-2), scores.size(-1)}, scores.options().dtype(at::kBool)).triu_(1);
    scores.masked_fill_(future, -std::numeric_limits<float>::infinity());
  }
  // A row that sees no key has logsumexp -inf and no weights.
  at::Tensor weights = scores.sub_(logsumexp.unsqueeze(-1)).exp_();
  weights.masked_fill_(at::isnan(weights), 0);
  const at::Tensor go = f32(grad_out);
  at::Tensor dp = at::matmul(go, v.transpose(-2, -1));
  if (kept) {
    if (dropout_p >= 1) {
      dp.zero_();
    } else {
      dp.mul_(*kept).div_(1 - dropout_p);
    }
  }
  dp.sub_(go.mul(f32(out)).sum(-1, /*keepdim=*/true));
  grad_bias.copy_(at::sum_to(weights.mul_(dp), grad_bias.sizes()));
}

}  // namespace foo::aten
