/*
 * foo_sim: a stream race detector.
 *
 * While it is on, every piece of work queued on a stream carries the device
 * (and pinned host) memory ranges it reads and writes, and foo_sim keeps a
 * happens-before relation over the streams and the host:
 *  - program order within a stream;
 *  - fooEventRecord then fooStreamWaitEvent (on any device);
 *  - the host's synchronizations: fooStreamSynchronize, fooEventSynchronize,
 *    fooDeviceSynchronize, a fooStreamQuery or fooEventQuery that returns
 *    fooSuccess, the blocking copies and memsets, fooFree;
 *  - the host's program order: work launched after a synchronization comes
 *    after everything that synchronization covered.
 * Two accesses to overlapping bytes, at least one a write, that this
 * relation does not order are a race. The relation is about what the
 * program guarantees, not about the order the work happened to run in, so
 * a race is found whatever the timing.
 *
 * Where accesses come from:
 *  - copies and memsets declare their own ranges (the host side only when
 *    it is pinned memory: a pageable copy blocks the host anyway);
 *  - a kernel has the accesses the launching thread declared with
 *    fooRaceDeclare since its previous launch (a layer above foo_sim knows
 *    which tensors an operator reads and writes);
 *  - fooRaceDeclareAllocation: an allocator hands a block to a stream; the
 *    next launch on that stream by the same thread writes it (the new owner
 *    takes the memory over), so the hand-over must come after every earlier
 *    use of the block, from any stream: that is how a use after free across
 *    streams is found when a caching allocator reuses a block;
 *  - fooRaceHostAccess: the host itself reads or writes memory (pinned
 *    buffers that async copies use).
 *
 * Modes. Off (the default, or FOO_SIM_RACE_CHECK=0) costs one predictable
 * branch per launch and synchronization. Warn (FOO_SIM_RACE_CHECK=1 or
 * warn) records each race; raise (FOO_SIM_RACE_CHECK=raise) also makes the
 * launch (or copy) that completes a race fail with fooErrorRaceDetected
 * without queuing it; a race completed by fooRaceHostAccess is returned by
 * that call and also by the calling thread's next launch or
 * synchronization, for callers that cannot fail where they are.
 * Turning the detector on from off starts from a clean slate.
 *
 * Reports are deduplicated by the pair of sites (operation and site string
 * of both accesses): the same race in a loop is reported once, with a
 * count.
 *
 * Graphs: a captured launch keeps its accesses, and a replay (fooGraphLaunch)
 * is checked as one launch on the stream that launches it, accessing what
 * all its nodes access; races between the nodes of one replay are not
 * looked for.
 *
 * Not covered: races inside one graph replay, host
 * code that touches memory without fooRaceHostAccess, kernels that access
 * memory they were not told about. Several host threads count as one host.
 */
#ifndef FOO_SIM_FOO_RACE_H
#define FOO_SIM_FOO_RACE_H

#include "foo_sim/foo_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fooRaceMode {
  fooRaceModeOff = 0,
  fooRaceModeWarn = 1,  /* record races, go on */
  fooRaceModeRaise = 2  /* record races, fail the call that completes one */
} fooRaceMode;

/* One memory access. `what` describes the data ("float32[64, 128]"); it is
 * copied (may be NULL). */
typedef struct fooRaceAccess {
  const void* ptr;
  size_t bytes;
  int write; /* nonzero: written (maybe also read) */
  const char* what;
} fooRaceAccess;

typedef enum fooRaceKind {
  fooRaceKindUnordered = 0,    /* two streams, no synchronization between */
  fooRaceKindUseAfterFree = 1, /* the block was freed after the first access and reused */
  fooRaceKindHost = 2          /* one side is the host */
} fooRaceKind;

/* One side of a race. Strings live as long as the report. */
typedef struct fooRaceSide {
  const char* op;    /* operator or copy name */
  const char* what;  /* the data, "" if unknown */
  const char* site;  /* where the host was when it launched it, "" if unknown */
  int write;
  int device;        /* -1 for the host */
  int stream;        /* foo_sim's number for the stream, in order of first use; -1 for the host */
  int isDefaultStream;
  fooStream_t handle; /* an identifier only: the stream may be gone; NULL for the host */
} fooRaceSide;

typedef struct fooRaceReport {
  fooRaceKind kind;
  fooRaceSide first;   /* the earlier access */
  fooRaceSide second;  /* the access that completed the race */
  const void* address; /* first overlapping byte */
  size_t bytes;        /* overlapping bytes of the two accesses */
  unsigned long long count; /* times this pair of sites raced */
  const char* message; /* a readable description */
} fooRaceReport;

typedef void (*fooRaceReportFn_t)(const fooRaceReport* report, void* userData);

/* Sets the mode; from off to on, forgets all earlier state and reports. */
FOO_SIM_API fooError_t fooRaceSetMode(fooRaceMode mode);
/* The current mode (FOO_SIM_RACE_CHECK sets the initial one). */
FOO_SIM_API fooRaceMode fooRaceGetMode(void);

/* Accesses of the calling thread's next launch (kernel, copy or memset),
 * added to those declared since its last launch. `op` and `site` (may be
 * NULL) name the operation and where the host is; copied. No effect while
 * the detector is off. */
FOO_SIM_API fooError_t fooRaceDeclare(const fooRaceAccess* accesses, size_t count, const char* op, const char* site);
/* Drops what fooRaceDeclare gathered and nothing launched. */
FOO_SIM_API void fooRaceClearDeclared(void);
/* For nested declarers (an operator that calls operators): a mark taken
 * before declaring, restored when done. Restoring drops what was declared
 * since the mark if no launch of the thread took it, and keeps what was
 * declared before (an enclosing operator's accesses, for its own launch);
 * if the thread launched since, everything still declared is dropped. */
typedef struct fooRaceMark {
  unsigned long long launches;
  size_t declared;
} fooRaceMark;
FOO_SIM_API fooRaceMark fooRaceGetMark(void);
FOO_SIM_API void fooRaceRestoreMark(fooRaceMark mark);
/* An allocator handed [ptr, ptr+bytes) to `stream`: the calling thread's
 * next launch on that stream writes it (see above). */
FOO_SIM_API fooError_t fooRaceDeclareAllocation(const void* ptr, size_t bytes, fooStream_t stream);
/* An allocator took the block back (without fooFree): a later race with an
 * earlier access to it is reported as a use after free. */
FOO_SIM_API fooError_t fooRaceNoteFree(const void* ptr, size_t bytes);
/* The host reads or writes [ptr, ptr+bytes) now. fooErrorRaceDetected in
 * raise mode if that races with queued work. */
FOO_SIM_API fooError_t fooRaceHostAccess(const void* ptr, size_t bytes, int write, const char* what, const char* op,
                                         const char* site);

/* Nonzero on foo_sim's executor threads, which run kernels and never
 * launch, and on a host thread while it runs queued work in their place
 * (fooSetHostWorkHook): hooks that declare accesses have nothing to do
 * there (the declaring calls above ignore them). */
FOO_SIM_API int fooRaceOnExecutorThread(void);

/* Calls fn for every report so far, oldest first. */
FOO_SIM_API fooError_t fooRaceGetReports(fooRaceReportFn_t fn, void* userData);
FOO_SIM_API void fooRaceClearReports(void);
/* Calls fn for each report first recorded by the calling thread since its
 * last call (to warn about each new pair of sites once). */
FOO_SIM_API fooError_t fooRaceTakeNewReports(fooRaceReportFn_t fn, void* userData);
/* Calls fn for the report of the race the calling thread's latest
 * fooErrorRaceDetected was about (nothing if none). */
FOO_SIM_API fooError_t fooRaceGetRaisedReport(fooRaceReportFn_t fn, void* userData);
#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FOO_SIM_FOO_RACE_H */
