// Shared-memory files that another process can open by name: what backs
// device memory and interprocess events (foo_ipc.h). A file is a memfd of
// this process; its name is (pid, descriptor, this process's random token,
// a serial number), and the file's own name repeats token and serial, so
// that a descriptor reused for another file, or a pid reused by another
// process, is told apart from the file a handle named.
#pragma once

#include <cstddef>
#include <cstdint>

#include "foo_sim/foo_runtime.h"

namespace foo_sim::ipc {

struct SegmentName {
  int32_t pid = -1;
  int32_t fd = -1;
  uint64_t token = 0;
  uint64_t serial = 0;
};

// A new file of `size` bytes mapped shared at *base; false (errno set) when
// the process cannot have one (descriptor limit, no memfd).
bool create_segment(size_t size, void** base, SegmentName* name);
// Unmaps and closes what create_segment or open_segment gave.
void destroy_segment(void* base, size_t size, int fd);

// What a handle carries, checked on the way in (magic, kind, checksum).
enum class HandleKind : uint32_t { Memory = 1, Event = 2 };
struct WireHandle {
  uint32_t magic;
  uint32_t kind;
  SegmentName name;
  uint64_t size;
  uint64_t check;
};
static_assert(sizeof(WireHandle) <= FOO_IPC_HANDLE_SIZE, "a handle holds a WireHandle");

void encode(const SegmentName& name, HandleKind kind, size_t size, char out[FOO_IPC_HANDLE_SIZE]);
// Decodes and opens the file a handle names, mapped shared: fooSuccess, or
// fooErrorInvalidResourceHandle / fooErrorDeviceUninitialized with a
// detail (foo_ipc.h) naming `what` (the entry point).
fooError_t open_handle(const char in[FOO_IPC_HANDLE_SIZE], HandleKind kind, const char* what, WireHandle* decoded,
                       void** base, int* fd);

}  // namespace foo_sim::ipc
