// torch.ops._foo_C: devices, streams, events and graph capture.
#include <limits>
#include <string>
#include <tuple>

#include <torch/library.h>

#include "aten/Sleep.h"
#include "limited/Ops.h"
#include "runtime/FooCachingAllocator.h"
#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooGraphsUtils.h"
#include "runtime/FooInit.h"
#include "runtime/FooStream.h"

namespace foo::limited {

c10::DeviceIndex device_index(int64_t d) {
  constexpr int64_t lowest = std::numeric_limits<c10::DeviceIndex>::min();
  constexpr int64_t highest = std::numeric_limits<c10::DeviceIndex>::max();
  if (d < lowest || d > highest) {
    int count = device_count();
    TORCH_CHECK(false, "Invalid foo device index ", d, ": valid indices are 0 to ", count - 1, " (", count,
                " foo devices)");
  }
  return static_cast<c10::DeviceIndex>(d);
}

namespace {

std::tuple<std::string, int64_t, int64_t, int64_t, int64_t> device_properties(int64_t d) {
  fooDeviceProp p = get_device_properties(device_index(d));
  return {std::string(p.name), static_cast<int64_t>(p.totalGlobalMem), p.major, p.minor, p.executorCount};
}

std::tuple<int64_t, int64_t> priority_range() {
  auto [least, greatest] = FooStream::priority_range();
  return {least, greatest};
}

// torch.Event.elapsed_time's checks, in its order, on native events:
// torch.Event.event_id is the guard's fooEvent_t, or 0 before the first
// record. Whether an event times is foo_sim's to say.
double event_elapsed_time(int64_t start, int64_t end) {
  TORCH_CHECK_VALUE(start != 0 && end != 0, "Both events must be recorded before calculating elapsed time.");
  auto* a = reinterpret_cast<fooEvent_t>(start);
  auto* b = reinterpret_cast<fooEvent_t>(end);
  float ms = 0;
  fooError_t e = fooEventElapsedTime(&ms, a, b);
  // foo_sim names the flag in the detail of this error; its other causes
  // (events of two devices) keep foo_sim's message.
  if (e == fooErrorInvalidResourceHandle && std::string(fooGetErrorDetail()).find("DisableTiming") != std::string::npos) {
    (void)fooGetLastError();
    TORCH_CHECK_VALUE(false, "Both events must be created with argument 'enable_timing=True'.");
  }
  if (e == fooErrorNotReady) {
    (void)fooGetLastError();
    TORCH_CHECK(false, "Both events must be completed before calculating elapsed time.");
  }
  FOO_CHECK(e);
  return static_cast<double>(ms);
}

int64_t raw_stream_create(int64_t d, int64_t priority) {
  c10::DeviceIndex index = device_index(d);
  check_device_index(index);
  lazy_init();
  fooStream_t s = nullptr;
  FOO_CHECK(on_device(index, [&] { return fooStreamCreateWithPriority(&s, fooStreamDefault, static_cast<int>(priority)); }));
  return reinterpret_cast<int64_t>(s);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(_foo_C, m) {
  m.def("device_count() -> int", [] { return static_cast<int64_t>(device_count()); });
  m.def("no_device_reason() -> str", &no_device_reason);
  m.def("get_device() -> int", [] { return static_cast<int64_t>(current_device()); });
  m.def("set_device(int d) -> ()", [](int64_t d) { set_device(device_index(d)); });
  m.def("exchange_device(int d) -> int", [](int64_t d) { return static_cast<int64_t>(exchange_device(device_index(d))); });
  m.def("synchronize(int d) -> ()", [](int64_t d) { device_synchronize(device_index(d)); });
  m.def("device_properties(int d) -> (str, int, int, int, int)", &device_properties);
  m.def("init() -> ()", &lazy_init);
  m.def("is_initialized() -> bool", &is_initialized);
  m.def("is_in_bad_fork() -> bool", &in_bad_fork);
  m.def("stream_priority_range() -> (int, int)", &priority_range);

  m.def("current_stream(int d) -> Stream", [](int64_t d) { return getCurrentFooStream(device_index(d)).unwrap(); });
  m.def("default_stream(int d) -> Stream", [](int64_t d) { return getDefaultFooStream(device_index(d)).unwrap(); });
  m.def("set_stream(Stream s) -> ()", [](c10::Stream s) { setCurrentFooStream(FooStream(s)); });
  m.def("stream_from_external(int ptr, int d) -> Stream", [](int64_t ptr, int64_t d) {
    return getStreamFromExternal(reinterpret_cast<fooStream_t>(ptr), device_index(d)).unwrap();
  });
  m.def("stream_native_handle(Stream s) -> int",
        [](c10::Stream s) { return reinterpret_cast<int64_t>(FooStream(s).stream()); });
  m.def("stream_priority(Stream s) -> int", [](c10::Stream s) { return static_cast<int64_t>(FooStream(s).priority()); });
  m.def("sleep(float ms) -> ()", &aten::sleep);
  m.def("event_elapsed_time(int start, int end) -> float", &event_elapsed_time);
  m.def("raw_stream_create(int d, int priority) -> int", &raw_stream_create);
  m.def("raw_stream_destroy(int ptr) -> ()",
        [](int64_t ptr) { FOO_CHECK(fooStreamDestroy(reinterpret_cast<fooStream_t>(ptr))); });

  m.def("graph_pool_handle() -> (int, int)", [] {
    c10::MempoolId_t id = graph_pool_handle();
    return std::tuple<int64_t, int64_t>(static_cast<int64_t>(id.first), static_cast<int64_t>(id.second));
  });
  m.def("is_current_stream_capturing() -> bool", [] { return is_capturing(getCurrentFooStream()); });
  m.def("graph_pool_use_count(int d, int id0, int id1) -> int", [](int64_t d, int64_t id0, int64_t id1) {
    return static_cast<int64_t>(
        pool_use_count(device_index(d), {static_cast<uint64_t>(id0), static_cast<uint64_t>(id1)}));
  });
}

}  // namespace foo::limited
