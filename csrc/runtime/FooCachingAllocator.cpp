#include "runtime/FooCachingAllocator.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include <c10/util/Exception.h>
#include <foo_sim/foo_race.h>

#include "runtime/FooDeviceCachingAllocator.h"
#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooInit.h"
#include "runtime/FooStream.h"

namespace foo {
namespace {

using caching_allocator::Block;
using caching_allocator::DeviceCachingAllocator;
using c10::CachingDeviceAllocator::DeviceStats;

void local_raw_delete(void* ptr);

class FooDeviceAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t size) override {
    auto device = current_device();
    if (size == 0) return {nullptr, nullptr, &local_raw_delete, c10::Device(c10::DeviceType::PrivateUse1, device)};
    // As CUDA's allocator: larger requests (a negative size among them)
    // would overflow the rounding below.
    constexpr size_t kOneExaByte = size_t{1} << 60;
    TORCH_CHECK_WITH(OutOfMemoryError, size < kOneExaByte, "foo out of memory. Tried to allocate more than 1EB memory.");
    lazy_init();
    fooStream_t stream = getCurrentFooStream(device).stream();
    Block* block = cache(device).malloc(size, stream);
    // Race detector (foo_race.h): handing the block to `stream` is a write
    // of its next launch, so reuse after a free not ordered with an earlier
    // use on another stream (no record_stream) is reported.
    fooRaceDeclareAllocation(block->ptr, size, stream);
    // The context is the block itself: frees and record_stream need no lookup.
    return {block->ptr, block, &local_raw_delete, c10::Device(c10::DeviceType::PrivateUse1, device)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &local_raw_delete; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    FOO_CHECK(fooMemcpy(dest, src, count, fooMemcpyDeviceToDevice));
  }

  bool initialized() override { return is_initialized(); }

  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      if (caches_[d]) caches_[d]->empty_cache();
    }
  }

  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override {
    if (!ptr.get() || ptr.get_deleter() != &local_raw_delete) return;  // empty, or not ours
    FooStream foo_stream(stream);
    check_device_index(foo_stream.device_index());
    auto* block = static_cast<Block*>(ptr.get_context());
    cache(block->device).record_stream(block, foo_stream);
  }

  DeviceStats getDeviceStats(c10::DeviceIndex device) override { return cache(device).stats(); }

  DeviceCachingAllocator& device_cache(c10::DeviceIndex device) { return cache(device); }

  MemorySnapshot snapshot() {
    MemorySnapshot result;
    result.device_traces.resize(is_initialized() ? device_count() : 0);
    for (c10::DeviceIndex d = 0; d < static_cast<c10::DeviceIndex>(result.device_traces.size()); ++d) {
      cache(d).snapshot(result.segments, result.device_traces[d]);
    }
    return result;
  }

  void clear_traces() {
    if (!is_initialized()) return;
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) cache(d).clear_trace();
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override { cache(device).reset_accumulated(); }

  void resetPeakStats(c10::DeviceIndex device) override { cache(device).reset_peak(); }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_device_index(device);
    size_t free = 0, total = 0;
    FOO_CHECK(on_device(device, [&] { return fooMemGetInfo(&free, &total); }));
    return {free, total};
  }

  // Called by deleters: never throws.
  void free(Block* block) noexcept {
    // A child forked after initialization cannot reach the device; its
    // copies of the parent's blocks are simply dropped.
    if (in_bad_fork()) return;
    fooRaceNoteFree(block->ptr, block->requested_size);  // race detector: later races here are uses after free
    caches_[block->device]->free(block);  // the block's cache exists: it made the block
  }

 private:
  DeviceCachingAllocator& cache(c10::DeviceIndex device) {
    check_device_index(device);
    // Read before std::call_once, which sets two thread-locals of its own
    // on every call, done or not.
    if (DeviceCachingAllocator* created = ready_[device].load(std::memory_order_acquire)) return *created;
    std::call_once(created_[device], [&] { caches_[device] = std::make_unique<DeviceCachingAllocator>(device); });
    ready_[device].store(caches_[device].get(), std::memory_order_release);
    return *caches_[device];
  }

  static constexpr int kMaxDevices = FOO_SIM_MAX_DEVICES;
  std::once_flag created_[kMaxDevices];
  std::unique_ptr<DeviceCachingAllocator> caches_[kMaxDevices];
  std::atomic<DeviceCachingAllocator*> ready_[kMaxDevices]{};
};

FooDeviceAllocator g_allocator;

void local_raw_delete(void* ctx) {
  if (ctx != nullptr) g_allocator.free(static_cast<Block*>(ctx));
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

}  // namespace

c10::DeviceAllocator* getFooDeviceAllocator() { return &g_allocator; }

void begin_allocate_to_pool(c10::DeviceIndex device, c10::MempoolId_t id, std::function<bool(fooStream_t)> filter) {
  g_allocator.device_cache(device).begin_allocate_to_pool(id, std::move(filter), /*capture=*/true);
}

void begin_allocate_current_thread_to_pool(c10::DeviceIndex device, c10::MempoolId_t id) {
  // The filter runs on the allocating thread, whatever the stream.
  g_allocator.device_cache(device).begin_allocate_to_pool(
      id, [owner = std::this_thread::get_id()](fooStream_t) { return std::this_thread::get_id() == owner; },
      /*capture=*/false);
}

void end_allocate_to_pool(c10::DeviceIndex device, c10::MempoolId_t id) {
  g_allocator.device_cache(device).end_allocate_to_pool(id);
}

void release_pool(c10::DeviceIndex device, c10::MempoolId_t id) { g_allocator.device_cache(device).release_pool(id); }

void empty_pool(c10::DeviceIndex device, c10::MempoolId_t id) { g_allocator.device_cache(device).empty_pool(id); }

void create_or_incref_pool(c10::DeviceIndex device, c10::MempoolId_t id, bool use_on_oom, bool no_split) {
  g_allocator.device_cache(device).create_or_incref_pool(id, use_on_oom, no_split);
}


void set_memory_fraction(c10::DeviceIndex device, double fraction) {
  TORCH_CHECK_VALUE(fraction >= 0.0 && fraction <= 1.0, "Invalid fraction value: ", fraction, ". Allowed range: 0~1");
  g_allocator.device_cache(device).set_memory_fraction(fraction);
}

double memory_fraction(c10::DeviceIndex device) { return g_allocator.device_cache(device).memory_fraction(); }

int pool_use_count(c10::DeviceIndex device, c10::MempoolId_t id) {
  return g_allocator.device_cache(device).pool_use_count(id);
}

c10::MempoolId_t graph_private_pool_id() {
  static std::atomic<c10::CaptureId_t> next{1};
  return {next.fetch_add(1), 0};
}

c10::MempoolId_t graph_pool_handle() {
  static std::atomic<c10::CaptureId_t> next{1};
  return {0, next.fetch_add(1)};
}

MemorySnapshot memory_snapshot() { return g_allocator.snapshot(); }

void record_memory_history(const HistoryOptions& options) {
  set_history_options(options);
  // Turning recording off or clearing it drops the recorded entries (and
  // the stacks they hold) now, not at each device's next allocation.
  if (!options.enabled || options.clear_history) g_allocator.clear_traces();
}


}  // namespace foo
