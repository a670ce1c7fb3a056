#include "distributed/FooBackend.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <foo_sim/foo_race.h>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Utils.hpp>

#include "distributed/AllreduceInParts.h"
#include "distributed/CollectiveFingerPrint.h"
#include "distributed/Dtypes.h"
#include "distributed/FooWork.h"
#include "distributed/GlooWaits.h"
#include "distributed/P2PHeader.h"
#include "distributed/Staging.h"
#include "runtime/FooBufferRegistration.h"
#include "runtime/FooCachingAllocator.h"
#include "runtime/FooEvent.h"
#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooGraphsUtils.h"
#include "runtime/FooLaunch.h"

namespace foo::distributed {
namespace {

bool is_foo(const at::Tensor& t) { return t.device().type() == c10::DeviceType::PrivateUse1; }

bool all_cpu(const std::vector<at::Tensor>& ts) {
  return !ts.empty() && std::all_of(ts.begin(), ts.end(), [](const at::Tensor& t) { return t.is_cpu(); });
}

// NCCL's checks for a tensor the collective uses in place (the messages
// are NCCL's, so that code written against it sees the same errors).
void check_single(const at::Tensor& t) {
  TORCH_CHECK_VALUE(is_foo(t) && t.layout() == c10::kStrided, "Tensors must be foo and dense");
  TORCH_CHECK_VALUE(t.is_contiguous(t.suggest_memory_format()), "Tensors must be contiguous");
}

void check_one(const std::vector<at::Tensor>& ts, const char* op) {
  TORCH_CHECK_VALUE(ts.size() == 1, "fooccl ", op, ": expecting one tensor per process, got ", ts.size());
  check_single(ts[0]);
}

void check_list(const std::vector<at::Tensor>& ts, const at::Tensor& like, const char* op, const char* what,
                bool same_numel = true) {
  for (const at::Tensor& t : ts) {
    TORCH_CHECK_VALUE(is_foo(t) && t.layout() == c10::kStrided, "fooccl ", op, ": every ", what,
                      " must be a dense foo tensor, got one on ", t.device());
    TORCH_CHECK_VALUE(t.device() == like.device(), "fooccl ", op, ": every ", what, " must be on ", like.device(),
                      ", got one on ", t.device());
    TORCH_CHECK_VALUE(!same_numel || t.numel() == like.numel(), "fooccl ", op, ": every ", what, " must have ", like.numel(),
                      " elements, as the ", is_foo(like) ? "tensor it pairs with" : "input", " does; got ",
                      t.numel());
  }
}

// NCCL's rules for reductions that gloo does not have: a bool SUM is a MAX
// and a bool PRODUCT a MIN (so that the result is a bool, never a byte
// count that wraps), and PREMUL_SUM takes floating types only; refused at
// the call, as NCCL refuses them.
void apply_nccl_reduce_rules(c10d::ReduceOp& op, const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& t : tensors) {
    if (op.op_ == c10d::ReduceOp::PREMUL_SUM) {
      TORCH_CHECK_VALUE(t.scalar_type() != at::kBool, "Cannot use ReduceOp.PREMUL_SUM with boolean inputs");
      TORCH_CHECK_TYPE(at::isFloatingType(t.scalar_type()),
                       "PreMulSum Data type must be half, float, bfloat16 or double, not ", t.scalar_type());
    }
  }
  bool all_bool = !tensors.empty();
  for (const at::Tensor& t : tensors) all_bool = all_bool && t.scalar_type() == at::kBool;
  if (!all_bool) return;
  if (op.op_ == c10d::ReduceOp::SUM) op = c10d::ReduceOp(c10d::ReduceOp::MAX);
  if (op.op_ == c10d::ReduceOp::PRODUCT) op = c10d::ReduceOp(c10d::ReduceOp::MIN);
}

// gloo has no PREMUL_SUM: the factor is applied to what gloo reduces (the
// tensor itself for an all_reduce, whose input is its output; a staged
// copy of the input otherwise), then gloo sums. Returns the factor (1 for
// other operations) and rewrites op.
double premul_factor(c10d::ReduceOp& op) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) return 1.0;
  auto* s = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(s != nullptr, "fooccl: PREMUL_SUM without a factor");
  double factor = s->tensor_factor.defined() ? s->tensor_factor.item<double>() : s->double_factor;
  op = c10d::ReduceOp(c10d::ReduceOp::SUM);
  return factor;
}

// gloo has no AVG for integers. NCCL's is the sum divided by the group's
// size, rounded toward zero: when an AVG involves integers, the op becomes
// SUM and the kernel divides what gloo summed (floats of the same
// coalesced call too, exactly). Returns the divisor (0: nothing to do)
// and rewrites op.
int64_t integer_average(c10d::ReduceOp& op, const std::vector<at::Tensor>& tensors, int size) {
  if (op.op_ != c10d::ReduceOp::AVG) return 0;
  bool integers = false;
  for (const at::Tensor& t : tensors) {
    TORCH_CHECK(t.scalar_type() != at::kBool, "Cannot use ReduceOp.AVG with boolean inputs");
    integers = integers || at::isIntegralType(t.scalar_type(), /*includeBool=*/false);
  }
  if (!integers) return 0;
  op = c10d::ReduceOp(c10d::ReduceOp::SUM);
  return size;
}

void divide(const at::Tensor& t, int64_t divisor) {
  if (at::isIntegralType(t.scalar_type(), /*includeBool=*/false)) {
    t.div_(divisor, "trunc");
  } else {
    t.div_(divisor);
  }
}

// As NCCL's all_reduce, reduce and broadcast: a complex tensor is
// exchanged as its real view, for the operations for which that is the
// same thing (`op`: none for a broadcast).
at::Tensor complex_as_real(const at::Tensor& t, const c10d::ReduceOp* op, const char* name) {
  if (!t.is_complex()) return t;
  if (op != nullptr) {
    const auto k = op->op_;
    TORCH_CHECK(k == c10d::ReduceOp::SUM || k == c10d::ReduceOp::AVG || k == c10d::ReduceOp::PREMUL_SUM, "fooccl ",
                name, " does not support this ReduceOp on complex tensors (SUM, AVG and PREMUL_SUM only, as NCCL)");
  }
  return at::view_as_real(t);
}

// The element counts an all_to_all_single moves to or from each rank: its
// splits count rows of dim 0 (equal parts when there are none).
std::vector<int64_t> elements_per_peer(const at::Tensor& t, const std::vector<int64_t>& splits, int size) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const int64_t row = rows == 0 ? 0 : t.numel() / rows;
  std::vector<int64_t> counts(size, rows / size * row);
  for (size_t j = 0; j < splits.size(); ++j) counts[j] = splits[j] * row;
  return counts;
}

void check_same_device(const at::Tensor& in, const at::Tensor& out, const char* op) {
  TORCH_CHECK_VALUE(in.device() == out.device(), "fooccl ", op, ": input and output must be on the same device, got ",
                    in.device(), " and ", out.device());
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

// A kernel that lets gloo work on foo memory in place touches what the
// race detector must know of. The c10d operator's own call declares its
// tensors as reads only (its schema marks nothing written): the writes
// are declared here, for the same launch.
void declare_direct(const std::vector<at::Tensor>& direct, const std::vector<at::Tensor>& written,
                    const char* name) {
  if (fooRaceGetMode() == fooRaceModeOff) return;
  std::vector<fooRaceAccess> accesses;
  for (const at::Tensor& t : direct) {
    if (t.nbytes() == 0) continue;
    bool writes = std::any_of(written.begin(), written.end(), [&](const at::Tensor& w) { return w.is_same(t); });
    accesses.push_back(fooRaceAccess{t.const_data_ptr(), t.nbytes(), writes ? 1 : 0, nullptr});
  }
  std::string op = std::string("fooccl ") + name;
  fooRaceDeclare(accesses.data(), accesses.size(), op.c_str(), nullptr);
}

// Drops the accesses declared for a launch that failed, which would
// otherwise be taken by the thread's next, unrelated launch.
struct DeclarationScope {
  fooRaceMark mark = fooRaceGetMark();
  ~DeclarationScope() { fooRaceRestoreMark(mark); }
};

// A receive whose peer's header says something else (P2PHeader.h): takes
// the message into a buffer of the size sent, then fails.
[[noreturn]] void take_and_fail(c10d::Backend& g, const P2PHeader& header, const at::Tensor& receiving,
                                int src, int tag, std::chrono::milliseconds timeout) {
  std::vector<at::Tensor> sink{header.buffer_for_sent()};
  wait_all({g.recv(sink, src, tag)}, timeout);
  TORCH_CHECK(false, header.mismatch(receiving));
}

// The message of a gloo failure, without C++ backtraces.
std::string describe(const std::exception& e) {
  if (auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

}  // namespace

FooBackend::FooBackend(c10::intrusive_ptr<c10d::Backend> gloo, c10::intrusive_ptr<c10d::Backend> fingerprints,
                       c10::intrusive_ptr<c10d::Backend> host, int rank, int size, std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size),
      gloo_(std::move(gloo)),
      fingerprints_(std::move(fingerprints)),
      host_(std::move(host)),
      timeout_(timeout) {
  for (const auto& g : {gloo_, fingerprints_, host_}) {
    TORCH_CHECK(g, "fooccl needs three gloo process groups");
    TORCH_CHECK(g->getRank() == rank && g->getSize() == size, "fooccl: a gloo group has rank ", g->getRank(), " of ",
                g->getSize(), ", not ", rank, " of ", size);
  }
}

FooBackend::~FooBackend() {
  // Queued kernels hold their own reference to gloo; the streams are
  // released once their work has run.
  for (auto& lanes : streams_) {
    for (auto& s : lanes) {
      if (s) fooStreamDestroy(s->stream());
    }
  }
}

namespace {
FooBackend::Creator& creator() {
  static auto* kept = new FooBackend::Creator();  // never destroyed: it may hold a Python object
  return *kept;
}
}  // namespace

void FooBackend::set_creator(Creator c) { creator() = std::move(c); }

c10::intrusive_ptr<c10d::Backend::Options> FooBackend::getBackendOptions() {
  return c10::make_intrusive<FooOptions>(timeout_);
}

c10::intrusive_ptr<c10d::Backend> FooBackend::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                    const std::vector<int>& ranks,
                                                    const c10::intrusive_ptr<Options>& opts) {
  auto me = std::find(ranks.begin(), ranks.end(), rank_);
  if (me == ranks.end()) return nullptr;  // not in the new group, as ProcessGroupGloo::split answers
  TORCH_CHECK(creator(), "fooccl cannot split a group: torch_foo's distributed package is not loaded");
  return creator()(store, static_cast<int>(me - ranks.begin()), static_cast<int>(ranks.size()),
                   opts ? opts->timeout : timeout_);
}

void FooBackend::shutdown() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& lanes : streams_) {
    for (auto& s : lanes) {
      // A failure belongs to the Work that carries it, not to shutdown.
      if (s && fooStreamSynchronize(s->stream()) != fooSuccess) fooGetLastError();
    }
  }
}

FooStream FooBackend::stream_for(Lane lane, c10::DeviceIndex device) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (streams_.size() <= static_cast<size_t>(device)) streams_.resize(device + 1);
  std::optional<FooStream>& slot = streams_[device][lane];
  if (!slot) {
    // A stream of its own, not one from the pool that user code may also
    // get: an exchange occupies its stream until every peer has joined.
    c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device));
    int least = 0, greatest = 0;
    FOO_CHECK(fooDeviceGetStreamPriorityRange(&least, &greatest));
    fooStream_t s = nullptr;
    FOO_CHECK(fooStreamCreateWithPriority(&s, fooStreamDefault, greatest));
    slot = getStreamFromExternal(s, device);
  }
  return *slot;
}

FooStream FooBackend::begin(Collective& c) {
  FooStream current = getCurrentFooStream(c.device.index());
  FooStream internal = stream_for(c.lane, c.device.index());
  // Ordered after what the caller already queued.
  FooEvent ready;
  ready.record(current);
  ready.block(internal);
  if (c.lane == kCollective && c.check_fingerprint && c.fingerprint.empty()) {
    // By default: the operation, then dtype and size of every buffer gloo
    // works on.
    c.fingerprint.push_back(static_cast<int64_t>(c.type));
    for (const at::Tensor& s : c.exchanged()) {
      c.fingerprint.push_back(static_cast<int64_t>(s.scalar_type()));
      c.fingerprint.push_back(s.numel());
    }
  }
  return internal;
}

c10::intrusive_ptr<c10d::Work> FooBackend::end(Collective& c, const FooStream& internal) {
  // As NCCL does: the caching allocator must not hand this memory to the
  // caller's streams before the internal stream is done with it.
  FooStream current = getCurrentFooStream(c.device.index());
  for (const at::Tensor& t : c.device_tensors) {
    if (t.defined() && t.storage().nbytes() > 0 && internal != current) {
      getFooDeviceAllocator()->recordStream(t.storage().data_ptr(), internal.unwrap());
    }
  }
  release_after(c.staged, internal);
  std::vector<FailureSlot> failures = std::move(c.covered_failures);
  failures.push_back(c.failure);
  auto work = c10::make_intrusive<FooWork>(rank_, c.type, c.name, c.device, c.outputs, c.host_blocking,
                                           std::move(failures));
  work->record_end(internal);
  return work;
}

// Runs `fn` (which may throw) as a kernel on `internal`; a failure becomes
// the stream's error, named after the collective (`name`: a literal, which
// the profiler also shows), and is also left in `failure`, for the
// collective's Work.
template <class F>
static void exchange_kernel(const FooStream& internal, const char* name, const FailureSlot& failure, F fn) {
  launch_kernel(
      internal,
      [name, failure, fn = std::move(fn)]() mutable {
        try {
          fn();
        } catch (const std::exception& e) {
          std::string message = std::string("fooccl ") + name + " failed: " + describe(e);
          *failure = message;
          throw std::runtime_error(message);
        }
      },
      name);
}

void FooBackend::direct_or_staged(Collective& c, const std::vector<Buffer>& buffers, bool direct) {
  // (Negated and conjugated views never get here: the dispatcher's
  // fallbacks for those bits hand c10d's operators resolved copies.)
  if (direct) {
    for (const Buffer& b : buffers) {
      c.direct.push_back(b.tensor);
      if (b.written) c.written.push_back(b.tensor);
    }
    return;
  }
  for (const Buffer& b : buffers) c.staged.push_back(pinned_like(b.tensor));
  c.stage_in = [buffers, staged = c.staged] {
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (buffers[i].read) staged[i].copy_(buffers[i].tensor, true);
    }
  };
  c.stage_out = [buffers, staged = c.staged] {
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (buffers[i].written) buffers[i].tensor.copy_(staged[i], true);
    }
  };
}

c10::intrusive_ptr<c10d::Work> FooBackend::launch(Collective c) {
  c10::DeviceGuard device_guard(c.device);
  // A replay would exchange with peers that are not replaying: refused, as
  // a capture that cannot be replayed faithfully.
  assert_not_capturing("A fooccl collective");
  for (const at::Tensor& t : c.device_tensors) check_exchangeable(t, c.type);
  if (coalescing_ && c.lane == kCollective) coalesced_collectives_ = c.device;
  FooStream internal = begin(c);
  std::shared_ptr<FingerPrintExchange> fingerprint;
  if (!c.fingerprint.empty()) fingerprint = std::make_shared<FingerPrintExchange>(*fingerprints_, c.fingerprint, c.pairs);
  {
    c10::StreamGuard stream_guard(internal.unwrap());
    if (c.stage_in) c.stage_in();
    // foo_sim's device memory is host memory: gloo can work on it in
    // place, as NCCL works on device memory, and be ordered the same way.
    std::vector<HostView> views(c.exchanged().begin(), c.exchanged().end());
    std::optional<DeclarationScope> declared;
    if (!c.direct.empty()) {
      declared.emplace();
      declare_direct(c.direct, c.written, c.name);
    }
    if (c.start_p2p_headers) c.start_p2p_headers();
    // Point to point moves bytes whatever the type; collectives need one
    // gloo knows.
    const bool typed = c.lane == kCollective;
    c.failure = std::make_shared<std::string>();
    if (coalescing_ && c.lane == kCollective) coalesced_failures_.push_back(c.failure);
    // Collectives take their turn (ExchangeOrder.h); sends and receives
    // are matched by peer and tag, whatever their order.
    std::shared_ptr<ExchangeOrder> order = c.lane == kCollective ? exchange_order_ : nullptr;
    const uint64_t ticket = order ? order->take() : 0;
    auto exchange = [gloo = gloo_, views = std::move(views), call = std::move(c.call), timeout = timeout_,
                     fingerprint = std::move(fingerprint), typed, after = std::move(c.after_exchange), order, ticket] {
      std::optional<ExchangeTurn> turn;
      if (order) turn.emplace(*order, ticket, timeout);
      std::vector<at::Tensor> cpu;
      std::vector<MemoryRange> ranges;
      cpu.reserve(views.size());
      for (const HostView& v : views) {
        cpu.push_back(typed ? as_gloo_type(v.tensor()) : v.tensor());
        ranges.push_back({v.data, v.bytes()});
      }
      // gloo's threads work on this memory for the kernel while it runs.
      BufferRegistration registration(std::move(ranges));
      if (fingerprint) fingerprint->check(timeout);
      // No call: a Work that only marks a point of the stream (endCoalescing).
      c10::intrusive_ptr<c10d::Work> w = call ? call(*gloo, cpu) : nullptr;
      if (w) wait_all({w}, timeout);
      if (after) after(cpu);
    };
    try {
      exchange_kernel(internal, c.name, c.failure, std::move(exchange));
    } catch (...) {
      if (order) order->finish(ticket);  // never queued: later collectives must not wait for it
      throw;
    }
    if (c.stage_out) c.stage_out();
  }
  return end(c, internal);
}

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

c10::intrusive_ptr<c10d::Work> FooBackend::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  if (all_cpu(tensors)) return host_->send(tensors, dst, tag);
  check_one(tensors, "send");
  check_exchangeable(tensors[0], c10d::OpType::SEND);
  if (coalescing_) return coalesce({true, tensors[0], dst, tag});
  at::Tensor t = tensors[0];
  at::Tensor s = pinned_like(t);
  Collective c{"send", c10d::OpType::SEND, kSend};
  c.device = t.device();
  c.staged = {s};
  c.stage_in = [s, t]() mutable { s.copy_(t, true); };
  auto header = std::make_shared<std::optional<P2PHeader>>();
  c.start_p2p_headers = [header, group = fingerprints_, t, dst, tag] {
    *header = P2PHeader::send(*group, t, dst, tag);
  };
  c.call = [dst, tag, header, timeout = timeout_](c10d::Backend& g, std::vector<at::Tensor>& cpu) {
    wait_all({(*header)->work(), g.send(cpu, dst, tag)}, timeout);
    return c10::intrusive_ptr<c10d::Work>();
  };
  c.device_tensors = {t};
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  if (all_cpu(tensors)) return host_->recv(tensors, src, tag);
  check_one(tensors, "recv");
  check_exchangeable(tensors[0], c10d::OpType::RECV);
  if (coalescing_) return coalesce({false, tensors[0], src, tag});
  at::Tensor t = tensors[0];
  at::Tensor s = pinned_like(t);
  Collective c{"recv", c10d::OpType::RECV, kRecv};
  c.device = t.device();
  c.staged = {s};
  auto header = std::make_shared<std::optional<P2PHeader>>();
  c.start_p2p_headers = [header, group = fingerprints_, src, tag] {
    *header = P2PHeader::recv(*group, src, tag);
  };
  c.call = [src, tag, header, timeout = timeout_](c10d::Backend& g, std::vector<at::Tensor>& cpu) {
    const P2PHeader& a = **header;
    a.wait(timeout);
    if (!a.matches(cpu[0])) take_and_fail(g, a, cpu[0], src, tag, timeout);
    return g.recv(cpu, src, tag);
  };
  c.stage_out = [s, t]() mutable { t.copy_(s, true); };
  c.device_tensors = {t};
  c.outputs = {t};
  return launch(std::move(c));
}

c10::intrusive_ptr<c10d::Work> FooBackend::coalesce(PointToPoint op) {
  TORCH_CHECK_VALUE(coalesced_.empty() || coalesced_.front().tensor.device() == op.tensor.device(),
                    "fooccl: the operations of one batch must be on one foo device");
  c10::Device device = op.tensor.device();
  coalesced_.push_back(std::move(op));
  // The batch's own Work (from endCoalescing) covers the operation; this
  // one has nothing of its own to wait for, as with NCCL inside a group.
  auto work = c10::make_intrusive<FooWork>(rank_, c10d::OpType::COALESCED, "coalesced", device,
                                           std::vector<at::Tensor>{}, false);
  c10::DeviceGuard guard(device);
  work->record_end(getCurrentFooStream(device.index()));
  return work;
}

void FooBackend::startCoalescing() {
  TORCH_CHECK(!coalescing_, "fooccl: coalescing already started");
  coalescing_ = true;
  coalesced_.clear();
  coalesced_collectives_.reset();
  coalesced_failures_.clear();
}

c10::intrusive_ptr<c10d::Work> FooBackend::endCoalescing() {
  TORCH_CHECK(coalescing_, "fooccl: endCoalescing without startCoalescing");
  coalescing_ = false;
  std::vector<PointToPoint> ops = std::move(coalesced_);
  coalesced_.clear();
  std::optional<c10::Device> collectives = std::exchange(coalesced_collectives_, std::nullopt);
  Collective c{"batch_isend_irecv", c10d::OpType::COALESCED, kSend};
  c.check_fingerprint = false;
  c.covered_failures = std::exchange(coalesced_failures_, {});
  if (ops.empty()) {
    // Only collectives in the group: they are already queued on the
    // collective stream of their device, and this Work ends after them.
    c.name = "coalesced collectives";
    c.lane = kCollective;
    c.device = collectives.value_or(c10::Device(c10::DeviceType::PrivateUse1, current_device()));
    return launch(std::move(c));
  }
  c.device = ops.front().tensor.device();
  if (collectives) {
    // As NCCL's group, the batch's Work (the one the group returns) ends
    // after the group's collectives too: its stream waits for them.
    FooEvent done;
    done.record(stream_for(kCollective, collectives->index()));
    done.block(stream_for(kSend, c.device.index()));
  }
  std::vector<at::Tensor> sends, sent, recvs, received;
  std::vector<std::array<int, 3>> plan;  // is_send, peer, tag, in the batch's order
  for (const PointToPoint& op : ops) {
    c.staged.push_back(pinned_like(op.tensor));
    (op.is_send ? sends : recvs).push_back(op.tensor);
    (op.is_send ? sent : received).push_back(c.staged.back());
    plan.push_back({op.is_send ? 1 : 0, op.peer, op.tag});
    c.device_tensors.push_back(op.tensor);
  }
  c.stage_in = [sends, sent]() mutable {
    for (size_t i = 0; i < sends.size(); ++i) sent[i].copy_(sends[i], true);
  };
  auto headers = std::make_shared<std::vector<P2PHeader>>();
  c.start_p2p_headers = [headers, group = fingerprints_, ops] {
    for (const PointToPoint& op : ops) {
      headers->push_back(op.is_send ? P2PHeader::send(*group, op.tensor, op.peer, op.tag)
                                      : P2PHeader::recv(*group, op.peer, op.tag));
    }
  };
  c.call = [plan, headers, timeout = timeout_](c10d::Backend& g,
                                                 std::vector<at::Tensor>& cpu) -> c10::intrusive_ptr<c10d::Work> {
    // Every receive's header first: the peers' hosts sent them, so
    // waiting cannot deadlock, and nothing is in flight yet if one never
    // comes.
    for (size_t i = 0; i < plan.size(); ++i) {
      if (!plan[i][0]) (*headers)[i].wait(timeout);
    }
    std::vector<c10::intrusive_ptr<c10d::Work>> started;
    std::string mismatch;
    for (size_t i = 0; i < plan.size(); ++i) {
      const P2PHeader& a = (*headers)[i];
      std::vector<at::Tensor> one{cpu[i]};
      if (plan[i][0]) {
        started.push_back(a.work());
        started.push_back(g.send(one, plan[i][1], plan[i][2]));
        continue;
      }
      if (!a.matches(cpu[i])) {
        if (mismatch.empty()) mismatch = a.mismatch(cpu[i]);
        one = {a.buffer_for_sent()};  // taken all the same, so that later messages stay matched
      }
      started.push_back(g.recv(one, plan[i][1], plan[i][2]));
    }
    wait_all(started, timeout);
    TORCH_CHECK(mismatch.empty(), mismatch);
    return {};
  };
  c.stage_out = [recvs, received]() mutable {
    for (size_t i = 0; i < recvs.size(); ++i) recvs[i].copy_(received[i], true);
  };
  c.outputs = recvs;
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
