#include "ipc_segment.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <string>

#include "error.h"

namespace foo_sim::ipc {
namespace {

constexpr uint32_t kMagic = 0x43504946;  // "FIPC"

uint64_t process_token() {
  static const uint64_t token = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
  }();
  return token;
}

std::string file_name(uint64_t token, uint64_t serial) {
  return format("foo_sim.%016llx.%llu", static_cast<unsigned long long>(token),
                static_cast<unsigned long long>(serial));
}

uint64_t checksum(const WireHandle& h) {
  // FNV-1a over the fields before `check`: garbage bytes fail it.
  uint64_t sum = 1469598103934665603ull;
  auto* p = reinterpret_cast<const unsigned char*>(&h);
  for (size_t i = 0; i < offsetof(WireHandle, check); ++i) sum = (sum ^ p[i]) * 1099511628211ull;
  return sum;
}

}  // namespace

bool create_segment(size_t size, void** base, SegmentName* name) {
  static std::atomic<uint64_t> next_serial{1};
  uint64_t serial = next_serial.fetch_add(1);
  int fd = memfd_create(file_name(process_token(), serial).c_str(), MFD_CLOEXEC);
  if (fd < 0) return false;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    int err = errno;
    close(fd);
    errno = err;
    return false;
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    close(fd);
    errno = err;
    return false;
  }
  *base = p;
  *name = SegmentName{static_cast<int32_t>(getpid()), fd, process_token(), serial};
  return true;
}

void destroy_segment(void* base, size_t size, int fd) {
  munmap(base, size);
  close(fd);
}

void encode(const SegmentName& name, HandleKind kind, size_t size, char out[FOO_IPC_HANDLE_SIZE]) {
  WireHandle h{};
  h.magic = kMagic;
  h.kind = static_cast<uint32_t>(kind);
  h.name = name;
  h.size = size;
  h.check = checksum(h);
  std::memset(out, 0, FOO_IPC_HANDLE_SIZE);
  std::memcpy(out, &h, sizeof h);
}

fooError_t open_handle(const char in[FOO_IPC_HANDLE_SIZE], HandleKind kind, const char* what, WireHandle* decoded,
                       void** base, int* fd) {
  WireHandle h;
  std::memcpy(&h, in, sizeof h);
  const char* kind_name = kind == HandleKind::Memory ? "memory" : "event";
  if (h.magic != kMagic || h.check != checksum(h) || h.kind != static_cast<uint32_t>(kind) || h.size == 0) {
    return fail(fooErrorInvalidResourceHandle, format("%s: the bytes given are not a foo_sim %s handle", what, kind_name));
  }
  if (h.name.pid == getpid() && h.name.token == process_token()) {
    return fail(fooErrorDeviceUninitialized,
                format("%s: the handle was made by this process; a process opens only other processes' handles", what));
  }
  std::string path = format("/proc/%d/fd/%d", h.name.pid, h.name.fd);
  // The descriptor must still name the file the handle was made for: the
  // process may have freed it and reused the number, or be another process.
  char link[256];
  ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
  std::string expected = "/memfd:" + file_name(h.name.token, h.name.serial) + " (deleted)";
  int opened = -1;
  if (n >= 0 && std::string(link, static_cast<size_t>(n)) == expected) opened = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (opened < 0) {
    int err = errno;
    if (kill(h.name.pid, 0) != 0 && errno == ESRCH) {
      return fail(fooErrorInvalidResourceHandle,
                  format("%s: the process that made the handle (pid %d) has exited", what, h.name.pid));
    }
    if (n >= 0 || err == ENOENT) {
      return fail(fooErrorInvalidResourceHandle,
                  format("%s: the process that made the handle (pid %d) no longer has the %s (freed, or the pid is "
                         "another process's now)", what, h.name.pid, kind_name));
    }
    return fail(fooErrorInvalidResourceHandle,
                format("%s: cannot open the %s of process %d: %s", what, kind_name, h.name.pid, std::strerror(err)));
  }
  struct stat st;
  if (fstat(opened, &st) != 0 || static_cast<uint64_t>(st.st_size) != h.size) {
    close(opened);
    return fail(fooErrorInvalidResourceHandle, format("%s: the %s's size does not match the handle's", what, kind_name));
  }
  void* p = mmap(nullptr, h.size, PROT_READ | PROT_WRITE, MAP_SHARED, opened, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    close(opened);
    return fail(fooErrorMemoryAllocation, format("%s: cannot map %llu bytes: %s", what,
                                                 static_cast<unsigned long long>(h.size), std::strerror(err)));
  }
  *decoded = h;
  *base = p;
  *fd = opened;
  return fooSuccess;
}

}  // namespace foo_sim::ipc
