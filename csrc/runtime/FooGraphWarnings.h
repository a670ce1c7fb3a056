// The warnings of a graph's kernels go to the thread that replays it.
//
// A kernel captured in a graph runs on every replay, on an executor, as an
// eager kernel runs after its launch; what it warns then is raised on the
// thread that called replay(), at that thread's next launch or wait, as an
// eager kernel's warnings are raised on the thread that launched it. What
// an operator's host code warns during the capture is raised then, once, on
// the capturing thread (the host code does not run again at a replay, as on
// CUDA).
//
// A graph has an inbox of its own (FooKernelWarnings.h) that its captured
// kernels warn into and that passes each warning on to the inbox of the
// thread whose replay it was last pointed at. A replay by another thread
// than the previous one first queues the new pointing on its stream: the
// replay's kernels then run after it. (Two threads replaying one graph at
// once on two streams: each replay's warnings go to the thread whose
// pointing ran last, as both replays read one generator slot.)
//
// Defined in FooKernelWarnings.cpp, with the inboxes.
#pragma once

namespace foo {

class KernelWarningInbox;

// A new graph's inbox, pointed at the calling thread. Never freed: a replay
// may still be queued when its graph goes.
KernelWarningInbox* new_graph_warning_inbox();

// From now until end_capture_warnings(graph), the kernels the calling
// thread launches (those it captures) warn into `graph`, which is pointed
// at the calling thread.
void begin_capture_warnings(KernelWarningInbox* graph);
void end_capture_warnings(KernelWarningInbox* graph) noexcept;

// Called by the executor, in stream order before a replay: the graph's
// kernels warn to `replayer` (the replaying thread's inbox) from now on.
void point_graph_warnings(KernelWarningInbox* graph, KernelWarningInbox* replayer) noexcept;

// The calling thread's own inbox (for a replay: where its kernels' warnings go).
KernelWarningInbox* own_thread_inbox();

}  // namespace foo
