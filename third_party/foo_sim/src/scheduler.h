// Streams, events and the executor threads that run queued work.
//
// One mutex guards all queues, so that an event recorded on one device and
// waited on by a stream of another device needs no lock ordering. Executors
// hold it only to pick work, never while a kernel runs.
//
// Every piece of work (kernel, event record, wait) enters a stream's queue
// through Scheduler::push as a self-contained Command value, so push() is
// the one place that stamps submission order.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "command_queue.h"
#include "config.h"
#include "foo_sim/foo_runtime.h"
#include "graph_capture.h"
#include "profiler.h"
#include "race_clock.h"

namespace foo_sim {

using Clock = std::chrono::steady_clock;
struct Device;

// The failure of one kernel. Every synchronization point that covers it
// shares this one record, so that whichever reports it first marks it and
// the others stay quiet: the user sees one error per failure.
struct KernelError {
  fooError_t code = fooErrorLaunchFailure;
  std::string detail;
  bool reported = false;
};
using KernelErrorPtr = std::shared_ptr<KernelError>;

// One record of an event. It completes when its stream reaches it; streams
// that wait on it are parked in `waiters` until then.
struct Marker {
  bool done = false;
  Clock::time_point time;
  std::vector<fooStream_st*> waiters;
  // The recording stream's pending failure when the record completed: the
  // record covers it, so synchronizing on the event may report it.
  KernelErrorPtr error;
  // The stream the record is queued on, set when it is queued; valid until
  // done (a stream with queued work is not freed). A waiting host follows
  // it to the work that stands before the record (host work).
  fooStream_st* stream = nullptr;
};
using MarkerPtr = std::shared_ptr<Marker>;

struct Command {
  enum class Kind { Kernel, Record, Wait };
  Kind kind = Kind::Kernel;
  fooHostFn_t fn = nullptr;  // Kernel
  void* data = nullptr;      // Kernel
  MarkerPtr marker;          // Record, Wait
  uint64_t seq = 0;          // submission order: FIFO among equal priorities
  ActivityStamp stamp;       // Kernel, while tracing (profiler.h)
  bool self_traced = false;  // records its own activities (a graph replay's batch): not stamped
  bool serial = false;       // Kernel: starts no thread team (fooKernelSerial, a one-piece copy)
  // Whatever `data` points into that must live until the command ran: a
  // graph replay's nodes, so that destroying the graph while the replay is
  // queued is safe.
  std::shared_ptr<const void> keep_alive;
};

}  // namespace foo_sim

struct fooStream_st {
  foo_sim::Device* device = nullptr;
  int priority = 0;
  bool is_default = false;
  foo_sim::RingQueue<foo_sim::Command> queue;
  bool running = false;   // an executor is running the kernel popped last
  bool listed = false;    // in device->runnable
  bool destroyed = false; // released by its owner; freed once idle
  int home = -1;          // the executor that ran its last kernel, woken first
  // The earliest failure that reached the stream, from its own kernels or a
  // passed wait, while it had no unreported one; a later failure does not
  // displace it until it is reported.
  foo_sim::KernelErrorPtr pending_error;
  // Stream capture (graph_capture.h): the capture the stream takes part in,
  // its lane in it, and the captured nodes its next work depends on.
  foo_sim::CapturePtr capture;
  int capture_lane = 0;
  std::vector<foo_sim::NodeId> frontier;
  // The race detector's number for the stream, valid in its generation
  // (race_detector.h).
  int race_index = -1;
  uint64_t race_generation = 0;
};

struct fooEvent_st {
  int device = 0;
  unsigned flags = 0;
  foo_sim::MarkerPtr latest;  // most recent record; null if never recorded
  // Set when the most recent record was made on a capturing stream: it then
  // stands for those captured nodes, not for `latest`.
  std::weak_ptr<foo_sim::Capture> captured_in;
  std::vector<foo_sim::NodeId> captured_frontier;
  // The recording stream's vector clock at the latest record, while the
  // race detector is on (race_detector.h).
  std::shared_ptr<const foo_sim::race::VectorClock> race_clock;
  uint64_t race_generation = 0;
};

namespace foo_sim {

using Stream = fooStream_st;
using Event = fooEvent_st;

struct Device {
  int index = 0;
  Stream* default_stream = nullptr;
  std::vector<Stream*> streams;   // live and draining streams
  std::vector<Stream*> runnable;  // head is a kernel and nobody runs it
  // Streams being run, by executors or by waiting hosts (host work): at
  // most the device's executor count, so that a host takes a stream only
  // in place of an idle executor.
  int busy = 0;
  int sleeping = 0;               // executors blocked on their executor_cv
  int returning = 0;              // executors that finished a kernel and will pick next
  // Executors woken but not back under the mutex yet: each will pick, so a
  // stream listed meanwhile needs no other sleeper. Waking a second one put
  // a stream's next kernels on another executor, whose OpenMP team then ran
  // beside the first one's (twice the threads for the cores: libgomp makes
  // every team sleep between parallel regions).
  int waking = 0;
  std::atomic<int> spinning{0};   // executors polling `doorbell`: at most one
  // Rung each time a stream is listed runnable; what a spinning executor
  // polls. A launch rings it after releasing the scheduler's mutex, so that
  // the executor it rouses does not collide with the launcher on the mutex.
  std::atomic<uint32_t> doorbell{0};
  // Bumped under the mutex each time a stream is listed runnable: what an
  // executor running a batch checks between kernels (the doorbell may be
  // rung a while after the listing).
  std::atomic<uint32_t> listings{0};
  std::vector<std::thread> executors;
  std::vector<bool> asleep;       // by executor id, set by wait_for_work
  // One per executor, so that the one a stream last ran on can be woken.
  std::vector<std::unique_ptr<std::condition_variable>> executor_cv;
};

class Scheduler {
 public:
  explicit Scheduler(const Config& config);
  // Creates the default streams and starts the executor threads.
  void start();

  Stream* default_stream(int device) const { return devices_[device]->default_stream; }

  fooError_t create_stream(int device, int priority, Stream** out);
  fooError_t destroy_stream(Stream* s);
  fooError_t stream_info(Stream* s, int* device, int* priority, unsigned* flags);
  fooError_t query_stream(Stream* s);
  fooError_t synchronize_stream(Stream* s);
  fooError_t synchronize_device(int device);
  // Waits for every stream of the device without consuming their errors.
  void wait_device_idle(int device);

  // `serial`: the work starts no thread team (fooKernelSerial).
  fooError_t launch(Stream* s, fooHostFn_t fn, void* data, bool serial = false);
  // Runs `work` on the stream; for runtime-internal work (copies, memset).
  fooError_t launch(Stream* s, std::function<void()> work, bool serial = false);
  // fooLaunchHostFuncOwnedWithPrefetch. A capture keeps fn, the data and
  // prefetch in the node itself, so that a replay reaches the data without
  // a closure between and can call prefetch ahead of it.
  fooError_t launch_owned(Stream* s, fooHostFn_t fn, std::shared_ptr<void> owned, fooHostFnPrefetch_t prefetch);
  // Like launch, then waits for the work (used where the host must not
  // return early: pageable copies, synchronous copies). `work` is made a
  // std::function (a heap block for a copy's captures) only if it is
  // queued, not when the waiting host runs it in place.
  template <class F>
  fooError_t launch_and_wait(Stream* s, F work, bool serial = false) {
    return launch_and_wait_erased(
        s, [](void* w) { (*static_cast<F*>(w))(); }, &work,
        [](void* w) { return std::function<void()>(std::move(*static_cast<F*>(w))); }, serial);
  }

  fooError_t create_event(int device, unsigned flags, Event** out);
  fooError_t destroy_event(Event* e);
  fooError_t event_device(Event* e, int* device);
  fooError_t record_event(Event* e, Stream* s);
  fooError_t wait_event(Stream* s, Event* e);
  fooError_t query_event(Event* e);
  fooError_t synchronize_event(Event* e);
  fooError_t elapsed_time(float* ms, Event* start, Event* end);

  // ---- stream capture and graph replay (graph_capture.cpp, graph_launch.cpp)
  fooError_t begin_capture(Stream* s, fooStreamCaptureMode mode);
  fooError_t end_capture(Stream* s, GraphDataPtr* graph);
  fooError_t capture_info(Stream* s, fooStreamCaptureStatus* status, unsigned long long* id);
  // Fails (and invalidates the captures that forbid it) if the calling
  // thread may not make a potentially unsafe call now; see foo_graph.h.
  fooError_t check_unsafe_call(const char* what);
  // Streams that run the non-origin lanes of an executable graph's replays:
  // internal, never handed to the user.
  std::vector<Stream*> create_lanes(int device, size_t count);
  // Lanes go once idle, so replays still queued on them run.
  void release_lanes(const std::vector<Stream*>& lanes);
  // Queues one replay of `plan` on `s`, `lanes` running the other lanes.
  // `previous` is the end of the executable graph's last replay, which this
  // one waits for; it is replaced by this replay's end (and race_previous,
  // the race detector's view of it, likewise).
  fooError_t launch_graph(Stream* s, const GraphDataPtr& graph, const std::shared_ptr<const ReplayPlan>& plan,
                          const std::vector<Stream*>& lanes, MarkerPtr* previous, race::ReplayClock* race_previous);

  // Called from inside a running kernel.
  static fooError_t report_kernel_error(const char* message);
  // True on executor threads, where blocking calls would deadlock, and on a
  // host thread while it runs work in their place (host_work.h).
  static bool on_executor_thread();
  // Makes the calling thread count as an executor or not; returns what it was.
  static bool exchange_executor_role(bool on);

 private:
  using Lock = std::unique_lock<std::mutex>;

  fooError_t check_stream(Stream* s, const char* what);
  fooError_t check_event(Event* e, const char* what) const;
  void push(Stream* s, Command c);
  // push(), then releases the mutex and rings the doorbell if the stream
  // was listed runnable: a launch's way of queueing.
  void push_then_ring(Lock& lock, Stream* s, Command c);
  void advance(Stream* s);
  void complete(const MarkerPtr& m, const Stream* recorder);
  void list_runnable(Stream* s);
  Stream* pick(Device* d);
  void executor_main(Device* d, int executor);
  // `serial_only`: none but fooKernelSerial ones (a host's, host_work.h).
  void take_kernels(Stream* s, std::vector<Command>& batch, bool serial_only = false);
  KernelErrorPtr run_kernels(std::vector<Command>& batch, Stream* s, uint32_t listed, size_t* ran);
  void wait_for_work(Device* d, int executor, Lock& lock);
  // Wakes `preferred` if it sleeps, else any sleeping executor.
  static void wake_executor(Device* d, int preferred);
  // Executors of `d` that will pick a runnable stream without being woken.
  static int awake(const Device* d);
  void run_kernel(const Command& c, Stream* s);
  // Whether `a` is picked before `b` (both runnable on one device).
  static bool picked_before(const Stream* a, const Stream* b);
  void on_idle(Stream* s);
  static bool idle(const Stream* s) { return !s->running && s->queue.empty(); }
  static bool device_idle(const Device* d);
  // Blocks the host until pred() holds; spins briefly first unless
  // `blocking`. Meanwhile the host runs the work it waits for itself when an
  // idle executor would take it (host work): `awaited` is the stream whose
  // progress pred() needs (null: any stream of `device`), `claimed` one the
  // caller claimed for the host already (claim()).
  void host_wait(Lock& lock, bool blocking, const std::function<bool()>& pred, Stream* awaited, Device* device,
                 Stream* claimed = nullptr);
  // ---- host work (scheduler_host_work.cpp); all with mutex_ held.
  // Runs the awaited work on the calling host, batch by batch, from
  // `claimed` (or a stream it may take) until pred() holds or it may take
  // no more; returns with the thread's own state back, and false if the
  // embedding declined to run kernels on this thread (fooSetHostWorkHook).
  // `serial_only`: it takes only kernels that start no thread team.
  bool run_host_work(Lock& lock, const std::function<bool()>& pred, Stream* awaited, Device* device,
                     Stream* claimed, bool serial_only);
  // A stream the waiting host may take now, or null: the one holding up
  // `awaited` (holding_up), or the device's first runnable one; with
  // `serial_only`, only if its next kernel starts no thread team.
  Stream* host_takeable(Stream* awaited, Device* device, bool serial_only) const;
  static Stream* holding_up(Stream* s);
  // Whether an idle executor would take the runnable stream `s` now.
  bool host_may_take(const Stream* s) const;
  // Whether a host may claim an idle stream of `d` for work it queues and
  // waits for: an executor is free with no runnable stream waiting for it.
  bool host_may_claim(const Device* d) const;
  // Marks `s` run by the calling host: unlisted, running, busy.
  static void claim(Stream* s);
  // Ends the calling host's run of `s` (claim()) and moves the stream on;
  // `s` may be freed (a destroyed stream that went idle).
  void unclaim(Stream* s);
  // Wakes an executor for runnable streams that no awake one will take.
  void offer_work(Device* d);
  static void note_error(Stream* s, KernelErrorPtr error);
  static fooError_t report(const KernelErrorPtr& error);
  // report() unless the event was created to ignore failures.
  static fooError_t report_for(const Event* e, const KernelErrorPtr& error);
  fooError_t enqueue_and_wait(Lock& lock, Stream* s, Command c);
  fooError_t launch_and_wait_erased(Stream* s, void (*run)(void*), void* work,
                                    std::function<void()> (*to_function)(void*), bool serial);
  // Capture (graph_capture.cpp); all with mutex_ held.
  // Takes `node` only on success: on failure it stays with the caller, so
  // that what it owns is released after the mutex (see launch()).
  fooError_t capture_node(Stream* s, GraphNode& node, const char* what);
  // launch() and launch_owned(): `work` runs on the stream, or, under
  // capture, `as_node` becomes the graph's node (with `work` in it if it
  // has no fn).
  fooError_t launch_closure(Stream* s, std::function<void()> work, GraphNode as_node, bool serial = false);
  fooError_t capture_record(Event* e, Stream* s);
  fooError_t capture_wait(Stream* s, Event* e, const CapturePtr& from, bool* handled);
  // Invalidates `c` and fails with fooErrorStreamCaptureUnsupported.
  fooError_t capture_conflict(Capture& c, const std::string& what);
  fooError_t unsafe_call_locked(const char* what);
  fooError_t conflict_on_device(const Device* d, const char* what);
  void end_capture_locked(Capture& c);
  static CapturePtr live_capture_of(const Event* e);

  const Config config_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::unordered_set<Stream*> live_streams_;
  // The stream check_stream found live last: a launch loop checks one
  // stream over and over, and a hash lookup per launch showed in profiles.
  // Cleared when that stream is destroyed.
  Stream* last_live_stream_ = nullptr;
  // Set by launch() around its push: list_runnable then leaves the
  // doorbell to it (rung once the mutex is released) and notes the device.
  bool ring_after_unlock_ = false;
  Device* doorbell_to_ring_ = nullptr;
  std::unordered_set<Event*> live_events_;
  std::vector<CapturePtr> captures_;  // under way, on any device
  // captures_.size(), set under the mutex: a blocking call checks it
  // without the mutex, which every `.item()` would take only to find none.
  std::atomic<size_t> capture_count_{0};
  unsigned long long next_capture_id_ = 1;
  uint64_t next_seq_ = 0;
  std::condition_variable host_cv_;
  int host_waiters_ = 0;
  std::atomic<uint64_t> progress_{0};  // bumped on every completion, for spinning hosts
};

}  // namespace foo_sim
