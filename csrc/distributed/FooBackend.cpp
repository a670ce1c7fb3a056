// fooccl's core: construction, splitting, its internal streams, and the
// launch every collective goes through (FooBackend.h). The collectives are
// in FooCollectives.cpp, sends and receives in FooPointToPoint.cpp,
// coalescing in FooCoalescing.cpp.
#include "distributed/FooBackend.h"

#include <algorithm>
#include <utility>

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <foo_sim/foo_race.h>

#include "distributed/CollectiveFingerPrint.h"
#include "distributed/Dtypes.h"
#include "distributed/FooWork.h"
#include "distributed/GlooWaits.h"
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

}  // namespace foo::distributed
