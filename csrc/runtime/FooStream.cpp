#include "runtime/FooStream.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <c10/util/Exception.h>

#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooInit.h"
#include "runtime/FooKernelWarnings.h"

namespace foo {
namespace {

constexpr int kMaxDevices = FOO_SIM_MAX_DEVICES;

enum class StreamKind { Default, Pooled, External };

StreamKind kind_of(c10::StreamId id) {
  if (id == 0) return StreamKind::Default;
  if ((id & 3) == 1) return StreamKind::Pooled;
  return StreamKind::External;
}

c10::StreamId pooled_id(int slot) { return (static_cast<c10::StreamId>(slot) << 2) | 1; }
int slot_of(c10::StreamId id) { return static_cast<int>(id >> 2); }

struct DevicePools {
  std::once_flag created;
  // Set once created: every launch asks for a stream, and std::call_once
  // sets two thread-locals of its own on each call, done or not.
  std::atomic<bool> ready{false};
  fooStream_t default_stream = nullptr;
  int levels = 0;
  std::vector<fooStream_t> pooled;  // levels * kStreamsPerPool, by slot
  std::vector<std::atomic<uint32_t>> next;  // round-robin cursor per level
};

std::array<DevicePools, kMaxDevices>& all_pools() {
  static std::array<DevicePools, kMaxDevices> pools;
  return pools;
}

int least_priority() { return std::get<0>(FooStream::priority_range()); }
int greatest_priority() { return std::get<1>(FooStream::priority_range()); }

// Creates the device's pools on first use. Pool streams live as long as
// the process, like CUDA's: handed-out c10::Streams may outlive any owner.
DevicePools& pools_of(c10::DeviceIndex device) {
  check_device_index(device);
  DevicePools& p = all_pools()[device];
  if (C10_LIKELY(p.ready.load(std::memory_order_acquire))) return p;
  lazy_init();
  std::call_once(p.created, [&] {
    FOO_CHECK(fooDeviceGetDefaultStream(device, &p.default_stream));
    p.levels = least_priority() - greatest_priority() + 1;
    p.next = std::vector<std::atomic<uint32_t>>(p.levels);
    on_device(device, [&] {
      for (int level = 0; level < p.levels; ++level) {
        for (int i = 0; i < kStreamsPerPool; ++i) {
          fooStream_t s;
          FOO_CHECK(fooStreamCreateWithPriority(&s, fooStreamDefault, least_priority() - level));
          p.pooled.push_back(s);
        }
      }
    });
  });
  p.ready.store(true, std::memory_order_release);
  return p;
}

// -1 names the current device, as in c10/cuda; other negative indices are
// invalid and the callers' checks refuse them.
c10::DeviceIndex resolve(c10::DeviceIndex device) { return device == -1 ? current_device() : device; }

// Each thread's current stream per device; 0 (the default stream) at first.
thread_local std::array<c10::StreamId, kMaxDevices> t_current{};

c10::Stream make_stream(c10::DeviceIndex device, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), id);
}

}  // namespace

FooStream::FooStream(c10::Stream stream) : stream_(stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1, "Expected a foo stream, got a stream of device ",
              stream.device());
}

fooStream_t FooStream::stream() const {
  c10::StreamId id = stream_.id();
  switch (kind_of(id)) {
    case StreamKind::Default:
      return pools_of(device_index()).default_stream;
    case StreamKind::Pooled: {
      DevicePools& p = pools_of(device_index());
      int slot = slot_of(id);
      TORCH_CHECK(slot >= 0 && slot < static_cast<int>(p.pooled.size()), "Invalid foo stream id ", id);
      return p.pooled[slot];
    }
    case StreamKind::External:
      break;
  }
  return reinterpret_cast<fooStream_t>(static_cast<intptr_t>(id));
}

int FooStream::priority() const {
  int priority = 0;
  FOO_CHECK(fooStreamGetPriority(stream(), &priority));
  return priority;
}

bool FooStream::query() const { return query_result(fooStreamQuery(stream())); }

void FooStream::synchronize() const {
  FOO_CHECK(fooStreamSynchronize(stream()));
  reraise_kernel_warnings();
}

std::tuple<int, int> FooStream::priority_range() {
  int least = 0, greatest = 0;
  FOO_CHECK(fooDeviceGetStreamPriorityRange(&least, &greatest));
  return {least, greatest};
}

FooStream getStreamFromPool(int priority, c10::DeviceIndex device) {
  device = resolve(device);
  DevicePools& p = pools_of(device);
  int clamped = std::min(std::max(priority, greatest_priority()), least_priority());
  int level = least_priority() - clamped;
  uint32_t index = p.next[level].fetch_add(1, std::memory_order_relaxed) % kStreamsPerPool;
  return FooStream(make_stream(device, pooled_id(level * kStreamsPerPool + static_cast<int>(index))));
}

FooStream getStreamFromPool(bool isHighPriority, c10::DeviceIndex device) {
  return getStreamFromPool(isHighPriority ? greatest_priority() : least_priority(), device);
}

FooStream getStreamFromExternal(fooStream_t stream, c10::DeviceIndex device) {
  TORCH_CHECK(stream != nullptr, "ExternalStream needs a non-null foo stream");
  check_device_index(device);
  lazy_init();
  int owner = -1;
  FOO_CHECK(fooStreamGetDevice(stream, &owner));
  TORCH_CHECK(owner == device, "The external foo stream belongs to foo device ", owner, ", not to foo device ",
              static_cast<int>(device));
  auto id = static_cast<c10::StreamId>(reinterpret_cast<intptr_t>(stream));
  TORCH_INTERNAL_ASSERT(kind_of(id) == StreamKind::External, "unexpected foo stream address ", stream);
  return FooStream(make_stream(device, id));
}

FooStream getDefaultFooStream(c10::DeviceIndex device) {
  device = resolve(device);
  check_device_index(device);
  return FooStream(make_stream(device, 0));
}

FooStream getCurrentFooStream(c10::DeviceIndex device) {
  device = resolve(device);
  check_device_index(device);
  return FooStream(make_stream(device, t_current[device]));
}

bool currentFooStreamsAreDefault() {
  const auto& current = t_current;
  return std::all_of(current.begin(), current.begin() + device_count(), [](c10::StreamId id) { return id == 0; });
}

void setCurrentFooStream(FooStream stream) {
  check_device_index(stream.device_index());
  t_current[stream.device_index()] = stream.id();
}

std::ostream& operator<<(std::ostream& out, const FooStream& stream) { return out << stream.unwrap(); }

}  // namespace foo
