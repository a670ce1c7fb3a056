// Sharing foo storages with other processes, as CUDA's storage sharing
// (torch/csrc/StorageSharing.cpp, CudaIPCTypes.h) does it:
//  - the producer names the allocation that holds the storage
//    (fooIpcGetMemHandle of the allocator's segment) and the storage's
//    offset in it, records an interprocess event on the current stream, and
//    takes a slot in a shared reference-counter file, set to 1;
//  - the storage's DataPtr then becomes a SentData that holds the block: when
//    the producer drops the storage while a consumer still holds its copy
//    (the slot is not 0), the block waits in a limbo and goes back to the
//    allocator at ipc_collect() (or the next share) after the slot reached 0;
//  - the consumer maps the allocation, makes its current stream wait for the
//    event, and gets a storage that is not resizable and is not counted by
//    its allocator; when it drops it, it waits for its current stream and
//    sets the slot to 0 (decrements it).
#pragma once

#include <cstddef>
#include <string>

#include <c10/core/Storage.h>

namespace foo::ipc {

// What a share sends; the fields of torch.UntypedStorage._share_cuda_().
struct SharedStorage {
  c10::DeviceIndex device = 0;
  std::string handle;          // fooIpcMemHandle_t bytes; empty for an empty storage
  size_t storage_size_bytes = 0;
  size_t storage_offset_bytes = 0;  // of the storage in the allocation
  std::string ref_counter_handle;   // name of the shared counter file
  size_t ref_counter_offset = 0;    // slot in it
  std::string event_handle;         // fooIpcEventHandle_t bytes
  bool event_sync_required = false;
};

SharedStorage share(const c10::Storage& storage);
c10::Storage open(const SharedStorage& shared);
// A consumer already holds the storage (the Python-side cache found it): it
// gives the producer's new slot back at once.
void release_counter(const std::string& ref_counter_handle, size_t ref_counter_offset);
// Returns the blocks in limbo whose consumers all let go; true if any was.
bool collect();
// Blocks in limbo (for tests and ipc_collect's docs).
size_t limbo_size();

}  // namespace foo::ipc
