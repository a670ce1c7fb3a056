// foo streams as c10::Streams, in the shape of c10/cuda/CUDAStream.h.
//
// Per device there is the default stream and, for each priority level, a
// pool of streams handed out round-robin; each thread has a current stream
// per device (initially the default stream). A StreamId encodes which:
//   0                   the default stream
//   (slot << 2) | 1     pooled stream `slot` (level * kStreamsPerPool + index)
//   anything else       an external fooStream_t, the id being its address
#pragma once

#include <ostream>
#include <tuple>

#include <c10/core/Stream.h>
#include <foo_sim/foo_runtime.h>

namespace foo {

constexpr int kStreamsPerPool = 32;

class FooStream {
 public:
  // Checks that `stream` is a foo stream.
  explicit FooStream(c10::Stream stream);

  fooStream_t stream() const;
  operator c10::Stream() const { return stream_; }
  c10::Stream unwrap() const { return stream_; }
  c10::Device device() const { return stream_.device(); }
  c10::DeviceIndex device_index() const { return stream_.device_index(); }
  c10::StreamId id() const { return stream_.id(); }
  int priority() const;

  // True when all queued work is done; throws on a failed kernel.
  bool query() const;
  void synchronize() const;

  bool operator==(const FooStream& other) const { return stream_ == other.stream_; }
  bool operator!=(const FooStream& other) const { return !(*this == other); }

  // {least, greatest}: lower numbers are higher priorities, as in CUDA.
  static std::tuple<int, int> priority_range();

 private:
  c10::Stream stream_;
};

// A pooled stream with `priority` clamped to the device's range.
FooStream getStreamFromPool(int priority = 0, c10::DeviceIndex device = -1);
FooStream getStreamFromPool(bool isHighPriority, c10::DeviceIndex device = -1);
// Wraps a stream created directly with foo_sim on `device`.
FooStream getStreamFromExternal(fooStream_t stream, c10::DeviceIndex device);
FooStream getDefaultFooStream(c10::DeviceIndex device = -1);
FooStream getCurrentFooStream(c10::DeviceIndex device = -1);
// Makes `stream` current on its device for this thread (device unchanged).
void setCurrentFooStream(FooStream stream);
// Whether the calling thread's current stream is the default one on every
// device (a waiting host that runs queued work tests it each time).
bool currentFooStreamsAreDefault();

std::ostream& operator<<(std::ostream& out, const FooStream& stream);

}  // namespace foo

template <>
struct std::hash<foo::FooStream> {
  size_t operator()(const foo::FooStream& s) const noexcept { return std::hash<c10::Stream>{}(s.unwrap()); }
};
