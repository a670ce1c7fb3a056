/*
 * foo_sim activity tracing, in the style of CUPTI's activity API: while
 * tracing is on, every kernel, copy and memset records when it was launched
 * and when it really started and finished (on an executor, or on a host
 * thread that ran it while waiting for it), on which device and
 * stream, with the correlation id its launching thread had set.
 *
 * Tracing costs nothing while it is off (launches and executors check one
 * flag); while it is on, each piece of work takes three clock reads and
 * one short locked append.
 *
 * Times are nanoseconds since the Unix epoch (the system clock), the
 * clock profilers such as Kineto use for host events too.
 */
#ifndef FOO_SIM_FOO_PROFILER_H_
#define FOO_SIM_FOO_PROFILER_H_

#include "foo_sim/foo_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fooActivityKind {
  fooActivityKindKernel = 0,
  fooActivityKindMemcpy = 1,
  fooActivityKindMemset = 2
} fooActivityKind;

typedef struct fooActivity {
  fooActivityKind kind;
  int device;
  /* The stream it ran on; an identifier only: it may be destroyed by now. */
  fooStream_t stream;
  /* fooLaunchKernel's name, or the runtime's for copies ("Memcpy HtoD", ...)
   * and memsets; static storage. */
  const char* name;
  /* The launching thread's fooProfilerSetCorrelationId value at launch. */
  unsigned long long correlationId;
  long long launchNs; /* when the host queued it */
  long long startNs;  /* when it started */
  long long endNs;    /* when it finished */
  unsigned long long bytes; /* copies and memsets; 0 for kernels */
  fooMemcpyKind memcpyKind; /* copies */
  int launchThread; /* OS thread id of the launching thread */
} fooActivity;

typedef void (*fooActivityFn_t)(const fooActivity* activity, void* userData);

/* Starts tracing and forgets the activities of any earlier session. */
FOO_SIM_API fooError_t fooProfilerStart(void);
/* Waits until the work launched so far has run (without consuming its
 * errors, which the next synchronization still reports), then stops
 * tracing. */
FOO_SIM_API fooError_t fooProfilerStop(void);
/* Calls fn for every activity recorded since fooProfilerStart, oldest launch
 * first, then forgets them. */
FOO_SIM_API fooError_t fooProfilerFlush(fooActivityFn_t fn, void* userData);
/* Nonzero while tracing is on. */
FOO_SIM_API int fooProfilerIsActive(void);
/* Sets the correlation id the calling thread's next launches carry (0: none). */
FOO_SIM_API void fooProfilerSetCorrelationId(unsigned long long id);

/* fooLaunchHostFunc with a name, shown by the profiler; `name` must have
 * static storage (or outlive every profiling session that may see it). */
FOO_SIM_API fooError_t fooLaunchKernel(fooStream_t stream, fooHostFn_t fn, void* userData, const char* name);
/* fooLaunchKernel with flags: fooKernelDefault, or fooKernelSerial for a
 * kernel that runs on its thread alone (starts no team of threads), which
 * a waiting host limited to serial work may run (fooHostWorkAsk). */
#define fooKernelDefault 0x0u
#define fooKernelSerial 0x1u
FOO_SIM_API fooError_t fooLaunchKernelEx(fooStream_t stream, fooHostFn_t fn, void* userData, const char* name,
                                         unsigned int flags);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FOO_SIM_FOO_PROFILER_H_ */
