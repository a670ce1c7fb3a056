// fooccl's collectives (FooBackend.h): each checks its tensors at the call,
// as NCCL does, describes the exchange (what gloo works on, directly or
// staged, and what every rank must agree on) and hands it to launch().
#include <algorithm>
#include <numeric>
#include <utility>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Utils.hpp>

#include "distributed/AllreduceInParts.h"
#include "distributed/FooBackend.h"
#include "distributed/GlooWaits.h"
#include "distributed/ReduceOps.h"
#include "distributed/Staging.h"
#include "distributed/TensorChecks.h"
#include "runtime/FooFunctions.h"

namespace foo::distributed {
namespace {

// The element counts an all_to_all_single moves to or from each rank: its
// splits count rows of dim 0 (equal parts when there are none).
std::vector<int64_t> elements_per_peer(const at::Tensor& t, const std::vector<int64_t>& splits, int size) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const int64_t row = rows == 0 ? 0 : t.numel() / rows;
  std::vector<int64_t> counts(size, rows / size * row);
  for (size_t j = 0; j < splits.size(); ++j) counts[j] = splits[j] * row;
  return counts;
}

// A dense tensor's elements in memory order, one after another: how NCCL
// sees the buffer of a tensor form (`*_tensor`, coalesced), whatever its
// memory format.
at::Tensor flat(const at::Tensor& t) { return t.as_strided({t.numel()}, {1}); }

// Whether two dense tensors share any byte.
bool overlap(const at::Tensor& a, const at::Tensor& b) {
  auto begin = [](const at::Tensor& t) { return static_cast<const char*>(t.const_data_ptr()); };
  return begin(a) < begin(b) + b.nbytes() && begin(b) < begin(a) + a.nbytes();
}

}  // namespace

c10::intrusive_ptr<c10d::Work> FooBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceOptions& opts) {
  if (all_cpu(tensors)) return host_->allreduce(tensors, opts);
  check_one(tensors, "all_reduce");
  at::Tensor t = complex_as_real(tensors[0], &opts.reduceOp, "all_reduce");
  c10d::AllreduceOptions o = opts;
  apply_nccl_reduce_rules(o.reduceOp, std::vector<at::Tensor>{t});
  double factor = premul_factor(o.reduceOp);
  int64_t divisor = integer_average(o.reduceOp, {t}, size_);
  Collective c{"all_reduce", c10d::OpType::ALLREDUCE};
  c.device = t.device();
  direct_or_staged(c, {{t, true, true}}, true);
  if (divisor) c.after_exchange = [divisor](std::vector<at::Tensor>& cpu) { divide(cpu[0], divisor); };
  c.call = [o, factor, timeout = timeout_](c10d::Backend& g, std::vector<at::Tensor>& cpu) {
    // On the tensor itself when used directly, as NCCL's PREMUL_SUM: it is the
    // output anyway.
    if (factor != 1.0) cpu[0].mul_(factor);
    return allreduce_in_parts(g, flat(cpu[0]), o, timeout);
  };
  c.device_tensors = {t};
  c.outputs = {t};
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                     const c10d::BroadcastOptions& opts) {
  if (all_cpu(tensors)) return host_->broadcast(tensors, opts);
  check_one(tensors, "broadcast");
  at::Tensor t = complex_as_real(tensors[0], nullptr, "broadcast");
  Collective c{"broadcast", c10d::OpType::BROADCAST};
  c.device = t.device();
  const bool root = opts.rootRank == rank_;
  direct_or_staged(c, {{t, root, !root}}, true);
  // Every rank must name the same root (a different one would wait forever).
  c.fingerprint = {static_cast<int64_t>(c.type), opts.rootRank, static_cast<int64_t>(t.scalar_type()), t.numel()};
  c.call = [opts](c10d::Backend& g, std::vector<at::Tensor>& cpu) { return g.broadcast(cpu, opts); };
  c.device_tensors = {t};
  c.outputs = {t};
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
  if (all_cpu(tensors)) return host_->reduce(tensors, opts);
  check_one(tensors, "reduce");
  at::Tensor t = complex_as_real(tensors[0], &opts.reduceOp, "reduce");
  c10d::ReduceOptions o = opts;
  apply_nccl_reduce_rules(o.reduceOp, std::vector<at::Tensor>{t});
  double factor = premul_factor(o.reduceOp);
  int64_t divisor = integer_average(o.reduceOp, {t}, size_);
  // As with NCCL, only the root's tensor receives the result.
  bool root = opts.rootRank == rank_;
  at::Tensor s = pinned_like(t);
  Collective c{"reduce", c10d::OpType::REDUCE};
  c.device = t.device();
  c.fingerprint = {static_cast<int64_t>(c.type), opts.rootRank, static_cast<int64_t>(t.scalar_type()), t.numel()};
  c.staged = {s};
  c.stage_in = [s, t]() mutable { s.copy_(t, true); };
  c.call = [o, factor](c10d::Backend& g, std::vector<at::Tensor>& cpu) {
    if (factor != 1.0) cpu[0].mul_(factor);
    return g.reduce(cpu, o);
  };
  if (root) c.stage_out = [s, t]() mutable { t.copy_(s, true); };
  if (root && divisor) c.after_exchange = [divisor](std::vector<at::Tensor>& cpu) { divide(cpu[0], divisor); };
  c.device_tensors = {t};
  c.outputs = {t};
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) {
  if (all_cpu(inputs)) return host_->allgather(outputs, inputs, opts);
  check_one(inputs, "all_gather");
  TORCH_CHECK_VALUE(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                    "fooccl all_gather: expecting one list of ", size_, " output tensors");
  at::Tensor in = inputs[0];
  std::vector<at::Tensor> outs = outputs[0];
  // As with NCCL, the outputs may differ in size (rank j's input fills
  // output j): only this rank's own must match its input.
  check_list(outs, in, "all_gather", "output", /*same_numel=*/false);
  TORCH_CHECK_VALUE(outs[rank_].numel() == in.numel(), "fooccl all_gather: output ", rank_,
                    " (this rank's) must have as many elements as the input, ", in.numel(), "; got ",
                    outs[rank_].numel());
  int64_t widest = 0;
  for (const at::Tensor& o : outs) widest = std::max(widest, o.numel());
  // gloo gathers equal parts into one flat buffer, each rank's input
  // padded to the widest; each output takes its slice with a copy, which
  // (as with NCCL) may also convert its layout. Elements go in logical
  // order, whatever the tensors' memory formats.
  at::Tensor s_in = pinned_flat(widest, in.scalar_type());
  at::Tensor s_out = pinned_flat(widest * size_, in.scalar_type());
  Collective c{"all_gather", c10d::OpType::ALLGATHER};
  c.device = in.device();
  // Every rank must agree on every output's size, not only the widest.
  c.fingerprint = {static_cast<int64_t>(c.type), static_cast<int64_t>(in.scalar_type())};
  for (const at::Tensor& o : outs) c.fingerprint.push_back(o.numel());
  c.staged = {s_in, s_out};
  c.stage_in = [s_in, in]() mutable { s_in.narrow(0, 0, in.numel()).view(in.sizes()).copy_(in, true); };
  c.call = [opts](c10d::Backend& g, std::vector<at::Tensor>& cpu) { return g._allgather_base(cpu[1], cpu[0], opts); };
  c.stage_out = [s_out, outs, widest]() mutable {
    for (size_t j = 0; j < outs.size(); ++j) {
      at::Tensor part = s_out.narrow(0, static_cast<int64_t>(j) * widest, outs[j].numel());
      outs[j].copy_(part.view(outs[j].sizes()), true);
    }
  };
  c.device_tensors = outs;
  c.device_tensors.push_back(in);
  c.outputs = outs;
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                  std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
  if (all_cpu(inputs)) return host_->gather(outputs, inputs, opts);
  check_one(inputs, "gather");
  at::Tensor in = inputs[0];
  const bool root = opts.rootRank == rank_;
  std::vector<at::Tensor> outs;
  if (root) {
    TORCH_CHECK_VALUE(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                      "fooccl gather: the root needs one list of ", size_, " output tensors");
    outs = outputs[0];
    check_list(outs, in, "gather", "output");
  } else {
    TORCH_CHECK_VALUE(outputs.empty() || outputs[0].empty(), "fooccl gather: only the root takes outputs");
  }
  Collective c{"gather", c10d::OpType::GATHER};
  c.device = in.device();
  c.fingerprint = {static_cast<int64_t>(c.type), opts.rootRank, static_cast<int64_t>(in.scalar_type()), in.numel()};
  c.staged = {pinned_flat(in.numel(), in.scalar_type())};  // logical order, as the outputs take it
  for (size_t j = 0; j < outs.size(); ++j) c.staged.push_back(pinned_flat(in.numel(), in.scalar_type()));
  c.stage_in = [s_in = c.staged[0], in]() mutable { s_in.view(in.sizes()).copy_(in, true); };
  c.call = [opts, root](c10d::Backend& g, std::vector<at::Tensor>& cpu) {
    std::vector<at::Tensor> one{cpu[0]};
    std::vector<std::vector<at::Tensor>> gathered(root ? 1 : 0);
    if (root) gathered[0].assign(cpu.begin() + 1, cpu.end());
    return g.gather(gathered, one, opts);
  };
  c.stage_out = [staged = c.staged, outs]() mutable {
    for (size_t j = 0; j < outs.size(); ++j) outs[j].copy_(staged[j + 1].view(outs[j].sizes()), true);
  };
  c.device_tensors = outs;
  c.device_tensors.push_back(in);
  c.outputs = outs;
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::scatter(std::vector<at::Tensor>& outputs,
                                                   std::vector<std::vector<at::Tensor>>& inputs,
                                                   const c10d::ScatterOptions& opts) {
  if (all_cpu(outputs)) return host_->scatter(outputs, inputs, opts);
  check_one(outputs, "scatter");
  at::Tensor out = outputs[0];
  const bool root = opts.rootRank == rank_;
  std::vector<at::Tensor> ins;
  if (root) {
    TORCH_CHECK_VALUE(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                      "fooccl scatter: the root needs one list of ", size_, " input tensors");
    ins = inputs[0];
    check_list(ins, out, "scatter", "input");
  } else {
    TORCH_CHECK_VALUE(inputs.empty() || inputs[0].empty(), "fooccl scatter: only the root takes inputs");
  }
  Collective c{"scatter", c10d::OpType::SCATTER};
  c.device = out.device();
  c.fingerprint = {static_cast<int64_t>(c.type), opts.rootRank, static_cast<int64_t>(out.scalar_type()), out.numel()};
  c.staged = {pinned_flat(out.numel(), out.scalar_type())};  // logical order, as the inputs give it
  for (size_t j = 0; j < ins.size(); ++j) c.staged.push_back(pinned_flat(out.numel(), out.scalar_type()));
  c.stage_in = [staged = c.staged, ins]() mutable {
    for (size_t j = 0; j < ins.size(); ++j) staged[j + 1].view(ins[j].sizes()).copy_(ins[j], true);
  };
  c.call = [opts, root](c10d::Backend& g, std::vector<at::Tensor>& cpu) {
    std::vector<at::Tensor> one{cpu[0]};
    std::vector<std::vector<at::Tensor>> parts(root ? 1 : 0);
    if (root) parts[0].assign(cpu.begin() + 1, cpu.end());
    return g.scatter(one, parts, opts);
  };
  c.stage_out = [s_out = c.staged[0], out]() mutable { out.copy_(s_out.view(out.sizes()), true); };
  c.device_tensors = ins;
  c.device_tensors.push_back(out);
  c.outputs = {out};
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                           const c10d::AllgatherOptions& opts) {
  if (input.is_cpu() && output.is_cpu()) return host_->_allgather_base(output, input, opts);
  check_single(input);
  check_single(output);
  check_same_device(input, output, "all_gather_into_tensor");
  TORCH_CHECK_VALUE(input.dtype() == output.dtype(), "output tensor must have the same type as input tensor");
  TORCH_CHECK_VALUE(input.numel() * size_ == output.numel(),
                    "output tensor size must be equal to world_size times input tensor size");
  at::Tensor in = input, out = output;
  Collective c{"all_gather_into_tensor", c10d::OpType::_ALLGATHER_BASE};
  c.device = in.device();
  // In place (FSDP2's case: the input is this rank's part of the output)
  // or apart; other overlaps go through staging buffers.
  const bool own_part = in.const_data_ptr() == static_cast<const char*>(out.const_data_ptr()) + rank_ * in.nbytes();
  direct_or_staged(c, {{in, true, false}, {out, false, true}}, own_part || !overlap(in, out));
  c.call = [opts](c10d::Backend& g, std::vector<at::Tensor>& cpu) {
    at::Tensor flat_out = flat(cpu[1]), flat_in = flat(cpu[0]);
    return g._allgather_base(flat_out, flat_in, opts);
  };
  c.device_tensors = {in, out};
  c.outputs = {out};
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::launch_pairs(const char* name, c10d::OpType type,
                                                        std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs,
                                                        PairCall each, int64_t divisor) {
  TORCH_CHECK_VALUE(!inputs.empty() && inputs.size() == outputs.size(), "fooccl ", name,
                    ": expecting as many outputs as inputs, got ", outputs.size(), " and ", inputs.size());
  Collective c{name, type};
  c.device = inputs[0].device();
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_single(inputs[i]);
    check_single(outputs[i]);
    TORCH_CHECK_VALUE(inputs[i].device() == c.device && outputs[i].device() == c.device, "fooccl ", name,
                      ": every tensor must be on ", c.device);
    c.staged.push_back(pinned_like(inputs[i]));
    c.staged.push_back(outputs[i].is_same(inputs[i]) ? c.staged.back() : pinned_like(outputs[i]));
  }
  c.stage_in = [staged = c.staged, inputs]() mutable {
    for (size_t i = 0; i < inputs.size(); ++i) staged[2 * i].copy_(inputs[i], true);
  };
  if (divisor) {
    c.after_exchange = [divisor](std::vector<at::Tensor>& cpu) {
      for (size_t i = 1; i < cpu.size(); i += 2) divide(cpu[i], divisor);
    };
  }
  c.call = [each, timeout = timeout_](c10d::Backend& g, std::vector<at::Tensor>& cpu) -> c10::intrusive_ptr<c10d::Work> {
    // One after the other, in the same order on every rank.
    for (size_t i = 0; i + 1 < cpu.size(); i += 2) {
      at::Tensor in = flat(cpu[i]), out = flat(cpu[i + 1]);
      if (auto w = each(g, in, out)) wait_all({w}, timeout);
    }
    return {};
  };
  c.stage_out = [staged = c.staged, outputs]() mutable {
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_(staged[2 * i + 1], true);
  };
  c.device_tensors = inputs;
  c.device_tensors.insert(c.device_tensors.end(), outputs.begin(), outputs.end());
  c.outputs = outputs;
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                           std::vector<at::Tensor>& inputs,
                                                                           const c10d::AllgatherOptions& opts) {
  if (all_cpu(inputs)) return host_->allgather_into_tensor_coalesced(outputs, inputs, opts);
  for (size_t i = 0; i < inputs.size() && i < outputs.size(); ++i) {
    TORCH_CHECK_VALUE(inputs[i].dtype() == outputs[i].dtype(), "output tensor must have the same type as input tensor");
    TORCH_CHECK_VALUE(inputs[i].numel() * size_ == outputs[i].numel(),
                      "output tensor size must be equal to world_size times input tensor size");
  }
  return launch_pairs("all_gather_into_tensor_coalesced", c10d::OpType::COALESCED, outputs, inputs,
                      [opts](c10d::Backend& g, at::Tensor& in, at::Tensor& out) {
                        return g._allgather_base(out, in, opts);
                      });
}

c10::intrusive_ptr<c10d::Work> FooBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                               const c10d::AllreduceCoalescedOptions& opts) {
  if (all_cpu(tensors)) return host_->allreduce_coalesced(tensors, opts);
  c10d::AllreduceOptions o;
  o.reduceOp = opts.reduceOp;
  o.timeout = opts.timeout;
  apply_nccl_reduce_rules(o.reduceOp, tensors);
  double factor = premul_factor(o.reduceOp);
  int64_t divisor = integer_average(o.reduceOp, tensors, size_);
  return launch_pairs("all_reduce_coalesced", c10d::OpType::ALLREDUCE_COALESCED, tensors, tensors,
                      [o, factor](c10d::Backend& g, at::Tensor& in, at::Tensor&) {
                        if (factor != 1.0) in.mul_(factor);
                        std::vector<at::Tensor> one{in};
                        return g.allreduce(one, o);
                      },
                      divisor);
}

c10::intrusive_ptr<c10d::Work> FooBackend::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                           std::vector<at::Tensor>& inputs,
                                                                           const c10d::ReduceScatterOptions& opts) {
  if (all_cpu(inputs)) return host_->reduce_scatter_tensor_coalesced(outputs, inputs, opts);
  for (size_t i = 0; i < inputs.size() && i < outputs.size(); ++i) {
    TORCH_CHECK_VALUE(inputs[i].dtype() == outputs[i].dtype(), "input tensor must be the same type as the output tensor.");
    TORCH_CHECK_VALUE(inputs[i].numel() == outputs[i].numel() * size_,
                      "input tensor must be the same size as output size times world size");
  }
  c10d::ReduceScatterOptions o = opts;
  apply_nccl_reduce_rules(o.reduceOp, inputs);
  double factor = premul_factor(o.reduceOp);
  int64_t divisor = integer_average(o.reduceOp, inputs, size_);
  return launch_pairs("reduce_scatter_tensor_coalesced", c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, outputs,
                      inputs, [o, factor](c10d::Backend& g, at::Tensor& in, at::Tensor& out) {
                        if (factor != 1.0) in.mul_(factor);
                        return g._reduce_scatter_base(out, in, o);
                      },
                      divisor);
}

c10::intrusive_ptr<c10d::Work> FooBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                          std::vector<std::vector<at::Tensor>>& inputs,
                                                          const c10d::ReduceScatterOptions& opts) {
  if (all_cpu(outputs)) return host_->reduce_scatter(outputs, inputs, opts);
  check_one(outputs, "reduce_scatter");
  TORCH_CHECK_VALUE(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                    "fooccl reduce_scatter: expecting one list of ", size_, " input tensors");
  at::Tensor out = outputs[0];
  std::vector<at::Tensor> ins = inputs[0];
  check_list(ins, out, "reduce_scatter", "input");
  c10d::ReduceScatterOptions o = opts;
  apply_nccl_reduce_rules(o.reduceOp, std::vector<at::Tensor>{out});
  double factor = premul_factor(o.reduceOp);
  int64_t divisor = integer_average(o.reduceOp, {out}, size_);
  const int64_t n = out.numel();
  // The inputs are packed into one flat buffer, converted to the output's
  // dtype by the copies, as NCCL flattens them.
  at::Tensor s_in = pinned_flat(n * size_, out.scalar_type());
  at::Tensor s_out = pinned_flat(n, out.scalar_type());  // logical order, as the inputs give it
  Collective c{"reduce_scatter", c10d::OpType::REDUCE_SCATTER};
  c.device = out.device();
  c.staged = {s_in, s_out};
  if (divisor) c.after_exchange = [divisor](std::vector<at::Tensor>& cpu) { divide(cpu[1], divisor); };
  c.stage_in = [s_in, ins, n]() mutable {
    for (size_t j = 0; j < ins.size(); ++j) {
      s_in.narrow(0, static_cast<int64_t>(j) * n, n).view(ins[j].sizes()).copy_(ins[j], true);
    }
  };
  c.call = [o, factor](c10d::Backend& g, std::vector<at::Tensor>& cpu) {
    if (factor != 1.0) cpu[0].mul_(factor);
    return g._reduce_scatter_base(cpu[1], cpu[0], o);
  };
  c.stage_out = [s_out, out]() mutable { out.copy_(s_out.view(out.sizes()), true); };
  c.device_tensors = ins;
  c.device_tensors.push_back(out);
  c.outputs = {out};
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                const c10d::ReduceScatterOptions& opts) {
  if (input.is_cpu() && output.is_cpu()) return host_->_reduce_scatter_base(output, input, opts);
  check_single(input);
  check_single(output);
  check_same_device(input, output, "reduce_scatter_tensor");
  TORCH_CHECK_VALUE(input.dtype() == output.dtype(), "input tensor must be the same type as the output tensor.");
  TORCH_CHECK_VALUE(input.numel() == output.numel() * size_,
                    "input tensor must be the same size as output size times world size");
  at::Tensor in = input, out = output;
  c10d::ReduceScatterOptions o = opts;
  apply_nccl_reduce_rules(o.reduceOp, std::vector<at::Tensor>{in});
  double factor = premul_factor(o.reduceOp);
  int64_t divisor = integer_average(o.reduceOp, {in}, size_);
  Collective c{"reduce_scatter_tensor", c10d::OpType::_REDUCE_SCATTER_BASE};
  if (divisor) c.after_exchange = [divisor](std::vector<at::Tensor>& cpu) { divide(cpu[1], divisor); };
  c.device = in.device();
  // gloo leaves its input as it was, but the factor is applied to the
  // input: that needs a copy the caller's tensor does not see.
  direct_or_staged(c, {{in, true, false}, {out, false, true}}, factor == 1.0 && !overlap(in, out));
  c.call = [o, factor](c10d::Backend& g, std::vector<at::Tensor>& cpu) {
    at::Tensor flat_in = flat(cpu[0]), flat_out = flat(cpu[1]);
    if (factor != 1.0) flat_in.mul_(factor);
    return g._reduce_scatter_base(flat_out, flat_in, o);
  };
  c.device_tensors = {in, out};
  c.outputs = {out};
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                         std::vector<int64_t>& output_splits,
                                                         std::vector<int64_t>& input_splits,
                                                         const c10d::AllToAllOptions& opts) {
  if (input.is_cpu() && output.is_cpu()) {
    return host_->alltoall_base(output, input, output_splits, input_splits, opts);
  }
  check_single(input);
  check_single(output);
  check_same_device(input, output, "all_to_all_single");
  TORCH_CHECK_VALUE(input.dtype() == output.dtype(), "fooccl all_to_all_single: input and output must have the same dtype, got ",
                    input.dtype(), " and ", output.dtype());
  at::Tensor in = input, out = output;
  Collective c{"all_to_all_single", c10d::OpType::ALLTOALL_BASE};
  c.device = in.device();
  // As NCCL, before anything is queued.
  c10d::checkSplitSizes(input_splits, in, size_);
  c10d::checkSplitSizes(output_splits, out, size_);
  // Ranks may send and receive different amounts: the dtype must agree,
  // and each pair of ranks on what passes between them.
  c.fingerprint = {static_cast<int64_t>(c.type), static_cast<int64_t>(in.scalar_type())};
  c.pairs = {elements_per_peer(in, input_splits, size_), elements_per_peer(out, output_splits, size_)};
  direct_or_staged(c, {{in, true, false}, {out, false, true}}, !overlap(in, out));
  c.call = [opts, output_splits, input_splits](c10d::Backend& g, std::vector<at::Tensor>& cpu) mutable {
    return g.alltoall_base(cpu[1], cpu[0], output_splits, input_splits, opts);
  };
  c.device_tensors = {in, out};
  c.outputs = {out};
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                                    const c10d::AllToAllOptions& opts) {
  if (all_cpu(inputs) && all_cpu(outputs)) return host_->alltoall(outputs, inputs, opts);
  TORCH_CHECK_VALUE(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
                    "fooccl all_to_all: expecting ", size_, " input and ", size_, " output tensors, got ",
                    inputs.size(), " and ", outputs.size());
  for (const auto* list : {&inputs, &outputs}) {
    for (const at::Tensor& t : *list) {
      TORCH_CHECK_VALUE(is_foo(t) && t.layout() == c10::kStrided && t.device() == inputs[0].device(),
                        "fooccl all_to_all: every tensor must be a dense foo tensor on ", inputs[0].device());
    }
  }
  // One flat buffer each way, split by element counts; the copies in and
  // out handle any layout.
  std::vector<int64_t> in_splits, out_splits;
  for (const at::Tensor& t : inputs) in_splits.push_back(t.numel());
  for (const at::Tensor& t : outputs) out_splits.push_back(t.numel());
  const auto dtype = inputs[0].scalar_type();
  at::Tensor s_in = pinned_flat(std::accumulate(in_splits.begin(), in_splits.end(), int64_t{0}), dtype);
  at::Tensor s_out = pinned_flat(std::accumulate(out_splits.begin(), out_splits.end(), int64_t{0}), dtype);
  std::vector<at::Tensor> ins = inputs, outs = outputs;
  Collective c{"all_to_all", c10d::OpType::ALLTOALL};
  c.device = inputs[0].device();
  c.fingerprint = {static_cast<int64_t>(c.type), static_cast<int64_t>(dtype)};
  c.pairs = {in_splits, out_splits};
  c.staged = {s_in, s_out};
  c.stage_in = [s_in, ins, in_splits]() mutable {
    int64_t at = 0;
    for (size_t j = 0; j < ins.size(); ++j) {
      s_in.narrow(0, at, in_splits[j]).view(ins[j].sizes()).copy_(ins[j], true);
      at += in_splits[j];
    }
  };
  c.call = [opts, in_splits, out_splits](c10d::Backend& g, std::vector<at::Tensor>& cpu) mutable {
    return g.alltoall_base(cpu[1], cpu[0], out_splits, in_splits, opts);
  };
  c.stage_out = [s_out, outs, out_splits]() mutable {
    int64_t at = 0;
    for (size_t j = 0; j < outs.size(); ++j) {
      outs[j].copy_(s_out.narrow(0, at, out_splits[j]).view(outs[j].sizes()), true);
      at += out_splits[j];
    }
  };
  c.device_tensors = ins;
  c.device_tensors.insert(c.device_tensors.end(), outs.begin(), outs.end());
  c.outputs = outs;
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::barrier(const c10d::BarrierOptions& opts) {
  // As NCCL's barrier: ordered on the current foo device's stream, and its
  // wait() blocks the host until every rank has arrived.
  c10d::BarrierOptions o;
  o.timeout = opts.timeout;
  Collective c{"barrier", c10d::OpType::BARRIER};
  c.device = opts.device && opts.device->type() == c10::DeviceType::PrivateUse1
                 ? *opts.device
                 : c10::Device(c10::DeviceType::PrivateUse1, current_device());
  c.call = [o](c10d::Backend& g, std::vector<at::Tensor>&) { return g.barrier(o); };
  c.host_blocking = true;
  return launch(std::move(c));
}

}  // namespace foo::distributed
