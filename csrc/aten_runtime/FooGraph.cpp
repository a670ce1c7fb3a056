#include "aten_runtime/FooGraph.h"

#include <atomic>
#include <memory>
#include <mutex>

#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include "aten_runtime/FooHostAllocator.h"
#include "runtime/FooCachingAllocator.h"
#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooGraphsUtils.h"
#include "runtime/FooLaunch.h"

namespace foo {
namespace {

fooStreamCaptureMode to_foo_mode(at::GraphCaptureMode mode) {
  switch (mode) {
    case at::GraphCaptureMode::ThreadLocal: return fooStreamCaptureModeThreadLocal;
    case at::GraphCaptureMode::Relaxed: return fooStreamCaptureModeRelaxed;
    case at::GraphCaptureMode::Default:  // global, as torch.cuda.graph's default
    case at::GraphCaptureMode::Global: break;
  }
  return fooStreamCaptureModeGlobal;
}

// Whether `stream` takes part in capture `id` (forked side streams included).
bool in_capture(fooStream_t stream, unsigned long long id) {
  fooStreamCaptureStatus status = fooStreamCaptureStatusNone;
  unsigned long long stream_id = 0;
  if (fooStreamGetCaptureInfo(stream, &status, &stream_id) != fooSuccess) {
    (void)fooGetLastError();
    return false;
  }
  return status != fooStreamCaptureStatusNone && stream_id == id;
}

}  // namespace

FooGraphImpl::FooGraphImpl(const at::GraphImplArgs& args) : keep_graph_(args.keep_graph) {}

FooGraphImpl::~FooGraphImpl() {
  // Destroyed mid-capture (an exception unwound past capture_end): the
  // stream must work again.
  if (capturing_) abandon_capture();
  try {
    reset();
  } catch (...) {
    // A destructor does not throw; reset() releases what it can first.
  }
}

void FooGraphImpl::capture_begin(c10::MempoolId_t pool, at::GraphCaptureMode capture_mode) {
  TORCH_CHECK(!capturing_, "This graph is already capturing; call capture_end() first");
  TORCH_CHECK(!has_graph_, "This graph already holds a captured graph; call reset() before capturing again, "
              "or use another graph");
  TORCH_CHECK(pool.first == 0 || pool.second == 0, "Invalid memory pool id (", pool.first, ", ", pool.second,
              "): use another graph's pool() or torch.foo.graph_pool_handle()");
  device_ = current_device();
  FooStream stream = getCurrentFooStream(device_);
  // CUDA's rule and message: the default stream synchronizes with the
  // others, so work on it cannot be captured.
  TORCH_CHECK(stream != getDefaultFooStream(device_),
              "foo graphs must be captured on a non-default stream. "
              "(However, after capture, it's ok to replay them on the default stream.)");
  // The generator's slot is allocated before the pool takes over, outside it.
  auto rng = std::make_shared<GraphRngSlot>();
  rng->seed_and_offset = at::empty({2}, at::TensorOptions().dtype(at::kLong).device(c10::kPrivateUse1, device_));

  // The pools are registered before the capture begins, as CUDA does, so
  // that a refusal (a pool another capture is filling) leaves no capture
  // behind; their filters take the capture's id once it exists.
  pool_ = pool == c10::MempoolId_t{0, 0} ? graph_private_pool_id() : pool;
  auto id = std::make_shared<std::atomic<unsigned long long>>(0);
  auto ours = [id](fooStream_t s) {
    unsigned long long current = id->load(std::memory_order_acquire);
    return current != 0 && in_capture(s, current);
  };
  begin_allocate_to_pool(device_, pool_, ours);
  try {
    begin_allocate_host_to_pool(pool_, [ours](c10::Stream s) { return ours(FooStream(s).stream()); });
  } catch (...) {
    end_allocate_to_pool(device_, pool_);
    release_pool(device_, pool_);
    throw;
  }
  holds_pool_ = true;
  note_capture_begun();
  fooError_t e = fooStreamBeginCapture(stream.stream(), to_foo_mode(capture_mode));
  if (e != fooSuccess) {
    note_capture_ended();
    end_allocate_to_pool(device_, pool_);
    end_allocate_host_to_pool(pool_);
    release_memory_pool();
    FOO_CHECK(e);
  }
  capturing_ = true;
  if (warnings_ == nullptr) warnings_ = new_graph_warning_inbox();
  begin_capture_warnings(warnings_);
  warnings_replayer_.store(own_thread_inbox(), std::memory_order_relaxed);
  capture_stream_ = stream;
  capture_id_ = capture_id(stream);
  id->store(capture_id_, std::memory_order_release);
  generator_ = default_generator(device_);
  try {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    generator_.get<FooGeneratorImpl>()->capture_prologue(rng, capture_id_);
  } catch (...) {
    generator_ = at::Generator();
    abandon_capture();
    release_memory_pool();
    throw;
  }
  rng_ = std::move(rng);
}

void FooGraphImpl::abandon_capture() noexcept {
  fooGraph_t graph = nullptr;
  if (fooStreamEndCapture(capture_stream_->stream(), &graph) == fooSuccess) {
    fooGraphDestroy(graph);
  } else {
    (void)fooGetLastError();
  }
  end_capture_bookkeeping();
}

void FooGraphImpl::end_capture_bookkeeping() noexcept {
  try {
    end_allocate_to_pool(device_, pool_);
    end_allocate_host_to_pool(pool_);
  } catch (...) {
    // Only an internal inconsistency throws here; the capture ends anyway.
  }
  if (generator_.defined()) {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    generator_.get<FooGeneratorImpl>()->capture_epilogue(capture_id_);
  }
  note_capture_ended();
  end_capture_warnings(warnings_);
  capturing_ = false;
}

void FooGraphImpl::capture_end() {
  TORCH_CHECK(capturing_, "capture_end() called without a capture_begin() on this graph");
  FooStream stream = getCurrentFooStream(device_);
  TORCH_CHECK(stream == *capture_stream_, "A graph capture must end on the stream it began on (", *capture_stream_,
              "), but the current stream is ", stream);
  fooGraph_t graph = nullptr;
  fooError_t e = fooStreamEndCapture(stream.stream(), &graph);
  if (e == fooErrorStreamCaptureWrongThread) FOO_CHECK(e);  // the capture goes on: its owner ends it
  end_capture_bookkeeping();
  if (e != fooSuccess) {
    // The capture failed (an illegal operation inside it, or a side stream
    // not joined back): no graph, and its memory pool is given up.
    generator_ = at::Generator();
    rng_.reset();
    release_memory_pool();
    FOO_CHECK(e);
  }
  graph_ = graph;
  has_graph_ = true;
  size_t nodes = 0;
  FOO_CHECK(fooGraphGetNodeCount(graph_, &nodes));
  if (nodes == 0) {
    TORCH_WARN("The captured foo graph is empty: no work was queued on the capturing stream. Did the work run on "
               "another stream than the one the capture began on?");
  }
  if (!keep_graph_) {
    instantiate();
    if (!debug_) {
      fooGraphDestroy(graph_);
      graph_ = nullptr;
    }
  }
}

void FooGraphImpl::instantiate() {
  TORCH_CHECK(has_graph_, "instantiate() called on a graph that holds no captured graph; capture one first");
  TORCH_CHECK(graph_ != nullptr, "This graph was instantiated when its capture ended and kept no graph to "
              "instantiate again; construct it with keep_graph=True to instantiate explicitly");
  if (exec_ != nullptr) {
    fooGraphExecDestroy(exec_);
    exec_ = nullptr;
  }
  FOO_CHECK(fooGraphInstantiate(&exec_, graph_, 0));
}

void FooGraphImpl::replay() {
  TORCH_CHECK(has_graph_, "replay() called on a graph that holds no captured graph; capture one first "
              "(capture_begin()/capture_end(), or `with graph:`)");
  if (exec_ == nullptr) instantiate();
  c10::DeviceGuard guard(c10::Device(c10::kPrivateUse1, device_));
  if (generator_.defined()) {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    generator_.get<FooGeneratorImpl>()->replay_prologue(*rng_);
  }
  FooStream stream = getCurrentFooStream(device_);
  KernelWarningInbox* replayer = own_thread_inbox();
  if (warnings_replayer_.exchange(replayer, std::memory_order_relaxed) != replayer) {
    launch_kernel(stream, [graph = warnings_, replayer] { point_graph_warnings(graph, replayer); },
                  "foo::graph_warnings_prologue");
  }
  FOO_CHECK(fooGraphLaunch(exec_, stream.stream()));
}

void FooGraphImpl::release_memory_pool() noexcept {
  if (!holds_pool_) return;
  holds_pool_ = false;
  try {
    release_pool(device_, pool_);
    release_host_pool(pool_);
  } catch (...) {
    // Memory that cannot be returned now stays cached; nothing else to do.
  }
}

void FooGraphImpl::reset() {
  TORCH_CHECK(!capturing_, "reset() called on a graph that is capturing; call capture_end() first");
  // Replays already queued still run: foo_sim keeps what they need. The
  // pool is only released (as CUDA's): its memory goes back at a later
  // empty_cache, so reset never waits for the device.
  if (exec_ != nullptr) fooGraphExecDestroy(exec_);
  if (graph_ != nullptr) fooGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
  has_graph_ = false;
  generator_ = at::Generator();
  rng_.reset();
  release_memory_pool();
}

c10::MempoolId_t FooGraphImpl::pool() const {
  TORCH_CHECK(capturing_ || has_graph_, "pool() called on a graph that was not captured; its memory pool exists "
              "from capture_begin() on");
  return pool_;
}

void FooGraphImpl::enable_debug_mode() { debug_ = true; }

void FooGraphImpl::debug_dump(const std::string& path) {
  TORCH_CHECK(debug_, "debug_dump() needs enable_debug_mode() to be called before the capture");
  TORCH_CHECK(graph_ != nullptr, "debug_dump(): this graph holds no captured graph to dump");
  FOO_CHECK(fooGraphDebugDotPrint(graph_, path.c_str(), 0));
}

}  // namespace foo

namespace at {
// The key is the backend's upper-cased name once PrivateUse1 is renamed.
REGISTER_GRAPH_IMPL(FOO, foo::FooGraphImpl);
}  // namespace at
