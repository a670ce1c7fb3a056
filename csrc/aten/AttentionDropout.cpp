#include "aten/AttentionDropout.h"

#include <cmath>
#include <limits>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/logsumexp.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros_like.h>

#include "runtime/Philox.h"

namespace foo::aten {
namespace {

// Query rows per block: a block's scores are kBlockRows x S floats.
constexpr int64_t kBlockRows = 64;

// One (batch, head, row block) of the attention: the rows it covers and
// the keys they see (a causal block sees none past its last row).
struct Block {
  int64_t b, h, first_row, rows, keys;
};

struct Geometry {
  int64_t batch, heads, kv_heads, length, keys;
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
        is_causal(causal),
        scale(s.value_or(1.0 / std::sqrt(static_cast<double>(query.size(3))))) {
    if (m) {
      at::Tensor four = m->dim() == 2 ? m->view({1, 1, m->size(0), m->size(1)}) : *m;
      mask = four.expand({batch, heads, length, keys});
    }
  }
  int64_t row_blocks() const { return (length + kBlockRows - 1) / kBlockRows; }
  Block block(int64_t b, int64_t h, int64_t index) const {
    int64_t first = index * kBlockRows, rows = std::min(kBlockRows, length - first);
    return {b, h, first, rows, is_causal ? std::min(keys, first + rows) : keys};
  }
  int64_t kv_head(int64_t h) const { return h / (heads / kv_heads); }

  // Scaled, masked scores of a block, float32: rows x keys.
  at::Tensor scores(const Block& blk, const at::Tensor& q_rows, const at::Tensor& k_used) const {
    at::Tensor s = at::mm(q_rows, k_used.t()).mul_(scale);
    if (mask.defined()) s.add_(mask[blk.b][blk.h].narrow(0, blk.first_row, blk.rows).narrow(1, 0, blk.keys));
    if (is_causal) {
      // Row first_row + i sees keys 0..first_row + i.
      s.masked_fill_(at::ones({blk.rows, blk.keys}, s.options().dtype(at::kBool)).triu(blk.first_row + 1),
                     -std::numeric_limits<float>::infinity());
    }
    return s;
  }

  // The block's dropout multipliers: 0 or 1 / (1 - p).
  at::Tensor dropout_scale(const Block& blk, AttentionDropout dropout) const {
    const uint64_t index = (static_cast<uint64_t>(blk.b) * heads + blk.h) * row_blocks() + blk.first_row / kBlockRows;
    const auto bits = philox4x32_10({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0, 0},
                                    {static_cast<uint32_t>(dropout.seed), static_cast<uint32_t>(dropout.seed >> 32)});
    at::Generator gen =
        at::make_generator<at::CPUGeneratorImpl>((static_cast<uint64_t>(bits[1]) << 32) | bits[0]);
    at::Tensor keep = at::empty({blk.rows, blk.keys}, at::kFloat).bernoulli_(1 - dropout.p, gen);
    return keep.mul_(dropout.p >= 1 ? 0.0 : 1.0 / (1.0 - dropout.p));
  }
};

// softmax weights of `scores` from their logsumexp; rows where every key is
// masked (logsumexp -inf) weigh nothing, as the math kernel's safe softmax.
at::Tensor weights(const at::Tensor& scores, const at::Tensor& lse_rows) {
  at::Tensor p = scores.sub(lse_rows.unsqueeze(1)).exp_();
  return p.masked_fill_(lse_rows.isneginf().unsqueeze(1), 0);
}

at::Tensor f32(const at::Tensor& t) { return t.to(at::kFloat); }

}  // namespace

void attention_with_dropout(const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor& query,
                            const at::Tensor& key, const at::Tensor& value, const std::optional<at::Tensor>& mask,
                            bool is_causal, std::optional<double> scale, AttentionDropout dropout,
                            const std::optional<at::Tensor>& kept) {
  const Geometry g(query, key, mask, is_causal, scale);
  if (kept) kept->zero_();
  at::parallel_for(0, g.batch * g.heads * g.row_blocks(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t b = i / (g.heads * g.row_blocks()), h = i / g.row_blocks() % g.heads;
      const Block blk = g.block(b, h, i % g.row_blocks());
      const int64_t hk = g.kv_head(h);
      at::Tensor s = g.scores(blk, f32(query[b][h].narrow(0, blk.first_row, blk.rows)),
                              f32(key[b][hk].narrow(0, 0, blk.keys)));
      at::Tensor lse = at::logsumexp(s, {1});
      at::Tensor p = weights(s, lse);
      at::Tensor z = g.dropout_scale(blk, dropout);
      if (kept) kept->select(0, b).select(0, h).narrow(0, blk.first_row, blk.rows).narrow(1, 0, blk.keys).copy_(z.ne(0));
      out[b][h].narrow(0, blk.first_row, blk.rows).copy_(at::mm(p.mul_(z), f32(value[b][hk].narrow(0, 0, blk.keys))));
      logsumexp[b][h].narrow(0, blk.first_row, blk.rows).copy_(lse);
    }
  });
}

void attention_with_dropout_backward(const at::Tensor& grad_query, const at::Tensor& grad_key,
                                     const at::Tensor& grad_value, const at::Tensor& grad_out, const at::Tensor& query,
                                     const at::Tensor& key, const at::Tensor& value, const at::Tensor& out,
                                     const at::Tensor& logsumexp, const std::optional<at::Tensor>& mask,
                                     bool is_causal, std::optional<double> scale, AttentionDropout dropout) {
  const Geometry g(query, key, mask, is_causal, scale);
  const int64_t group = g.heads / g.kv_heads;
  // One task per key head: it alone accumulates that head's key and value
  // gradients, over the query heads of its group.
  at::parallel_for(0, g.batch * g.kv_heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t b = i / g.kv_heads, hk = i % g.kv_heads;
      const at::Tensor k = f32(key[b][hk]), v = f32(value[b][hk]);
      at::Tensor dk = at::zeros_like(k), dv = at::zeros_like(v);
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        for (int64_t r = 0; r < g.row_blocks(); ++r) {
          const Block blk = g.block(b, h, r);
          auto rows = [&](const at::Tensor& t) { return f32(t[b][h].narrow(0, blk.first_row, blk.rows)); };
          const at::Tensor q = rows(query), d_out = rows(grad_out), o = rows(out);
          const at::Tensor k_used = k.narrow(0, 0, blk.keys), v_used = v.narrow(0, 0, blk.keys);
          at::Tensor p = weights(g.scores(blk, q, k_used), logsumexp[b][h].narrow(0, blk.first_row, blk.rows));
          const at::Tensor z = g.dropout_scale(blk, dropout);
          dv.narrow(0, 0, blk.keys).add_(at::mm(p.mul(z).t(), d_out));
          // d(scores) = p * (d(weights) - rowsum(d_out * out)): the softmax's
          // backward, d(weights) through the dropout multipliers.
          at::Tensor d_weights = at::mm(d_out, v_used.t()).mul_(z);
          at::Tensor ds = p.mul_(d_weights.sub_(d_out.mul(o).sum(1, true))).mul_(g.scale);
          grad_query[b][h].narrow(0, blk.first_row, blk.rows).copy_(at::mm(ds, k_used));
          dk.narrow(0, 0, blk.keys).add_(at::mm(ds.t(), q));
        }
      }
      grad_key[b][hk].copy_(dk);
      grad_value[b][hk].copy_(dv);
    }
  });
}

}  // namespace foo::aten
