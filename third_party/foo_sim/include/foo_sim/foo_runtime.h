/*
 * foo_sim: a simulated accelerator runtime with a C API in the style of a
 * vendor runtime (the CUDA runtime API is the model).
 *
 * Devices are simulated on the host: device memory is host memory that the
 * runtime accounts against a per-device capacity, and "kernels" are host
 * functions that executor threads of the device run asynchronously, in
 * stream order. Nothing here depends on PyTorch.
 *
 * Conventions, as in the CUDA runtime:
 *  - every call returns a fooError_t; fooSuccess is 0;
 *  - the most recent error of the calling thread is kept for
 *    fooGetLastError / fooPeekAtLastError, and fooGetErrorDetail gives a
 *    message that names the offending value;
 *  - a NULL fooStream_t means the default stream of the current device;
 *  - a kernel fails by calling fooKernelReportError or by throwing. The
 *    failure is reported asynchronously, as fooErrorLaunchFailure with the
 *    kernel's message in fooGetErrorDetail, by the first synchronization
 *    point that covers it:
 *      fooStreamQuery, fooStreamSynchronize, or a blocking copy on a stream
 *      that covers it; fooDeviceSynchronize of a device with such a stream;
 *      fooEventQuery (once complete) or fooEventSynchronize of an event
 *      whose most recent record covers it (unless the event was created
 *      with fooEventIgnoreFailures).
 *    A stream covers the failures of its own kernels and, once it has
 *    passed a fooStreamWaitEvent, those the awaited record covers; a record
 *    covers what its stream covered when the stream reached it. So a
 *    failure follows waits from stream to stream, transitively. (CUDA
 *    makes errors sticky for the whole context; this model is weaker, but
 *    it does not hide a failure from the streams and events downstream of
 *    it, within the one-failure limit below.)
 *  - each failure is reported once in total: the first point that reports
 *    it marks it, the others that cover it then stay silent about it, and
 *    the device remains usable. A stream, and so a record made on it,
 *    carries at most one unreported failure: the earliest to reach it. A
 *    failure that reaches it, from a kernel or a wait, while that one is
 *    unreported is not carried by it (a point that covers it elsewhere may
 *    still report it); once that one is reported, the next failure to
 *    reach it is carried.
 *    With FOO_SIM_LAUNCH_BLOCKING=1 the failing launch itself reports it.
 *
 * Environment (read once, at the first call):
 *  FOO_SIM_DEVICE_COUNT      number of devices (default 2; 0 = none; at
 *                            most FOO_SIM_MAX_DEVICES)
 *  FOO_SIM_DEVICE_MEMORY     capacity of each device, e.g. 512MiB, 8GiB
 *                            (default 8GiB)
 *  FOO_SIM_DEVICE_EXECUTORS  executor threads per device (default 4)
 *  FOO_SIM_LAUNCH_BLOCKING   1: every launch completes before it returns
 *  FOO_SIM_LAUNCH_DELAY_US   every launched function starts N us late
 *  FOO_SIM_RACE_CHECK        the stream race detector (foo_race.h): 0 (off,
 *                            default), 1 or warn (record races), raise
 */
#ifndef FOO_SIM_FOO_RUNTIME_H
#define FOO_SIM_FOO_RUNTIME_H

#include <stddef.h>

#if defined(_WIN32)
#define FOO_SIM_API
#else
#define FOO_SIM_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define FOO_SIM_VERSION_MAJOR 1
#define FOO_SIM_VERSION_MINOR 0

typedef enum fooError {
  fooSuccess = 0,
  fooErrorInvalidValue = 1,
  fooErrorMemoryAllocation = 2,
  fooErrorInitializationError = 3,
  fooErrorInvalidMemcpyDirection = 21,
  fooErrorNoDevice = 100,
  fooErrorInvalidDevice = 101,
  fooErrorDeviceUninitialized = 201, /* as CUDA's invalid device context */
  fooErrorInvalidResourceHandle = 400,
  fooErrorIllegalState = 401,
  fooErrorNotReady = 600,
  fooErrorLaunchFailure = 719,
  fooErrorNotPermitted = 800,
  /* Stream capture (foo_sim/foo_graph.h), numbered as CUDA's. */
  fooErrorStreamCaptureUnsupported = 900, /* illegal while capturing */
  fooErrorStreamCaptureInvalidated = 901, /* an earlier error spoiled it */
  fooErrorStreamCaptureUnmatched = 903,   /* no capture begun on the stream */
  fooErrorStreamCaptureUnjoined = 904,    /* a forked stream not joined back */
  fooErrorStreamCaptureIsolation = 905,   /* a dependency across the capture's edge */
  fooErrorStreamCaptureWrongThread = 908, /* ended from another thread */
  /* The race detector (foo_sim/foo_race.h) in raise mode. */
  fooErrorRaceDetected = 950
} fooError_t;

typedef struct fooStream_st* fooStream_t;
typedef struct fooEvent_st* fooEvent_t;

/* A kernel: a host function run on an executor thread of the device (or
 * by a host thread waiting for it: fooSetHostWorkHook). */
typedef void (*fooHostFn_t)(void* userData);

typedef struct fooDeviceProp {
  char name[64];
  size_t totalGlobalMem;
  int major;
  int minor;
  int executorCount;         /* executor threads that run this device's work */
  int leastStreamPriority;   /* numerically largest: lowest priority (0)    */
  int greatestStreamPriority;/* numerically smallest: highest priority     */
} fooDeviceProp;

typedef enum fooMemoryType {
  fooMemoryTypeUnregistered = 0,
  fooMemoryTypeHost = 1,   /* pinned host memory from fooMallocHost */
  fooMemoryTypeDevice = 2  /* device memory from fooMalloc */
} fooMemoryType;

/* The most devices a process can have, so that per-device tables above the
 * runtime may be fixed arrays. */
#define FOO_SIM_MAX_DEVICES 64

typedef struct fooPointerAttributes {
  fooMemoryType type;
  int device;          /* owning device; -1 for unregistered memory */
  void* basePointer;   /* start of the allocation holding the pointer */
  size_t allocationSize;
} fooPointerAttributes;

typedef enum fooMemcpyKind {
  fooMemcpyHostToHost = 0,
  fooMemcpyHostToDevice = 1,
  fooMemcpyDeviceToHost = 2,
  fooMemcpyDeviceToDevice = 3,
  fooMemcpyDefault = 4 /* direction inferred from the pointers */
} fooMemcpyKind;

/* Stream flags. fooStreamDefault is the only one: every stream, the default
 * stream included, already behaves as a CUDA non-blocking stream (the
 * default stream never synchronizes implicitly with other streams, as with
 * CUDA's per-thread default stream), so no flag would change anything. */
#define fooStreamDefault 0x0u

/* Event flags. */
#define fooEventDefault 0x0u       /* timing enabled, host waits may spin */
#define fooEventBlockingSync 0x1u  /* host waits block without spinning */
#define fooEventDisableTiming 0x2u /* no timestamp: cheaper, no elapsed time */
/* Queries and synchronizations of the event report completion only, never a
 * kernel failure: for a runtime's own bookkeeping (an allocator tracking
 * when a block is free), which must not take a failure away from the user's
 * synchronization points. Waits on it still hand failures on. */
#define fooEventIgnoreFailures 0x4u
/* Shareable with other processes (foo_sim/foo_ipc.h); needs
 * fooEventDisableTiming. */
#define fooEventInterprocess 0x8u

/* ---- errors ---- */
FOO_SIM_API const char* fooGetErrorName(fooError_t error);
FOO_SIM_API const char* fooGetErrorString(fooError_t error);
/* Returns the calling thread's last error and resets it to fooSuccess. */
FOO_SIM_API fooError_t fooGetLastError(void);
FOO_SIM_API fooError_t fooPeekAtLastError(void);
/* A message about the calling thread's last error, naming the offending
 * value ("" if none). Valid until the thread's next foo call. */
FOO_SIM_API const char* fooGetErrorDetail(void);

/* ---- initialization ---- */
/* Starts the runtime's executor threads. Optional: every call that queues
 * work does it on first use. Device counts, properties, the current device
 * and memory allocation never start threads. */
FOO_SIM_API fooError_t fooInit(void);

/* ---- devices ---- */
FOO_SIM_API fooError_t fooGetDeviceCount(int* count);
FOO_SIM_API fooError_t fooSetDevice(int device);
FOO_SIM_API fooError_t fooGetDevice(int* device);
FOO_SIM_API fooError_t fooGetDeviceProperties(fooDeviceProp* prop, int device);
FOO_SIM_API fooError_t fooDeviceGetStreamPriorityRange(int* leastPriority,
                                                       int* greatestPriority);
/* The default stream of `device` as an explicit handle (NULL in a call means
 * the default stream of the calling thread's current device). */
FOO_SIM_API fooError_t fooDeviceGetDefaultStream(int device, fooStream_t* stream);
/* Waits for all work on every stream of the current device. */
FOO_SIM_API fooError_t fooDeviceSynchronize(void);
/* True once executor threads run: a process forked after this cannot use
 * the runtime (every call returns fooErrorInitializationError). */
FOO_SIM_API int fooRuntimeIsStarted(void);

/* ---- memory ---- */
FOO_SIM_API fooError_t fooMalloc(void** devPtr, size_t size);
/* Waits for the device's queued work before freeing, as cudaFree does. */
FOO_SIM_API fooError_t fooFree(void* devPtr);
FOO_SIM_API fooError_t fooMallocHost(void** ptr, size_t size);
FOO_SIM_API fooError_t fooFreeHost(void* ptr);
FOO_SIM_API fooError_t fooPointerGetAttributes(fooPointerAttributes* attributes,
                                               const void* ptr);
FOO_SIM_API fooError_t fooMemGetInfo(size_t* free, size_t* total);
FOO_SIM_API fooError_t fooMemset(void* devPtr, int value, size_t count);
FOO_SIM_API fooError_t fooMemsetAsync(void* devPtr, int value, size_t count,
                                      fooStream_t stream);

/* ---- streams ---- */
FOO_SIM_API fooError_t fooStreamCreate(fooStream_t* stream);
/* flags keeps CUDA's shape but must be fooStreamDefault: any other value is
 * fooErrorInvalidValue. */
FOO_SIM_API fooError_t fooStreamCreateWithFlags(fooStream_t* stream,
                                                unsigned int flags);
/* flags as for fooStreamCreateWithFlags. A priority outside the device's
 * range is clamped to it, as in CUDA. */
FOO_SIM_API fooError_t fooStreamCreateWithPriority(fooStream_t* stream,
                                                   unsigned int flags,
                                                   int priority);
/* Returns at once; queued work still runs, then the stream is released. */
FOO_SIM_API fooError_t fooStreamDestroy(fooStream_t stream);
/* fooErrorLaunchFailure if the stream carries an unreported failure (see
 * above), else fooSuccess when all queued work is done, fooErrorNotReady
 * otherwise. */
FOO_SIM_API fooError_t fooStreamQuery(fooStream_t stream);
FOO_SIM_API fooError_t fooStreamSynchronize(fooStream_t stream);
/* Work queued on `stream` after this call waits for the event's most recent
 * record (made before this call), and the stream then carries a failure
 * that record covers (see above); the host does not wait. The event may
 * belong to another device. flags must be 0. */
FOO_SIM_API fooError_t fooStreamWaitEvent(fooStream_t stream, fooEvent_t event,
                                          unsigned int flags);
FOO_SIM_API fooError_t fooStreamGetPriority(fooStream_t stream, int* priority);
/* Always fooStreamDefault. */
FOO_SIM_API fooError_t fooStreamGetFlags(fooStream_t stream, unsigned int* flags);
FOO_SIM_API fooError_t fooStreamGetDevice(fooStream_t stream, int* device);

/* ---- launches ---- */
/* Enqueues fn(userData) on the stream. fn runs exactly once, on an executor
 * thread (or on a host thread waiting for it: fooSetHostWorkHook), after
 * all work queued before it on the stream. fn must not call
 * the blocking functions of this API (they return fooErrorNotPermitted).
 * On a capturing stream (foo_graph.h) fn does not run now: it becomes a
 * graph node, run by every replay with the same userData.
 * Ownership: fn will run if and only if the call returns fooSuccess or
 * fooErrorLaunchFailure (the latter only with FOO_SIM_LAUNCH_BLOCKING=1,
 * where fn has already run and failed). */
FOO_SIM_API fooError_t fooLaunchHostFunc(fooStream_t stream, fooHostFn_t fn,
                                         void* userData);
/* Like fooLaunchHostFunc, but foo_sim owns userData from the call on:
 * release(userData) (if release is not NULL) is called exactly once, when
 * nothing needs userData any more: after fn ran; if the launch was
 * captured (foo_graph.h), once the graph, every executable graph made from
 * it and their queued replays are gone; on an error return, before the
 * call returns. release runs on whatever thread drops the last use (an
 * executor or the host), never with foo_sim's locks held, so it may call
 * the non-blocking functions of this API. name (may be NULL) is what the
 * profiler and graph dumps call the kernel; it must live as long as the
 * process. */
FOO_SIM_API fooError_t fooLaunchHostFuncOwned(fooStream_t stream, fooHostFn_t fn, void* userData,
                                              fooHostFn_t release, const char* name);
/* A hint for graph replays: prefetch(userData, stage), stage in
 * [0, FOO_SIM_PREFETCH_STAGES), asks that the state fn(userData) will read
 * be brought into the caches, so that a state reached through pointers is
 * fetched one level per stage (stage k may read what stage k - 1
 * prefetched) while other nodes run, instead of one dependent cache miss at
 * a time. A replay runs each lane's nodes in groups: the consecutive nodes
 * between the points where the lane waits for another or another waits for
 * it. In a group of two or more, every node gets every stage once, in
 * order, before it runs: the group's first two nodes at its start, each
 * later one before the node before it runs. A node alone in its group gets
 * none, and eager launches never do. prefetch runs on an executor and may
 * run at the same time as fn(userData) of another replay (graphs
 * instantiated from one capture share userData): it must only read what
 * fn does not write (or atomics) and prefetch; it must not block, throw,
 * fail or call foo_sim. Otherwise as fooLaunchHostFuncOwned; prefetch may
 * be NULL. */
#define FOO_SIM_PREFETCH_STAGES 3
typedef void (*fooHostFnPrefetch_t)(void* userData, int stage);
FOO_SIM_API fooError_t fooLaunchHostFuncOwnedWithPrefetch(fooStream_t stream, fooHostFn_t fn, void* userData,
                                                          fooHostFn_t release, fooHostFnPrefetch_t prefetch,
                                                          const char* name);
/* Called from inside a running kernel: marks it failed with a message. The
 * failure surfaces as fooErrorLaunchFailure, once, at the first
 * synchronization point that covers it (see the conventions at the top),
 * and fooGetErrorDetail gives the message there. */
FOO_SIM_API fooError_t fooKernelReportError(const char* message);

/* ---- events ---- */
FOO_SIM_API fooError_t fooEventCreate(fooEvent_t* event);
/* The event belongs to the current device. */
FOO_SIM_API fooError_t fooEventCreateWithFlags(fooEvent_t* event,
                                               unsigned int flags);
/* Captures the work queued on the stream so far; re-recording replaces the
 * captured work for later queries, synchronizations and waits. The stream
 * must be on the event's device. */
FOO_SIM_API fooError_t fooEventRecord(fooEvent_t event, fooStream_t stream);
/* fooErrorNotReady until the captured work is done; then fooSuccess (also
 * for an event never recorded), or fooErrorLaunchFailure if the record
 * covers a failed kernel that nothing has reported yet: this call reports
 * it, and no other call will. */
FOO_SIM_API fooError_t fooEventQuery(fooEvent_t event);
/* Waits for the captured work, then returns as fooEventQuery would. */
FOO_SIM_API fooError_t fooEventSynchronize(fooEvent_t event);
/* Milliseconds between two completed records of timing events. */
FOO_SIM_API fooError_t fooEventElapsedTime(float* ms, fooEvent_t start,
                                           fooEvent_t end);
FOO_SIM_API fooError_t fooEventDestroy(fooEvent_t event);
FOO_SIM_API fooError_t fooEventGetDevice(fooEvent_t event, int* device);

/* ---- copies ---- */
/* Synchronous: returns when the data has arrived. Ordered after the work
 * already queued on the default stream of the device involved. */
FOO_SIM_API fooError_t fooMemcpy(void* dst, const void* src, size_t count,
                                 fooMemcpyKind kind);
/* Stream-ordered. With pinned host memory (or none) the host does not wait;
 * with pageable host memory the call returns once the copy is done. */
FOO_SIM_API fooError_t fooMemcpyAsync(void* dst, const void* src, size_t count,
                                      fooMemcpyKind kind, fooStream_t stream);
FOO_SIM_API fooError_t fooMemcpyPeer(void* dst, int dstDevice, const void* src,
                                     int srcDevice, size_t count);
FOO_SIM_API fooError_t fooMemcpyPeerAsync(void* dst, int dstDevice,
                                          const void* src, int srcDevice,
                                          size_t count, fooStream_t stream);

/* Who moves a large copy. A copy of 2 MiB or more is split into pieces
 * (FOO_SIM_COPY_THREADS of them at most, each of 1 MiB or more). By default
 * foo_sim moves them on threads of its own; an embedding that keeps a pool
 * of worker threads (a framework's intra-op pool) registers `runner`, so
 * that copies share the cores with its other parallel work as its own
 * copies do. runner(pieces, piece, pieceData, userData) must call
 * piece(i, pieceData) once for every i in [0, pieces), on any of its
 * threads, concurrently or not, and return once all have returned. It is
 * called from executor threads and from threads in fooMemcpy. `width`
 * (may be NULL) is called with userData on the thread that issues a copy,
 * as it issues it: the copy is cut into at most that many pieces, as that
 * thread's own parallel work would be. NULL for runner restores foo_sim's
 * own threads. Set it before copies start: a copy under way keeps the
 * runner it began with. */
typedef void (*fooCopyPieceFn)(size_t index, void* pieceData);
typedef void (*fooCopyRunner)(size_t pieces, fooCopyPieceFn piece,
                              void* pieceData, void* userData);
typedef int (*fooCopyWidthFn)(void* userData);
FOO_SIM_API fooError_t fooSetCopyRunner(fooCopyRunner runner, fooCopyWidthFn width,
                                        void* userData);

/* Called on a thread that is about to sleep inside foo_sim, saying which:
 * an executor that has found no work for 100 ms, or a host thread blocked
 * in a synchronization. It
 * runs outside foo_sim's locks, before the thread sleeps, with userData.
 * An embedding releases there what the thread holds that others need while
 * it sleeps: an OpenMP runtime counts every thread of every idle team and,
 * once they outnumber the cores, makes all of them sleep between parallel
 * regions instead of spinning. The hook must not call foo_sim. NULL removes
 * it. Set it before work starts. */
typedef enum fooIdleThread {
  fooIdleExecutor = 0,
  fooIdleHost = 1
} fooIdleThread;
typedef void (*fooIdleHook)(fooIdleThread thread, void* userData);
FOO_SIM_API fooError_t fooSetIdleHook(fooIdleHook hook, void* userData);

/* A host thread that waits for queued work (fooStreamSynchronize,
 * fooEventSynchronize, fooDeviceSynchronize, fooFree, a blocking copy or
 * memset, any launch with FOO_SIM_LAUNCH_BLOCKING=1) runs that work itself
 * while no executor has taken it and an idle executor of the device would
 * take it now: the device's streams still run FOO_SIM_DEVICE_EXECUTORS at a
 * time at most, the highest priority first. It runs the stream's functions
 * in order until what it waits for is done, as an executor would (launch
 * delay, failures, profiler activities), and the thread's foo_sim state
 * (current device: the stream's; last error; capture mode; race
 * declarations; profiler label and correlation id) is an executor's
 * meanwhile, so a function cannot tell the difference; fooKernelReportError
 * works there and blocking calls return fooErrorNotPermitted. The two
 * thread hand-overs of a wait are saved.
 * An embedding whose functions depend on thread state of its own registers
 * `hook`: hook(fooHostWorkBegin, userData) runs on the waiting thread
 * before the first function of a wait, hook(fooHostWorkEnd, userData) after
 * the last one, outside foo_sim's locks; they must not call foo_sim.
 * Before the thread takes a stream, hook(fooHostWorkAsk, userData) runs
 * under foo_sim's lock: it must be quick, and returning nonzero limits the
 * thread to serial work (kernels launched with fooKernelSerial, copies
 * small enough for one thread; the rest is left to the executors): for a
 * host whose own team of threads, started by a kernel, would share the
 * cores with the executors' teams. Begin returning nonzero declines: the
 * thread then waits for an executor (and End is not called). NULL removes the hook. Set it before work
 * starts. */
typedef enum fooHostWorkPhase {
  fooHostWorkBegin = 0,
  fooHostWorkEnd = 1,
  fooHostWorkAsk = 2
} fooHostWorkPhase;
typedef int (*fooHostWorkHook)(fooHostWorkPhase phase, void* userData);
FOO_SIM_API fooError_t fooSetHostWorkHook(fooHostWorkHook hook, void* userData);
/* How many launched functions the calling thread has run while waiting
 * (see above). */
FOO_SIM_API unsigned long long fooHostWorkCount(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* Stream capture and graphs, as cuda_runtime_api.h declares them with the
 * rest of the runtime. */
#include "foo_sim/foo_graph.h"
/* Interprocess handles, as cuda_runtime_api.h declares cudaIpc*. */
#include "foo_sim/foo_ipc.h"

#endif /* FOO_SIM_FOO_RUNTIME_H */
