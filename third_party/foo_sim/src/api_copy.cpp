// C API: copies between host and device memory and between devices.
#include <cstring>

#include "copy_bytes.h"
#include "error.h"
#include "profiler.h"
#include "race_detector.h"
#include "runtime.h"

using foo_sim::Allocation;
using foo_sim::fail;
using foo_sim::format;
using foo_sim::Runtime;

namespace {

// What one side of a copy points at, after checking that the whole range
// lies inside one registered allocation when it points into one.
struct Side {
  fooMemoryType type = fooMemoryTypeUnregistered;
  int device = -1;
};

fooError_t classify(Runtime* rt, const void* ptr, size_t count, const char* role, const char* what, Side* out) {
  if (ptr == nullptr) return fail(fooErrorInvalidValue, format("%s: %s is NULL", what, role));
  Allocation a;
  if (!rt->memory().find(ptr, &a)) return fooSuccess;  // pageable host memory
  if (count > a.size - (reinterpret_cast<uintptr_t>(ptr) - reinterpret_cast<uintptr_t>(a.base))) {
    return fail(fooErrorInvalidValue, format("%s: %s range of %zu bytes at %p runs past the end of its %zu-byte "
                                             "allocation",
                                             what, role, count, ptr, a.size));
  }
  out->type = a.type;
  out->device = a.device;
  return fooSuccess;
}

bool is_device(const Side& s) { return s.type == fooMemoryTypeDevice; }

// Checks `kind` against what the pointers are.
fooError_t check_kind(fooMemcpyKind kind, const Side& dst, const Side& src, const char* what) {
  if (kind == fooMemcpyDefault) return fooSuccess;
  bool want_src_device = kind == fooMemcpyDeviceToHost || kind == fooMemcpyDeviceToDevice;
  bool want_dst_device = kind == fooMemcpyHostToDevice || kind == fooMemcpyDeviceToDevice;
  if (want_src_device != is_device(src) || want_dst_device != is_device(dst)) {
    return fail(fooErrorInvalidMemcpyDirection,
                format("%s: copy kind %d does not match the pointers (source is %s memory, destination is %s memory)",
                       what, static_cast<int>(kind), is_device(src) ? "device" : "host",
                       is_device(dst) ? "device" : "host"));
  }
  return fooSuccess;
}

struct Plan {
  Side dst, src;
};

fooError_t plan_copy(Runtime* rt, void* dst, const void* src, size_t count, fooMemcpyKind kind, const char* what,
                     Plan* plan) {
  if (kind < fooMemcpyHostToHost || kind > fooMemcpyDefault) {
    return fail(fooErrorInvalidMemcpyDirection, format("%s: unknown copy kind %d", what, static_cast<int>(kind)));
  }
  if (fooError_t e = classify(rt, dst, count, "destination", what, &plan->dst)) return e;
  if (fooError_t e = classify(rt, src, count, "source", what, &plan->src)) return e;
  return check_kind(kind, plan->dst, plan->src, what);
}

// The profiler's name for a copy, by what its two sides are.
const char* copy_name(const Plan& p) {
  if (is_device(p.src) && is_device(p.dst)) return p.src.device == p.dst.device ? "Memcpy DtoD" : "Memcpy PtoP";
  if (is_device(p.dst)) return "Memcpy HtoD";
  if (is_device(p.src)) return "Memcpy DtoH";
  return "Memcpy HtoH";
}

fooMemcpyKind actual_kind(const Plan& p) {
  if (is_device(p.src) && is_device(p.dst)) return fooMemcpyDeviceToDevice;
  if (is_device(p.dst)) return fooMemcpyHostToDevice;
  if (is_device(p.src)) return fooMemcpyDeviceToHost;
  return fooMemcpyHostToHost;
}

// The device whose default stream orders a synchronous copy.
int ordering_device(const Plan& p, int current) {
  if (is_device(p.dst)) return p.dst.device;
  if (is_device(p.src)) return p.src.device;
  return current;
}

fooError_t check_peer(Runtime* rt, const void* ptr, int device, size_t count, const char* role, const char* what) {
  if (fooError_t e = rt->check_device(device, what)) return e;
  if (ptr == nullptr || !rt->memory().covers(ptr, count, fooMemoryTypeDevice, device)) {
    return fail(fooErrorInvalidValue,
                format("%s: %s %p is not %zu bytes of memory of foo device %d", what, role, ptr, count, device));
  }
  return fooSuccess;
}

// A copy's own accesses for the race detector: device and pinned memory
// (pageable memory is only touched by copies that block the host).
void declare_copy(const Plan& p, void* dst, const void* src, size_t count) {
  if (!foo_sim::race::on()) return;
  const char* name = copy_name(p);
  if (p.src.type != fooMemoryTypeUnregistered) foo_sim::race::declare_own(src, count, false, name);
  if (p.dst.type != fooMemoryTypeUnregistered) foo_sim::race::declare_own(dst, count, true, name);
}

// The work a copy queues: the bytes moved in up to FOO_SIM_COPY_THREADS
// pieces at once (fewer if the issuing thread's runner width says so).
auto move_work(Runtime* rt, void* dst, const void* src, size_t count) {
  return [dst, src, count, pieces = foo_sim::copy_pieces(rt->config().copy_threads, count)] {
    foo_sim::copy_bytes(dst, src, count, pieces);
  };
}

// Whether a copy of `count` bytes is moved by one thread (copy_pieces): work
// a host limited to serial work may run (fooHostWorkAsk).
bool serial_copy(size_t count) { return count < 2 * foo_sim::kMinBytesPerPiece; }

}  // namespace

extern "C" {

fooError_t fooSetCopyRunner(fooCopyRunner runner, fooCopyWidthFn width, void* userData) {
  foo_sim::set_copy_runner(runner, width, userData);
  return fooSuccess;
}

fooError_t fooMemcpy(void* dst, const void* src, size_t count, fooMemcpyKind kind) {
  if (count == 0) return fooSuccess;
  if (fooError_t e = Runtime::check_may_block("fooMemcpy")) return e;
  Runtime* rt;
  if (fooError_t e = Runtime::get(&rt)) return e;
  Plan plan;
  if (fooError_t e = plan_copy(rt, dst, src, count, kind, "fooMemcpy", &plan)) return e;
  if (!is_device(plan.dst) && !is_device(plan.src)) {
    std::memmove(dst, src, count);
    return fooSuccess;
  }
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  if (fooError_t e = rt->scheduler().check_unsafe_call("fooMemcpy")) return e;
  auto* stream = rt->scheduler().default_stream(ordering_device(plan, rt->current_device()));
  foo_sim::profiler::ScopedLabel label(fooActivityKindMemcpy, copy_name(plan), count, actual_kind(plan));
  declare_copy(plan, dst, src, count);
  return rt->scheduler().launch_and_wait(stream, move_work(rt, dst, src, count), serial_copy(count));
}

fooError_t fooMemcpyAsync(void* dst, const void* src, size_t count, fooMemcpyKind kind, fooStream_t stream) {
  if (count == 0) return fooSuccess;
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  Plan plan;
  if (fooError_t e = plan_copy(rt, dst, src, count, kind, "fooMemcpyAsync", &plan)) return e;
  auto* s = rt->resolve(stream);
  // Pageable host memory may be reused by the caller as soon as the call
  // returns, so such a copy completes before returning, as in CUDA.
  bool pageable = plan.dst.type == fooMemoryTypeUnregistered || plan.src.type == fooMemoryTypeUnregistered;
  foo_sim::profiler::ScopedLabel label(fooActivityKindMemcpy, copy_name(plan), count, actual_kind(plan));
  declare_copy(plan, dst, src, count);
  if (pageable) {
    if (fooError_t e = Runtime::check_may_block("fooMemcpyAsync with pageable host memory")) return e;
    // It blocks the host like fooMemcpy, so a capture may forbid it (foo_graph.h).
    if (fooError_t e = rt->scheduler().check_unsafe_call("fooMemcpyAsync with pageable host memory")) return e;
    return rt->scheduler().launch_and_wait(s, move_work(rt, dst, src, count), serial_copy(count));
  }
  return rt->scheduler().launch(s, move_work(rt, dst, src, count), serial_copy(count));
}

fooError_t fooMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count) {
  if (count == 0) return fooSuccess;
  if (fooError_t e = Runtime::check_may_block("fooMemcpyPeer")) return e;
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  if (fooError_t e = check_peer(rt, dst, dstDevice, count, "destination", "fooMemcpyPeer")) return e;
  if (fooError_t e = check_peer(rt, src, srcDevice, count, "source", "fooMemcpyPeer")) return e;
  if (fooError_t e = rt->scheduler().check_unsafe_call("fooMemcpyPeer")) return e;
  foo_sim::profiler::ScopedLabel label(fooActivityKindMemcpy, "Memcpy PtoP", count, fooMemcpyDeviceToDevice);
  if (foo_sim::race::on()) {
    foo_sim::race::declare_own(src, count, false, "Memcpy PtoP");
    foo_sim::race::declare_own(dst, count, true, "Memcpy PtoP");
  }
  return rt->scheduler().launch_and_wait(rt->scheduler().default_stream(srcDevice),
                                         move_work(rt, dst, src, count));
}

fooError_t fooMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice, size_t count,
                              fooStream_t stream) {
  if (count == 0) return fooSuccess;
  Runtime* rt;
  if (fooError_t e = Runtime::get_started(&rt)) return e;
  if (fooError_t e = check_peer(rt, dst, dstDevice, count, "destination", "fooMemcpyPeerAsync")) return e;
  if (fooError_t e = check_peer(rt, src, srcDevice, count, "source", "fooMemcpyPeerAsync")) return e;
  foo_sim::profiler::ScopedLabel label(fooActivityKindMemcpy, "Memcpy PtoP", count, fooMemcpyDeviceToDevice);
  if (foo_sim::race::on()) {
    foo_sim::race::declare_own(src, count, false, "Memcpy PtoP");
    foo_sim::race::declare_own(dst, count, true, "Memcpy PtoP");
  }
  return rt->scheduler().launch(rt->resolve(stream), move_work(rt, dst, src, count));
}

}  // extern "C"
