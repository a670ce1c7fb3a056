// Many host threads launching on many streams of both devices at once,
// with cross-stream event waits and streams created and destroyed meanwhile.
#include <atomic>
#include <memory>
#include <vector>

#include "harness.h"

namespace {

constexpr int kThreads = 16;
constexpr int kLaunches = 5000;

struct StreamCounter {
  fooStream_t stream = nullptr;
  // Kernels of one stream never overlap, so FIFO means each kernel sees
  // exactly the count its position implies.
  std::atomic<long> next{0};
  std::atomic<long> out_of_order{0};
};

}  // namespace

TEST(many_threads_many_streams) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  std::atomic<long> total{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      if (fooSetDevice(t % 2) != fooSuccess) return void(++failures);
      auto mine = std::make_unique<StreamCounter>();
      fooStream_t other;
      fooEvent_t event;
      int priority = -(t % 4);
      if (fooStreamCreateWithPriority(&mine->stream, fooStreamDefault, priority) != fooSuccess ||
          fooStreamCreate(&other) != fooSuccess || fooEventCreateWithFlags(&event, fooEventDisableTiming) != fooSuccess)
        return void(++failures);
      StreamCounter* c = mine.get();
      for (long i = 0; i < kLaunches; ++i) {
        if (harness::launch(c->stream, [c, i, &total] {
              if (c->next.load() != i) ++c->out_of_order;
              c->next.store(i + 1);
              ++total;
            }) != fooSuccess)
          return void(++failures);
        if (i % 100 == 0) {
          // other waits for mine's progress, then checks it from its side.
          if (fooEventRecord(event, c->stream) != fooSuccess ||
              fooStreamWaitEvent(other, event, 0) != fooSuccess ||
              harness::launch(other, [c, i] {
                if (c->next < i + 1) ++c->out_of_order;
              }) != fooSuccess)
            return void(++failures);
        }
        if (i % 500 == 0) {
          fooStream_t temp;
          if (fooStreamCreate(&temp) != fooSuccess || harness::launch(temp, [] {}) != fooSuccess ||
              fooStreamDestroy(temp) != fooSuccess)
            return void(++failures);
        }
      }
      if (fooStreamSynchronize(c->stream) != fooSuccess || fooStreamSynchronize(other) != fooSuccess)
        return void(++failures);
      if (c->next != kLaunches || c->out_of_order != 0) ++failures;
      fooEventDestroy(event);
      fooStreamDestroy(other);
      fooStreamDestroy(c->stream);
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  CHECK(total == long{kThreads} * kLaunches);
}
