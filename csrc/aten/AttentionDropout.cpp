#include "aten/AttentionDropout.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/logsumexp.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>

#include "aten_runtime/Philox.h"

namespace foo::aten {
namespace {

// Elements of a block's scores (B x H x rows x S floats, 32 MiB), which
// fixes its number of rows. A block spans every batch and head and is
// large, so that its operators use the intra-op threads themselves and are
// few: each is a parallel region of the executor's thread team, and with
// blocks of 64 rows (or with an at::parallel_for over (batch, head, rows)
// blocks) a forward and backward at length 1024 took 3 to 8 times as long
// at two threads as at one, on a loaded machine.
constexpr int64_t kBlockElements = int64_t{8} << 20;

struct Block {
  int64_t index, first_row, rows, keys;  // a causal block sees no key past its last row
};

// The attention's shapes, with the query's heads grouped by key head:
// (B, H, rows, E) is viewed as (B, H_kv, group * rows, E), so that one
// matmul against (B, H_kv, S, E) serves a whole group (GQA).
struct Geometry {
  int64_t batch, heads, kv_heads, length, keys, head_dim;
  bool is_causal;
  double scale;
  at::Tensor mask;  // (B, H, L, S) expanded view, or undefined

  Geometry(const at::Tensor& query, const at::Tensor& key, const std::optional<at::Tensor>& m, bool causal,
           std::optional<double> s)
      : batch(query.size(0)),
        heads(query.size(1)),
        kv_heads(key.size(1)),
        length(query.size(2)),
        keys(key.size(2)),
        head_dim(query.size(3)),
        is_causal(causal),
        scale(s.value_or(1.0 / std::sqrt(static_cast<double>(query.size(3))))) {
    if (m) {
      at::Tensor four = m->dim() == 2 ? m->view({1, 1, m->size(0), m->size(1)}) : *m;
      mask = four.expand({batch, heads, length, keys});
    }
  }
  int64_t block_rows() const {
    return std::max<int64_t>(1, kBlockElements / std::max<int64_t>(1, batch * heads * keys));
  }
  int64_t blocks() const { return (length + block_rows() - 1) / block_rows(); }
  Block block(int64_t index) const {
    int64_t first = index * block_rows(), rows = std::min(block_rows(), length - first);
    return {index, first, rows, is_causal ? std::min(keys, first + rows) : keys};
  }
  // A block's rows of a (B, H, L, X) tensor, float32, grouped: (B, H_kv, group * rows, X).
  at::Tensor grouped_rows(const at::Tensor& t, const Block& blk) const {
    at::Tensor r = t.narrow(2, blk.first_row, blk.rows).to(at::kFloat);
    return r.reshape({batch, kv_heads, heads / kv_heads * blk.rows, t.size(3)});
  }
  at::Tensor ungrouped(const at::Tensor& t, const Block& blk) const {
    return t.view({batch, heads, blk.rows, t.size(-1)});
  }
  // The keys (or values) a block sees, float32: (B, H_kv, keys, E).
  at::Tensor seen(const at::Tensor& t, const Block& blk) const { return t.narrow(2, 0, blk.keys).to(at::kFloat); }

  // Scaled, masked scores of a block, float32: (B, H, rows, keys).
  at::Tensor scores(const Block& blk, const at::Tensor& q_grouped, const at::Tensor& k_seen) const {
    at::Tensor s = ungrouped(at::matmul(q_grouped, k_seen.transpose(2, 3)), blk).mul_(scale);
    if (mask.defined()) s.add_(mask.narrow(2, blk.first_row, blk.rows).narrow(3, 0, blk.keys));
    if (is_causal) {
      // Row first_row + i sees keys 0..first_row + i.
      s.masked_fill_(at::ones({blk.rows, blk.keys}, s.options().dtype(at::kBool)).triu(blk.first_row + 1),
                     -std::numeric_limits<float>::infinity());
    }
    return s;
  }

  // The block's dropout multipliers, 0 or 1 / (1 - p): (B, H, rows, keys).
  // Element (b, h, l, s) of the whole attention keeps its weight when the
  // 32 bits Philox4x32-10 gives for its index in (B, H, L, S) under the
  // call's seed are below (1 - p) * 2^32: the same element gets the same
  // decision in every block shape, forward and backward. Rows are drawn in
  // parallel: ATen's bernoulli_ with a CPU generator is serial, and the
  // team's other threads would spin through it.
  at::Tensor dropout_scale(const Block& blk, AttentionDropout dropout) const {
    at::Tensor scale_of = at::empty({batch, heads, blk.rows, blk.keys}, at::kFloat);
    float* out = scale_of.data_ptr<float>();
    const float kept = dropout.p >= 1 ? 0.0f : static_cast<float>(1.0 / (1.0 - dropout.p));
    const auto threshold = static_cast<uint64_t>(std::ldexp(1.0 - dropout.p, 32));
    const std::array<uint32_t, 2> key{static_cast<uint32_t>(dropout.seed), static_cast<uint32_t>(dropout.seed >> 32)};
    const int64_t rows = batch * heads * blk.rows;
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, blk.keys));
    at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t batch_head = r / blk.rows, row = blk.first_row + r % blk.rows;
        const auto first = static_cast<uint64_t>((batch_head * length + row) * keys);
        float* dst = out + r * blk.keys;
        for (int64_t s = 0; s < blk.keys;) {
          const uint64_t index = first + static_cast<uint64_t>(s);
          const uint64_t group = index >> 2;  // one Philox call gives four elements' bits
          const auto bits =
              philox4x32_10({static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32), 0, 0}, key);
          for (auto j = static_cast<size_t>(index & 3); j < 4 && s < blk.keys; ++j, ++s) {
            dst[s] = bits[j] < threshold ? kept : 0.0f;
          }
        }
      }
    });
    return scale_of;
  }
};

// softmax weights of `scores` from their logsumexp; rows where every key is
// masked (logsumexp -inf) weigh nothing, as the math kernel's safe softmax.
at::Tensor weights(const at::Tensor& scores, const at::Tensor& lse_rows) {
  at::Tensor p = scores.sub(lse_rows.unsqueeze(-1)).exp_();
  return p.masked_fill_(lse_rows.isneginf().unsqueeze(-1), 0);
}

}  // namespace

void attention_with_dropout(const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor& query,
                            const at::Tensor& key, const at::Tensor& value, const std::optional<at::Tensor>& mask,
                            bool is_causal, std::optional<double> scale, AttentionDropout dropout,
                            const std::optional<at::Tensor>& kept) {
  const Geometry g(query, key, mask, is_causal, scale);
  if (kept) kept->zero_();
  for (int64_t i = 0; i < g.blocks(); ++i) {
    const Block blk = g.block(i);
    const at::Tensor s = g.scores(blk, g.grouped_rows(query, blk), g.seen(key, blk));
    const at::Tensor lse = at::logsumexp(s, {3});
    const at::Tensor z = g.dropout_scale(blk, dropout);
    if (kept) kept->narrow(2, blk.first_row, blk.rows).narrow(3, 0, blk.keys).copy_(z.ne(0));
    const at::Tensor pz = weights(s, lse).mul_(z);
    at::Tensor o = at::matmul(pz.view({g.batch, g.kv_heads, -1, blk.keys}), g.seen(value, blk));
    out.narrow(2, blk.first_row, blk.rows).copy_(g.ungrouped(o, blk));
    logsumexp.narrow(2, blk.first_row, blk.rows).copy_(lse);
  }
}

void attention_with_dropout_backward(const at::Tensor& grad_query, const at::Tensor& grad_key,
                                     const at::Tensor& grad_value, const at::Tensor& grad_out, const at::Tensor& query,
                                     const at::Tensor& key, const at::Tensor& value, const at::Tensor& out,
                                     const at::Tensor& logsumexp, const std::optional<at::Tensor>& mask,
                                     bool is_causal, std::optional<double> scale, AttentionDropout dropout) {
  const Geometry g(query, key, mask, is_causal, scale);
  at::Tensor dk = at::zeros(key.sizes(), key.options().dtype(at::kFloat));
  at::Tensor dv = at::zeros(value.sizes(), value.options().dtype(at::kFloat));
  for (int64_t i = 0; i < g.blocks(); ++i) {
    const Block blk = g.block(i);
    const at::Tensor q = g.grouped_rows(query, blk), d_out = g.grouped_rows(grad_out, blk);
    const at::Tensor k = g.seen(key, blk), v = g.seen(value, blk);
    at::Tensor p = weights(g.scores(blk, q, k), logsumexp.narrow(2, blk.first_row, blk.rows));
    const at::Tensor z = g.dropout_scale(blk, dropout);
    auto grouped = [&](const at::Tensor& t) { return t.view({g.batch, g.kv_heads, -1, blk.keys}); };
    // Summed over a group's heads by the grouped matmuls.
    dv.narrow(2, 0, blk.keys).add_(at::matmul(grouped(p.mul(z)).transpose(2, 3), d_out));
    // d(scores) = p * (d(weights) - rowsum(d_out * out)): the softmax's
    // backward, d(weights) through the dropout multipliers.
    at::Tensor d_weights = g.ungrouped(at::matmul(d_out, v.transpose(2, 3)), blk).mul_(z);
    const at::Tensor row_dots = g.ungrouped(d_out, blk).mul(g.ungrouped(g.grouped_rows(out, blk), blk)).sum(3, true);
    at::Tensor ds = p.mul_(d_weights.sub_(row_dots)).mul_(g.scale);
    grad_query.narrow(2, blk.first_row, blk.rows).copy_(g.ungrouped(at::matmul(grouped(ds), k), blk));
    dk.narrow(2, 0, blk.keys).add_(at::matmul(grouped(ds).transpose(2, 3), q));
  }
  grad_key.copy_(dk);
  grad_value.copy_(dv);
}

}  // namespace foo::aten
