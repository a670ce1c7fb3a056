#include "FooException.h"

#include <string>

#include "FooInit.h"

namespace foo::detail {

void throw_foo_error(fooError_t error, const char* file, int line) {
  if (error == fooErrorInitializationError && in_bad_fork()) throw_bad_fork_error();
  std::string detail = fooGetErrorDetail();
  std::string message = "foo error: " + (detail.empty() ? std::string(fooGetErrorString(error)) : detail) + " (" +
                        fooGetErrorName(error) + ")";
  if (error == fooErrorMemoryAllocation) {
    throw c10::OutOfMemoryError(c10::SourceLocation{__func__, file, static_cast<uint32_t>(line)}, message);
  }
  throw c10::Error(c10::SourceLocation{__func__, file, static_cast<uint32_t>(line)}, message);
}

}  // namespace foo::detail
