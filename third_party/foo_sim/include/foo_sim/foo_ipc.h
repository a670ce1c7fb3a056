/*
 * Interprocess communication, as the CUDA runtime has it (cudaIpc*): a
 * process names a device allocation or an event in a handle, another
 * process opens the handle and uses the same memory or event.
 *
 * Device memory from fooMalloc is backed by an anonymous shared-memory file
 * (memfd) of the process, which a handle names (process id, descriptor and
 * a random token); opening maps the same bytes, so writes made on either
 * side are seen by the other, ordered as the processes order them (an
 * interprocess event). A handle is plain bytes: send it any way. Opening
 * needs the process that made the handle alive (its descriptor is opened
 * through /proc) and allowed to be read by the caller (same user).
 * Memory allocated before a fork is shared with the child, as any shared
 * mapping is.
 * If the process cannot have another descriptor (its limit is reached),
 * fooMalloc still succeeds with private memory, and fooIpcGetMemHandle on
 * it returns fooErrorInvalidValue.
 */
#ifndef FOO_SIM_FOO_IPC_H
#define FOO_SIM_FOO_IPC_H

#include "foo_sim/foo_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FOO_IPC_HANDLE_SIZE 64

typedef struct fooIpcMemHandle_st {
  char reserved[FOO_IPC_HANDLE_SIZE];
} fooIpcMemHandle_t;

typedef struct fooIpcEventHandle_st {
  char reserved[FOO_IPC_HANDLE_SIZE];
} fooIpcEventHandle_t;

/* The only flag fooIpcOpenMemHandle accepts, as CUDA's only one. */
#define fooIpcMemLazyEnablePeerAccess 0x1u

/* A handle to the allocation devPtr starts (a pointer fooMalloc returned;
 * not one inside it, not one fooIpcOpenMemHandle returned). */
FOO_SIM_API fooError_t fooIpcGetMemHandle(fooIpcMemHandle_t* handle, void* devPtr);
/* Maps the allocation a handle of another process names, as device memory
 * of the current device, and returns its start. Opening a handle again in
 * the same process returns the same pointer; each open needs its close.
 * Errors: fooErrorDeviceUninitialized for a handle made by the calling
 * process (as CUDA's invalid context); fooErrorInvalidResourceHandle for
 * bytes that are no handle, or when the process that made it is gone or
 * has freed the allocation; each with a detail naming which. The memory
 * is not counted in the device's used memory (fooMemGetInfo): it belongs
 * to the process that made it. fooFree refuses it. */
FOO_SIM_API fooError_t fooIpcOpenMemHandle(void** devPtr, fooIpcMemHandle_t handle, unsigned int flags);
/* Drops one open of the pointer fooIpcOpenMemHandle returned; the last one
 * waits for the device's queued work, as fooFree does, then unmaps. The
 * allocation in the process that made it is unaffected. */
FOO_SIM_API fooError_t fooIpcCloseMemHandle(void* devPtr);

/* Events created with fooEventInterprocess (which needs
 * fooEventDisableTiming, as CUDA's cudaEventInterprocess) keep their state
 * in shared memory: a record made in any process that holds the event is
 * seen by fooEventQuery, fooEventSynchronize and fooStreamWaitEvent in
 * every process. Each record is counted; the event is complete once the
 * work before the latest record (made before the query or wait) has run.
 * A wait whose awaited record belongs to a process that exits before that
 * work ran ends with fooErrorLaunchFailure (a detail naming the process)
 * instead of waiting forever. Kernel failures are not carried across
 * processes. Recording one on a capturing stream is
 * fooErrorStreamCaptureUnsupported. */
FOO_SIM_API fooError_t fooIpcGetEventHandle(fooIpcEventHandle_t* handle, fooEvent_t event);
/* An event of the current device that shares the state of the event the
 * handle names; fooEventDestroy releases it. Errors as for
 * fooIpcOpenMemHandle. */
FOO_SIM_API fooError_t fooIpcOpenEventHandle(fooEvent_t* event, fooIpcEventHandle_t handle);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FOO_SIM_FOO_IPC_H */
