// The stream race detector behind foo_race.h.
//
// Design: vector clocks, as in the classic happens-before race detectors
// (DJIT+, FastTrack), with streams in the place of threads.
//  - Each stream has a clock (race_clock.h). A launch ticks the stream's own
//    entry: the launch's epoch is (stream, n).
//  - fooEventRecord snapshots the stream's clock into the event;
//    fooStreamWaitEvent joins the snapshot into the waiting stream's clock.
//  - The host has a clock too. A host synchronization joins what it waited
//    for (a stream's clock, an event's snapshot, every stream of a device)
//    into it, and every stream joins the host's clock before its next
//    launch, record or wait: work queued after a synchronization is ordered
//    after what the synchronization covered.
//  - Shadow memory (race_shadow.h) keeps the last write and the reads since
//    of every touched byte range with their epochs. An access conflicts with
//    an earlier one to overlapping bytes, at least one a write, unless the
//    earlier epoch is covered by the clock of the stream making the new one.
//  - Host accesses (fooRaceHostAccess) are checked against the host's
//    clock and not recorded: every later launch is ordered after them by
//    the host's program order.
// All clocks describe the order the program guarantees at submission, not
// the order work ran in, so the verdict does not depend on timing.
//
// Costs while on: one clock join when the host clock changed, an O(log n)
// map search per access, a clock copy per event record; clocks grow with
// the number of streams used since the detector was turned on.
//
// Limits: several host threads count as one host (a synchronization by one
// orders the next launches of all); a graph replay is checked as a whole
// against the work around it, not node by node; a kernel's accesses are
// what its launcher declared.
//
// Locking: the hooks below are called by the scheduler with its mutex held
// and take the detector's own mutex inside it (never the other way round).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "foo_sim/foo_race.h"
#include "foo_sim/foo_runtime.h"
#include "race_clock.h"

struct fooStream_st;
struct fooEvent_st;

namespace foo_sim {
struct Device;
struct GraphData;
}

namespace foo_sim::race {

extern std::atomic<int> g_mode;
// The one branch the launch path pays while the detector is off.
inline bool on() { return g_mode.load(std::memory_order_relaxed) != fooRaceModeOff; }

// Reads FOO_SIM_RACE_CHECK once (from the runtime's configuration).
void set_initial_mode(fooRaceMode mode);

// ---- scheduler hooks, with the scheduler's mutex held
// A launch on `s` (not capturing) with the calling thread's declared
// accesses; fooErrorRaceDetected in raise mode (then nothing is recorded
// and the caller must not queue the work).
fooError_t on_launch(fooStream_st* s);
void on_record(fooEvent_st* e, fooStream_st* s);
void on_wait(fooStream_st* s, fooEvent_st* e);
void on_host_waited_stream(fooStream_st* s);
void on_host_waited_event(fooEvent_st* e);
void on_host_waited_device(const Device* d);
// A race the calling thread found on the host side (fooRaceHostAccess in
// raise mode) and has not failed a call with yet.
fooError_t take_deferred();

// Graph capture and replay. A captured launch on `s` takes the calling
// thread's declared accesses with it into its node, the memory allocated
// for it on `s` as a write (take_captured: null if none). A
// replay counts as one launch on the stream that launches it, accessing
// everything its nodes access (on_replay): so a replay not ordered with the
// work that produces its inputs or uses its outputs is a race, as on any
// launch. Races between the nodes of one replay are not looked for (the
// captured dependencies order most of them). `previous` is the executable
// graph's last replay, which this one is ordered after; it becomes this one.
struct CapturedAccesses;
std::shared_ptr<const CapturedAccesses> take_captured(const fooStream_st* s);
fooError_t on_replay(fooStream_st* s, const GraphData& graph, ReplayClock* previous);

// ---- without the scheduler's mutex
// The calling thread's declarations and deferred race, set aside while it
// runs queued work in place of an executor (host_work.h): what that work
// declares is not the thread's next launch's.
struct ThreadDeclarations;
struct ThreadDeclarationsDeleter {
  void operator()(ThreadDeclarations* d) const;
};
using SavedDeclarations = std::unique_ptr<ThreadDeclarations, ThreadDeclarationsDeleter>;
SavedDeclarations set_aside_thread_declarations();
void restore_thread_declarations(SavedDeclarations saved);

// A copy or memset's own range, for the calling thread's next launch.
void declare_own(const void* ptr, size_t bytes, bool write, const char* op);
// fooFree / fooFreeHost: the memory is gone.
void forget(const void* ptr, size_t bytes);

}  // namespace foo_sim::race
