// Thread-local "last error" bookkeeping shared by every API entry point.
#pragma once

#include <string>

#include "foo_sim/foo_runtime.h"

namespace foo_sim {

// Records `code` with a message naming what was wrong as the calling
// thread's last error and returns `code`, so entry points can write
// `return fail(fooErrorInvalidValue, "...")`.
fooError_t fail(fooError_t code, std::string detail);

// The calling thread's last error (fooGetLastError, fooGetErrorDetail).
struct LastError {
  fooError_t code = fooSuccess;
  std::string detail;
};
// Makes `next` the calling thread's last error and returns the one it had.
LastError exchange_last_error(LastError next);
// Whether the calling thread has a last error or its detail.
bool has_last_error();

// Formats like printf; only used on error paths.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace foo_sim
