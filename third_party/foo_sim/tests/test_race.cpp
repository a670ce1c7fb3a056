// The stream race detector (foo_sim/foo_race.h): what it must find, what it
// must not flag, and its reports.
#include <atomic>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "foo_sim/foo_race.h"
#include "harness.h"

namespace {

std::vector<fooRaceReport> g_copied;
std::vector<std::string> g_messages;

std::vector<std::string> messages() {
  g_messages.clear();
  fooRaceGetReports([](const fooRaceReport* r, void*) { g_messages.push_back(r->message); }, nullptr);
  return g_messages;
}

struct ReportSummary {
  fooRaceKind kind;
  std::string first_op, second_op, first_site, second_site, first_what;
  int first_write, second_write, first_stream, second_stream, first_device, second_device;
  unsigned long long count;
};

std::vector<ReportSummary> reports() {
  std::vector<ReportSummary> out;
  fooRaceGetReports(
      [](const fooRaceReport* r, void* p) {
        static_cast<std::vector<ReportSummary>*>(p)->push_back(
            {r->kind, r->first.op, r->second.op, r->first.site, r->second.site, r->first.what, r->first.write,
             r->second.write, r->first.stream, r->second.stream, r->first.device, r->second.device, r->count});
      },
      &out);
  return out;
}

// A fresh detector in `mode` (turning it off and on again forgets all).
void restart(fooRaceMode mode) {
  CHECK_OK(fooRaceSetMode(fooRaceModeOff));
  CHECK_OK(fooRaceSetMode(mode));
}

// Declares one access and launches a kernel on `s` that sets `*ran`.
fooError_t access(fooStream_t s, void* p, size_t bytes, bool write, const char* op, const char* site,
                  std::atomic<int>* ran = nullptr) {
  fooRaceAccess a{p, bytes, write ? 1 : 0, "float32[16]"};
  CHECK_OK(fooRaceDeclare(&a, 1, op, site));
  return harness::launch(s, [ran] {
    if (ran) ran->fetch_add(1);
  });
}

struct Fixture {
  fooStream_t side = nullptr;
  void* buf = nullptr;
  Fixture() {
    CHECK_OK(fooStreamCreate(&side));
    CHECK_OK(fooMalloc(&buf, 256));
  }
  ~Fixture() {
    fooDeviceSynchronize();
    fooFree(buf);
    fooStreamDestroy(side);
  }
};

}  // namespace

TEST(side_stream_reads_default_output_without_wait) {
  restart(fooRaceModeWarn);
  Fixture f;
  CHECK_OK(access(nullptr, f.buf, 64, true, "producer", "a.py:1"));
  CHECK_OK(access(f.side, f.buf, 64, false, "consumer", "a.py:2"));
  auto r = reports();
  CHECK(r.size() == 1);
  CHECK(r[0].kind == fooRaceKindUnordered);
  CHECK(r[0].first_op == "producer" && r[0].second_op == "consumer");
  CHECK(r[0].first_site == "a.py:1" && r[0].second_site == "a.py:2");
  CHECK(r[0].first_write == 1 && r[0].second_write == 0);
  CHECK(r[0].first_what == "float32[16]");
  CHECK(r[0].first_stream != r[0].second_stream);
  CHECK(messages()[0].find("a.py:2") != std::string::npos);
}

TEST(default_reads_side_output_without_wait) {
  restart(fooRaceModeWarn);
  Fixture f;
  CHECK_OK(access(f.side, f.buf, 64, true, "producer", "b.py:1"));
  CHECK_OK(access(nullptr, f.buf, 64, false, "consumer", "b.py:2"));
  CHECK(reports().size() == 1);
}

TEST(two_streams_write_one_buffer) {
  restart(fooRaceModeWarn);
  Fixture f;
  CHECK_OK(access(f.side, static_cast<char*>(f.buf) + 32, 64, true, "w1", "c.py:1"));
  CHECK_OK(access(nullptr, f.buf, 64, true, "w2", "c.py:2"));
  auto r = reports();
  CHECK(r.size() == 1);
  CHECK(r[0].first_write == 1 && r[0].second_write == 1);
}

TEST(write_after_read_on_another_stream) {
  restart(fooRaceModeWarn);
  Fixture f;
  CHECK_OK(access(f.side, f.buf, 64, false, "reader", "d.py:1"));
  CHECK_OK(access(nullptr, f.buf, 64, true, "writer", "d.py:2"));
  CHECK(reports().size() == 1);
}

TEST(reads_never_race_with_reads) {
  restart(fooRaceModeWarn);
  Fixture f;
  CHECK_OK(access(f.side, f.buf, 64, false, "r1", "e.py:1"));
  CHECK_OK(access(nullptr, f.buf, 64, false, "r2", "e.py:2"));
  CHECK(reports().empty());
}

TEST(disjoint_ranges_do_not_race) {
  restart(fooRaceModeWarn);
  Fixture f;
  CHECK_OK(access(f.side, f.buf, 64, true, "w1", "f.py:1"));
  CHECK_OK(access(nullptr, static_cast<char*>(f.buf) + 64, 64, true, "w2", "f.py:2"));
  CHECK(reports().empty());
}

TEST(event_wait_orders) {
  restart(fooRaceModeWarn);
  Fixture f;
  fooEvent_t ev;
  CHECK_OK(fooEventCreate(&ev));
  CHECK_OK(access(f.side, f.buf, 64, true, "producer", "g.py:1"));
  CHECK_OK(fooEventRecord(ev, f.side));
  CHECK_OK(fooStreamWaitEvent(nullptr, ev, 0));
  CHECK_OK(access(nullptr, f.buf, 64, false, "consumer", "g.py:2"));
  // A record made before the access does not order it.
  CHECK_OK(fooEventRecord(ev, nullptr));
  CHECK_OK(access(nullptr, f.buf, 64, true, "late writer", "g.py:3"));
  CHECK_OK(fooStreamWaitEvent(f.side, ev, 0));
  CHECK_OK(access(f.side, f.buf, 64, false, "reader", "g.py:4"));
  auto r = reports();
  CHECK(r.size() == 1);
  CHECK(r[0].first_op == "late writer" && r[0].second_op == "reader");
  CHECK_OK(fooEventDestroy(ev));
}

TEST(ordering_is_transitive) {
  restart(fooRaceModeWarn);
  Fixture f;
  fooStream_t third;
  CHECK_OK(fooStreamCreate(&third));
  fooEvent_t a, b;
  CHECK_OK(fooEventCreate(&a));
  CHECK_OK(fooEventCreate(&b));
  CHECK_OK(access(f.side, f.buf, 64, true, "producer", "h.py:1"));
  CHECK_OK(fooEventRecord(a, f.side));
  CHECK_OK(fooStreamWaitEvent(third, a, 0));
  CHECK_OK(fooEventRecord(b, third));
  CHECK_OK(fooStreamWaitEvent(nullptr, b, 0));
  CHECK_OK(access(nullptr, f.buf, 64, true, "consumer", "h.py:2"));
  CHECK(reports().empty());
  fooEventDestroy(a);
  fooEventDestroy(b);
  fooStreamDestroy(third);
}

TEST(events_across_devices_order) {
  restart(fooRaceModeWarn);
  void* buf;
  CHECK_OK(fooMalloc(&buf, 64));
  fooStream_t other;
  CHECK_OK(fooSetDevice(1));
  CHECK_OK(fooStreamCreate(&other));
  fooEvent_t ev;
  CHECK_OK(fooEventCreate(&ev));  // on device 1
  CHECK_OK(access(other, buf, 64, true, "peer writer", "i.py:1"));
  CHECK_OK(fooEventRecord(ev, other));
  CHECK_OK(fooSetDevice(0));
  CHECK_OK(fooStreamWaitEvent(nullptr, ev, 0));
  CHECK_OK(access(nullptr, buf, 64, false, "reader", "i.py:2"));
  CHECK(reports().empty());
  CHECK_OK(fooDeviceSynchronize());
  fooEventDestroy(ev);
  fooStreamDestroy(other);
  fooFree(buf);
}

TEST(host_synchronizations_order) {
  restart(fooRaceModeWarn);
  Fixture f;
  fooEvent_t ev;
  CHECK_OK(fooEventCreate(&ev));
  CHECK_OK(access(f.side, f.buf, 64, true, "w", "j.py:1"));
  CHECK_OK(fooStreamSynchronize(f.side));
  CHECK_OK(access(nullptr, f.buf, 64, true, "after stream sync", "j.py:2"));
  CHECK_OK(fooEventRecord(ev, nullptr));
  CHECK_OK(fooEventSynchronize(ev));
  CHECK_OK(access(f.side, f.buf, 64, true, "after event sync", "j.py:3"));
  CHECK_OK(fooDeviceSynchronize());
  CHECK_OK(access(nullptr, f.buf, 64, true, "after device sync", "j.py:4"));
  // A query that finds the stream done is a synchronization too.
  while (fooStreamQuery(nullptr) == fooErrorNotReady) {
  }
  CHECK_OK(access(f.side, f.buf, 64, true, "after query", "j.py:5"));
  // A blocking copy waits for the default stream's work.
  char host[64];
  CHECK_OK(fooStreamSynchronize(f.side));
  CHECK_OK(access(nullptr, f.buf, 64, true, "before copy", "j.py:6"));
  CHECK_OK(fooMemcpy(host, f.buf, 64, fooMemcpyDeviceToHost));
  CHECK_OK(access(f.side, f.buf, 64, true, "after blocking copy", "j.py:7"));
  CHECK(reports().empty());
  fooEventDestroy(ev);
}

TEST(synchronizing_another_stream_does_not_order) {
  restart(fooRaceModeWarn);
  Fixture f;
  CHECK_OK(access(f.side, f.buf, 64, true, "w", "k.py:1"));
  CHECK_OK(fooStreamSynchronize(nullptr));
  CHECK_OK(access(nullptr, f.buf, 64, false, "r", "k.py:2"));
  CHECK(reports().size() == 1);
}

TEST(copies_and_memsets_declare_their_ranges) {
  restart(fooRaceModeWarn);
  Fixture f;
  void* other;
  CHECK_OK(fooMalloc(&other, 256));
  CHECK_OK(fooMemsetAsync(f.buf, 0, 64, f.side));
  // The race is declared on purpose; the two must still not run at once,
  // or ThreadSanitizer sees it too. The default stream waits for the side
  // stream through a flag, which the detector does not take as ordering.
  std::atomic<bool> memset_done{false};
  CHECK_OK(harness::launch(f.side, [&memset_done] { memset_done.store(true, std::memory_order_release); }));
  CHECK_OK(harness::launch(nullptr, [&memset_done] {
    while (!memset_done.load(std::memory_order_acquire)) std::this_thread::yield();
  }));
  CHECK_OK(fooMemcpyAsync(other, f.buf, 64, fooMemcpyDeviceToDevice, nullptr));
  auto r = reports();
  CHECK(r.size() == 1);
  CHECK(r[0].first_op == "Memset" && r[0].second_op == "Memcpy DtoD");
  CHECK_OK(fooDeviceSynchronize());
  fooFree(other);
}

TEST(use_after_free_across_streams) {
  restart(fooRaceModeWarn);
  Fixture f;
  // The block is used on the side stream, then an allocator takes it back
  // and hands it to the default stream without waiting for that use.
  CHECK_OK(access(f.side, f.buf, 64, false, "side use", "l.py:1"));
  CHECK_OK(fooRaceNoteFree(f.buf, 64));
  CHECK_OK(fooRaceDeclareAllocation(f.buf, 64, nullptr));
  CHECK_OK(access(nullptr, static_cast<char*>(f.buf) + 128, 16, true, "new owner", "l.py:2"));
  auto r = reports();
  CHECK(r.size() == 1);
  CHECK(r[0].kind == fooRaceKindUseAfterFree);
  CHECK(r[0].first_op == "side use" && r[0].second_op == "new owner");
}

TEST(free_after_recorded_use_does_not_race) {
  restart(fooRaceModeWarn);
  Fixture f;
  fooEvent_t ev;
  CHECK_OK(fooEventCreateWithFlags(&ev, fooEventDisableTiming | fooEventIgnoreFailures));
  CHECK_OK(access(f.side, f.buf, 64, false, "side use", "m.py:1"));
  // As an allocator does for record_stream: an event on the user's stream,
  // polled until done before the block is reused.
  CHECK_OK(fooEventRecord(ev, f.side));
  CHECK_OK(fooRaceNoteFree(f.buf, 64));
  while (fooEventQuery(ev) == fooErrorNotReady) {
  }
  CHECK_OK(fooRaceDeclareAllocation(f.buf, 64, nullptr));
  CHECK_OK(access(nullptr, f.buf, 64, true, "new owner", "m.py:2"));
  // An allocation declared for another stream does not attach to this launch.
  CHECK_OK(fooRaceDeclareAllocation(f.buf, 64, f.side));
  CHECK_OK(access(nullptr, f.buf, 64, false, "reader", "m.py:3"));
  CHECK(reports().empty());
  fooEventDestroy(ev);
}

TEST(host_overwrites_pinned_memory_before_the_copy) {
  restart(fooRaceModeWarn);
  Fixture f;
  void* pinned;
  CHECK_OK(fooMallocHost(&pinned, 64));
  CHECK_OK(fooMemcpyAsync(f.buf, pinned, 64, fooMemcpyHostToDevice, f.side));
  CHECK_OK(fooRaceHostAccess(pinned, 64, 1, "uint8[64]", "fill_", "n.py:3"));
  auto r = reports();
  CHECK(r.size() == 1);
  CHECK(r[0].kind == fooRaceKindHost);
  CHECK(r[0].first_op == "Memcpy HtoD" && r[0].second_op == "fill_");
  CHECK(r[0].second_device == -1 && r[0].second_stream == -1);
  // Reading it is fine; writing after synchronizing is fine.
  CHECK_OK(fooRaceHostAccess(pinned, 64, 0, nullptr, "read", "n.py:4"));
  CHECK_OK(fooStreamSynchronize(f.side));
  CHECK_OK(fooRaceHostAccess(pinned, 64, 1, nullptr, "fill_", "n.py:5"));
  // The host reading what a copy writes before it is done races too.
  CHECK_OK(fooMemcpyAsync(pinned, f.buf, 64, fooMemcpyDeviceToHost, f.side));
  CHECK_OK(fooRaceHostAccess(pinned, 64, 0, nullptr, "read", "n.py:6"));
  CHECK(reports().size() == 2);
  CHECK_OK(fooStreamSynchronize(f.side));
  CHECK_OK(fooFreeHost(pinned));
}

TEST(raise_mode_fails_the_launch_and_does_not_queue_it) {
  restart(fooRaceModeRaise);
  Fixture f;
  std::atomic<int> ran{0};
  CHECK_OK(access(nullptr, f.buf, 64, true, "producer", "o.py:1", &ran));
  CHECK_ERR(access(f.side, f.buf, 64, false, "consumer", "o.py:2", &ran), fooErrorRaceDetected);
  CHECK_DETAIL_HAS("o.py:2");
  std::string raised;
  fooRaceGetRaisedReport([](const fooRaceReport* r, void* p) { *static_cast<std::string*>(p) = r->second.op; },
                         &raised);
  CHECK(raised == "consumer");
  CHECK_OK(fooDeviceSynchronize());
  CHECK(ran.load() == 1);
  // The failed launch recorded nothing: after a wait the same read is fine.
  fooEvent_t ev;
  CHECK_OK(fooEventCreate(&ev));
  CHECK_OK(fooEventRecord(ev, nullptr));
  CHECK_OK(fooStreamWaitEvent(f.side, ev, 0));
  CHECK_OK(access(f.side, f.buf, 64, false, "consumer", "o.py:2", &ran));
  fooEventDestroy(ev);
}

TEST(raise_mode_host_race_fails_the_next_synchronization) {
  restart(fooRaceModeRaise);
  Fixture f;
  void* pinned;
  CHECK_OK(fooMallocHost(&pinned, 64));
  CHECK_OK(fooMemcpyAsync(f.buf, pinned, 64, fooMemcpyHostToDevice, f.side));
  CHECK_ERR(fooRaceHostAccess(pinned, 64, 1, nullptr, "fill_", "p.py:1"), fooErrorRaceDetected);
  CHECK_ERR(fooStreamSynchronize(f.side), fooErrorRaceDetected);
  CHECK_OK(fooStreamSynchronize(f.side));  // once
  CHECK_OK(fooFreeHost(pinned));
}

TEST(a_race_in_a_loop_is_reported_once_with_a_count) {
  restart(fooRaceModeWarn);
  Fixture f;
  for (int i = 0; i < 5; ++i) {
    CHECK_OK(access(nullptr, f.buf, 64, true, "producer", "q.py:1"));
    CHECK_OK(access(f.side, f.buf, 64, false, "consumer", "q.py:2"));
  }
  auto r = reports();
  CHECK(r.size() == 2);  // producer->consumer, and consumer->producer (write after read)
  CHECK(r[0].count == 5);
  int taken = 0;
  CHECK_OK(fooRaceTakeNewReports([](const fooRaceReport*, void* p) { ++*static_cast<int*>(p); }, &taken));
  CHECK(taken == 2);
  taken = 0;
  CHECK_OK(fooRaceTakeNewReports([](const fooRaceReport*, void* p) { ++*static_cast<int*>(p); }, &taken));
  CHECK(taken == 0);
  fooRaceClearReports();
  CHECK(reports().empty());
}

TEST(off_records_nothing) {
  CHECK_OK(fooRaceSetMode(fooRaceModeOff));
  Fixture f;
  CHECK_OK(access(nullptr, f.buf, 64, true, "producer", "r.py:1"));
  CHECK_OK(access(f.side, f.buf, 64, false, "consumer", "r.py:2"));
  CHECK(fooRaceGetMode() == fooRaceModeOff);
  CHECK_OK(fooRaceSetMode(fooRaceModeWarn));
  CHECK(reports().empty());
  CHECK_ERR(fooRaceSetMode(static_cast<fooRaceMode>(7)), fooErrorInvalidValue);
}

TEST(freeing_forgets_the_memory) {
  restart(fooRaceModeWarn);
  fooStream_t side;
  CHECK_OK(fooStreamCreate(&side));
  void* a;
  CHECK_OK(fooMalloc(&a, 64));
  CHECK_OK(access(side, a, 64, true, "old", "s.py:1"));
  CHECK_OK(fooFree(a));  // waits for the device's work
  void* b;
  CHECK_OK(fooMalloc(&b, 64));
  CHECK_OK(access(nullptr, b, 64, true, "new", "s.py:2"));
  CHECK(reports().empty());
  CHECK_OK(fooDeviceSynchronize());
  fooFree(b);
  fooStreamDestroy(side);
}

TEST(environment_turns_it_on) {
  // Registered on its own with FOO_SIM_RACE_CHECK=raise; in the run of all
  // cases, earlier cases have set the mode.
  const char* env = std::getenv("FOO_SIM_RACE_CHECK");
  if (env == nullptr || std::strcmp(env, "raise") != 0) return;
  CHECK(fooRaceGetMode() == fooRaceModeRaise);
}

TEST(nested_declarers_keep_the_enclosing_accesses) {
  restart(fooRaceModeWarn);
  Fixture f;
  CHECK_OK(access(f.side, f.buf, 64, true, "side writer", "t.py:1"));
  // An operator declares its read, calls an operator that declares and does
  // not launch (a view), then launches: the read is still its launch's.
  fooRaceMark outer = fooRaceGetMark();
  fooRaceAccess read{f.buf, 64, 0, "float32[16]"};
  CHECK_OK(fooRaceDeclare(&read, 1, "outer", "t.py:2"));
  fooRaceMark inner = fooRaceGetMark();
  fooRaceAccess view{static_cast<char*>(f.buf) + 128, 64, 1, "float32[16]"};
  CHECK_OK(fooRaceDeclare(&view, 1, "view", "t.py:2"));
  fooRaceRestoreMark(inner);
  CHECK_OK(harness::launch(nullptr, [] {}));
  fooRaceRestoreMark(outer);
  auto r = reports();
  CHECK(r.size() == 1);
  CHECK(r[0].second_op == "outer");
  // Declarations no launch took are dropped by restoring.
  fooRaceMark mark = fooRaceGetMark();
  CHECK_OK(fooRaceDeclare(&read, 1, "view only", "t.py:3"));
  fooRaceRestoreMark(mark);
  CHECK_OK(harness::launch(nullptr, [] {}));
  CHECK(reports().size() == 1);
}
