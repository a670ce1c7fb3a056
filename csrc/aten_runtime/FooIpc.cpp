#include "aten_runtime/FooIpc.h"

#include <atomic>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <ATen/MapAllocator.h>
#include <c10/util/Exception.h>
#include <foo_sim/foo_runtime.h>

#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooInit.h"
#include "runtime/FooStream.h"

namespace foo::ipc {
namespace {

constexpr size_t kCounterSlots = 10000;  // as CUDA's ref-counter file

// A file of int64 counters in shared memory, one slot per share.
struct CounterFile {
  std::string name;
  at::DataPtr data;
  int64_t* slot(size_t i) const { return static_cast<int64_t*>(data.get()) + i; }
};

// Every counter file this process maps, the ones it made and the ones it
// opened, by name. A file goes (unlinked by the last process to unmap it)
// when nothing uses it, or at exit: objects Python never freed would
// otherwise keep it mapped, and so on /dev/shm, after every process ended.
class CounterFiles {
 public:
  ~CounterFiles() {
    // A child forked with the files mapped never counted itself in them.
    if (in_bad_fork()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [name, weak] : files_) {
      if (auto file = weak.lock()) file->data.clear();
    }
  }

  std::shared_ptr<CounterFile> open(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto file = files_[name].lock()) return file;
    auto file = map(name, at::ALLOCATOR_MAPPED_SHAREDMEM | at::ALLOCATOR_MAPPED_NOCREATE);
    forget_unused();
    files_[name] = file;
    return file;
  }

  // A slot of the file new shares take slots of (a new file when it is full).
  std::pair<std::shared_ptr<CounterFile>, size_t> take_slot() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!current_ || next_slot_ == kCounterSlots) {
      std::string name = at::NewProcessWideShmHandle();
      current_ = map(name, at::ALLOCATOR_MAPPED_SHAREDMEM | at::ALLOCATOR_MAPPED_EXCLUSIVE);
      forget_unused();
      files_[name] = current_;
      next_slot_ = 0;
    }
    return {current_, next_slot_++};
  }

 private:
  void forget_unused() {
    for (auto it = files_.begin(); it != files_.end();) it = it->second.expired() ? files_.erase(it) : std::next(it);
  }

  static std::shared_ptr<CounterFile> map(const std::string& name, int flags) {
    auto file = std::make_shared<CounterFile>();
    file->name = name;
    file->data = at::RefcountedMapAllocator::makeDataPtr(name.c_str(), flags, sizeof(int64_t) * kCounterSlots, nullptr);
    return file;
  }

  std::mutex mutex_;
  std::map<std::string, std::weak_ptr<CounterFile>> files_;
  std::shared_ptr<CounterFile> current_;
  size_t next_slot_ = 0;
};

CounterFiles g_counter_files;

std::atomic<int64_t>& as_atomic(int64_t* p) {
  static_assert(sizeof(std::atomic<int64_t>) == sizeof(int64_t), "a counter is a lock-free int64");
  return *reinterpret_cast<std::atomic<int64_t>*>(p);
}

// The producer's side of one share: holds the block until the consumer let go.
struct SentData {
  c10::DataPtr original;
  std::shared_ptr<CounterFile> counters;
  size_t slot;
  fooEvent_t event = nullptr;  // interprocess, recorded at the share
  int64_t count() const { return as_atomic(counters->slot(slot)).load(); }
  ~SentData() {
    if (event != nullptr && !in_bad_fork()) (void)fooEventDestroy(event);
  }
};

// Never destroyed: at exit, blocks still held by consumers are left to the
// process's end, as CUDA's limbo leaves them (with a warning there).
std::mutex& limbo_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::deque<std::unique_ptr<SentData>>& limbo() {
  static auto* l = new std::deque<std::unique_ptr<SentData>>;
  return *l;
}

void delete_sent(void* ctx) {
  std::unique_ptr<SentData> sent(static_cast<SentData*>(ctx));
  if (sent->count() > 0) {
    std::lock_guard<std::mutex> lock(limbo_mutex());
    limbo().push_back(std::move(sent));
  }
  // else: the block goes back to the allocator with `original`.
}

// The consumer's side: the mapping and the slot to give back.
struct Received {
  void* base;  // what fooIpcOpenMemHandle returned
  c10::DeviceIndex device;
  std::shared_ptr<CounterFile> counters;
  size_t slot;
};

void delete_received(void* ctx) {
  std::unique_ptr<Received> r(static_cast<Received*>(ctx));
  if (in_bad_fork()) return;
  // The producer may reuse the block once the slot is 0: the consumer's
  // work on it must be done first (CUDA waits for the current stream too).
  (void)on_device(r->device, [&] {
    fooError_t e = fooStreamSynchronize(getCurrentFooStream(r->device).stream());
    if (e != fooSuccess) (void)fooGetLastError();  // a failure belongs to the user's own synchronizations
    return e;
  });
  as_atomic(r->counters->slot(r->slot)).fetch_sub(1);
  (void)on_device(r->device, [&] {
    fooError_t e = fooIpcCloseMemHandle(r->base);
    if (e != fooSuccess) (void)fooGetLastError();
    return e;
  });
}

}  // namespace

SharedStorage share(const c10::Storage& storage) {
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  c10::Device device = storage.device();
  TORCH_CHECK(device.type() == c10::DeviceType::PrivateUse1, "share: expected a foo storage, got ", device);
  TORCH_CHECK(!impl->received_cuda(),
              "Attempted to send foo tensor received from another process; this is not currently supported. "
              "Consider cloning before sending.");
  collect();
  SharedStorage out;
  out.device = device.index();
  out.storage_size_bytes = impl->nbytes();
  void* ptr = impl->mutable_data();
  if (ptr == nullptr || out.storage_size_bytes == 0) return out;

  fooPointerAttributes attributes;
  FOO_CHECK(fooPointerGetAttributes(&attributes, ptr));
  TORCH_CHECK(attributes.type == fooMemoryTypeDevice, "share: the storage's memory is not foo device memory");
  out.storage_offset_bytes = static_cast<char*>(ptr) - static_cast<char*>(attributes.basePointer);
  fooIpcMemHandle_t handle;
  FOO_CHECK(fooIpcGetMemHandle(&handle, attributes.basePointer));
  out.handle.assign(handle.reserved, sizeof handle.reserved);

  auto sent = std::make_unique<SentData>();
  std::tie(sent->counters, sent->slot) = g_counter_files.take_slot();
  as_atomic(sent->counters->slot(sent->slot)).store(1);
  out.ref_counter_handle = sent->counters->name;
  out.ref_counter_offset = sent->slot;

  // The consumer's first use waits for the work queued on the storage so far.
  FOO_CHECK(on_device(device.index(), [&] {
    return fooEventCreateWithFlags(&sent->event, fooEventDisableTiming | fooEventInterprocess);
  }));
  FOO_CHECK(fooEventRecord(sent->event, getCurrentFooStream(device.index()).stream()));
  fooIpcEventHandle_t event_handle;
  FOO_CHECK(fooIpcGetEventHandle(&event_handle, sent->event));
  out.event_handle.assign(event_handle.reserved, sizeof event_handle.reserved);
  out.event_sync_required = true;

  SentData* raw = sent.get();
  raw->original = impl->set_data_ptr(c10::DataPtr(ptr, sent.release(), &delete_sent, device));
  return out;
}

c10::Storage open(const SharedStorage& shared) {
  c10::Device device(c10::DeviceType::PrivateUse1, shared.device);
  check_device_index(shared.device);
  lazy_init();
  TORCH_CHECK_VALUE(shared.handle.size() == sizeof(fooIpcMemHandle_t), "a foo memory handle is ",
                    sizeof(fooIpcMemHandle_t), " bytes, got ", shared.handle.size());
  TORCH_CHECK_VALUE(!shared.event_sync_required || shared.event_handle.size() == sizeof(fooIpcEventHandle_t),
                    "a foo event handle is ", sizeof(fooIpcEventHandle_t), " bytes, got ", shared.event_handle.size());
  TORCH_CHECK_VALUE(shared.ref_counter_offset < kCounterSlots, "ref_counter_offset ", shared.ref_counter_offset,
                    " is past the counter file's ", kCounterSlots, " slots");
  fooIpcMemHandle_t handle;
  std::memcpy(handle.reserved, shared.handle.data(), sizeof handle.reserved);
  auto received = std::make_unique<Received>();
  received->device = shared.device;
  received->slot = shared.ref_counter_offset;
  FOO_CHECK(on_device(shared.device, [&] {
    return fooIpcOpenMemHandle(&received->base, handle, fooIpcMemLazyEnablePeerAccess);
  }));
  // From here on, a failure closes the mapping again.
  auto close_mapping = [&] {
    void* base = received->base;
    (void)on_device(shared.device, [&] { return fooIpcCloseMemHandle(base); });
  };
  try {
    received->counters = g_counter_files.open(shared.ref_counter_handle);
  } catch (...) {
    close_mapping();
    throw;
  }
  fooPointerAttributes attributes;
  FOO_CHECK(fooPointerGetAttributes(&attributes, received->base));
  if (shared.storage_offset_bytes > attributes.allocationSize ||
      shared.storage_size_bytes > attributes.allocationSize - shared.storage_offset_bytes) {
    close_mapping();
    TORCH_CHECK_VALUE(false, "a storage of ", shared.storage_size_bytes, " bytes at offset ",
                      shared.storage_offset_bytes, " does not fit in the shared allocation of ",
                      attributes.allocationSize, " bytes");
  }
  if (shared.event_sync_required) {
    fooIpcEventHandle_t event_handle;
    std::memcpy(event_handle.reserved, shared.event_handle.data(), sizeof event_handle.reserved);
    fooEvent_t event = nullptr;
    fooError_t e = on_device(shared.device, [&] { return fooIpcOpenEventHandle(&event, event_handle); });
    if (e == fooSuccess) {
      e = fooStreamWaitEvent(getCurrentFooStream(shared.device).stream(), event, 0);
      (void)fooEventDestroy(event);
    }
    if (e != fooSuccess) {
      close_mapping();
      FOO_CHECK(e);
    }
  }
  void* data = static_cast<char*>(received->base) + shared.storage_offset_bytes;
  c10::DataPtr data_ptr(data, received.release(), &delete_received, device);
  c10::Storage storage(c10::Storage::use_byte_size_t(), shared.storage_size_bytes, std::move(data_ptr),
                       /*allocator=*/nullptr, /*resizable=*/false);
  storage.unsafeGetStorageImpl()->set_received_cuda(true);  // c10's flag for any device: "received, not sendable"
  return storage;
}

void release_counter(const std::string& ref_counter_handle, size_t ref_counter_offset) {
  TORCH_CHECK_VALUE(ref_counter_offset < kCounterSlots, "ref_counter_offset ", ref_counter_offset,
                    " is past the counter file's ", kCounterSlots, " slots");
  as_atomic(g_counter_files.open(ref_counter_handle)->slot(ref_counter_offset)).fetch_sub(1);
}

bool collect() {
  std::vector<std::unique_ptr<SentData>> done;
  {
    std::lock_guard<std::mutex> lock(limbo_mutex());
    auto& l = limbo();
    for (auto it = l.begin(); it != l.end();) {
      if ((*it)->count() <= 0) {
        done.push_back(std::move(*it));
        it = l.erase(it);
      } else {
        ++it;
      }
    }
  }
  return !done.empty();  // their blocks go back to the allocator here, outside the lock
}

size_t limbo_size() {
  std::lock_guard<std::mutex> lock(limbo_mutex());
  return limbo().size();
}

}  // namespace foo::ipc
