/*
 * foo_sim: stream capture and graph replay, with the semantics of the CUDA
 * runtime's (cudaStreamBeginCapture ... cudaGraphLaunch).
 *
 * Capture. Between fooStreamBeginCapture and fooStreamEndCapture, work
 * queued on the stream (fooLaunchHostFunc, fooLaunchKernel, the *Async
 * copies and memsets) is recorded as nodes of a graph instead of running.
 * An event recorded on a capturing stream stands for the work captured so
 * far on it; another stream that waits on such an event joins the capture
 * (a fork) and its later work is captured too, depending on that work. The
 * capture can end only once every stream that joined is joined back: the
 * capturing stream must wait on an event recorded after the last work of
 * each forked stream, else fooStreamEndCapture returns
 * fooErrorStreamCaptureUnjoined. Ending the capture, successfully or not,
 * returns every stream that took part to normal work.
 *
 * A captured kernel node calls fn(userData) on every replay. Work whose
 * userData must be freed after use is launched with fooLaunchHostFuncOwned
 * (foo_runtime.h): the same call works eagerly and under capture, and the
 * graph then owns userData.
 *
 * Illegal during a capture (the call returns fooErrorStreamCaptureUnsupported
 * and invalidates the capture: the streams keep capturing, their launches
 * return fooErrorStreamCaptureInvalidated, and fooStreamEndCapture returns
 * fooErrorStreamCaptureInvalidated with no graph):
 *  - always, whatever the modes: synchronizing or querying a capturing
 *    stream, or an event last recorded in a capture, or a device with a
 *    capturing stream; a blocking copy on a capturing stream (fooMemcpy or
 *    fooMemset ordered on it, fooMemcpyAsync with pageable host memory);
 *    waiting, on a capturing stream, on an event recorded outside the
 *    capture (fooErrorStreamCaptureIsolation); destroying a capturing
 *    stream.
 *  - "potentially unsafe" calls, depending on the calling thread's capture
 *    interaction mode (fooThreadExchangeStreamCaptureMode, default global)
 *    and on the captures under way: fooMalloc, fooFree, fooMallocHost,
 *    fooFreeHost, fooMemcpy, fooMemset, fooMemcpyPeer, fooMemcpyAsync with
 *    pageable host memory, fooDeviceSynchronize, and synchronizations and
 *    queries of streams and events that are not capturing (so a caching
 *    allocator must not poll its events during a global capture, as CUDA's
 *    does not). A thread in mode
 *      global:       may not make them while it has a capture of its own
 *                    begun in a mode other than relaxed, nor while another
 *                    thread has a capture begun in global mode;
 *      thread-local: may not make them while it has a capture of its own
 *                    begun in a mode other than relaxed;
 *      relaxed:      may always make them.
 *    The failing call invalidates the captures that forbade it.
 *    (A caching allocator that must grow a graph's private pool while
 *    capturing switches the thread to relaxed around its fooMalloc.)
 *
 * Replay. fooGraphInstantiate makes an executable graph; fooGraphLaunch
 * queues one replay of it on any stream of the graph's device and returns
 * at once. The replay runs after the work queued on that stream before it,
 * work queued after it waits for the whole replay, and replays of one
 * executable graph run one after another, as on CUDA. Inside a replay the
 * captured dependencies hold, and work captured on different streams may
 * run concurrently on the device's executors. A kernel node calls the
 * captured function with the captured userData on every replay: what
 * userData points to must outlive the executable graph. A replay costs the
 * scheduler one command per run of nodes that a lane runs without waiting
 * for another lane, not one per node; FOO_SIM_LAUNCH_DELAY_US delays each
 * such command once.
 *
 * Lifetimes: a graph may be destroyed once instantiated; an executable graph
 * may be destroyed while replays of it are queued (they still run).
 */
#ifndef FOO_SIM_FOO_GRAPH_H
#define FOO_SIM_FOO_GRAPH_H

#include "foo_sim/foo_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fooGraph_st* fooGraph_t;
typedef struct fooGraphExec_st* fooGraphExec_t;

typedef enum fooStreamCaptureMode {
  fooStreamCaptureModeGlobal = 0,
  fooStreamCaptureModeThreadLocal = 1,
  fooStreamCaptureModeRelaxed = 2
} fooStreamCaptureMode;

typedef enum fooStreamCaptureStatus {
  fooStreamCaptureStatusNone = 0,        /* not capturing */
  fooStreamCaptureStatusActive = 1,      /* capturing */
  fooStreamCaptureStatusInvalidated = 2  /* capturing, but spoiled: must end */
} fooStreamCaptureStatus;

/* ---- capture ---- */
/* Starts capturing on `stream` (NULL: the default stream of the current
 * device, which may be captured). fooErrorIllegalState if the stream
 * already takes part in a capture. */
FOO_SIM_API fooError_t fooStreamBeginCapture(fooStream_t stream, fooStreamCaptureMode mode);
/* Ends the capture begun on `stream` and returns its graph in *graph.
 * fooErrorStreamCaptureUnmatched if no capture was begun on this stream
 * (also for a stream that only joined one); fooErrorStreamCaptureWrongThread
 * if the capture was begun in global or thread-local mode by another thread
 * (the capture goes on); fooErrorStreamCaptureUnjoined or
 * fooErrorStreamCaptureInvalidated (with *graph NULL) otherwise end it. */
FOO_SIM_API fooError_t fooStreamEndCapture(fooStream_t stream, fooGraph_t* graph);
/* Status only; legal at any time, also during a capture. */
FOO_SIM_API fooError_t fooStreamIsCapturing(fooStream_t stream, fooStreamCaptureStatus* status);
/* Status and the id of the capture the stream takes part in: unique in the
 * process and never 0; 0 when not capturing. `id` may be NULL. This is how
 * an allocator learns that an allocation on a stream belongs to a capture
 * (and to which). */
FOO_SIM_API fooError_t fooStreamGetCaptureInfo(fooStream_t stream, fooStreamCaptureStatus* status,
                                               unsigned long long* id);
/* Sets the calling thread's capture interaction mode to *mode and returns
 * the previous one in *mode (see above). */
FOO_SIM_API fooError_t fooThreadExchangeStreamCaptureMode(fooStreamCaptureMode* mode);

/* ---- graphs ---- */
FOO_SIM_API fooError_t fooGraphDestroy(fooGraph_t graph);
FOO_SIM_API fooError_t fooGraphGetNodeCount(fooGraph_t graph, size_t* count);
/* The device the graph was captured on. */
FOO_SIM_API fooError_t fooGraphGetDevice(fooGraph_t graph, int* device);
/* Writes a readable description of the graph to `path` in Graphviz DOT:
 * one vertex per node (its index, what it is, the stream it was captured
 * on), one edge per dependency. flags must be 0. */
FOO_SIM_API fooError_t fooGraphDebugDotPrint(fooGraph_t graph, const char* path, unsigned int flags);

/* ---- executable graphs ---- */
/* flags must be 0. The executable graph keeps what it needs of `graph`. */
FOO_SIM_API fooError_t fooGraphInstantiate(fooGraphExec_t* exec, fooGraph_t graph, unsigned long long flags);
/* Queues one replay on `stream` (NULL: the default stream of the current
 * device), which must belong to the graph's device; returns at once (with
 * FOO_SIM_LAUNCH_BLOCKING=1, once the replay is done, and then reports a
 * failure of it). A stream that is itself capturing cannot launch a graph:
 * fooErrorStreamCaptureUnsupported. A kernel failure inside a replay is
 * reported as any other, by the synchronization points that cover the
 * launching stream after the launch. */
FOO_SIM_API fooError_t fooGraphLaunch(fooGraphExec_t exec, fooStream_t stream);
/* Returns at once; replays already queued still run. */
FOO_SIM_API fooError_t fooGraphExecDestroy(fooGraphExec_t exec);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FOO_SIM_FOO_GRAPH_H */
