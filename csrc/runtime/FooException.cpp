#include "runtime/FooException.h"

#include <atomic>
#include <string>

#include "runtime/FooInit.h"
#include "runtime/FooRace.h"

namespace foo {
namespace {

std::atomic<LaunchSiteProvider> g_launch_site{nullptr};

std::string message_of(fooError_t error) {
  std::string detail = fooGetErrorDetail();
  return "foo error: " + (detail.empty() ? std::string(fooGetErrorString(error)) : detail) + " (" +
         fooGetErrorName(error) + ")";
}

[[noreturn]] void throw_message(fooError_t error, const std::string& message, const char* file, int line) {
  c10::SourceLocation where{__func__, file, static_cast<uint32_t>(line)};
  if (error == fooErrorMemoryAllocation) throw c10::OutOfMemoryError(where, message);
  throw c10::Error(where, message);
}

}  // namespace

void set_launch_site_provider(LaunchSiteProvider provider) { g_launch_site.store(provider); }

namespace detail {

void throw_foo_error(fooError_t error, const char* file, int line) {
  if (error == fooErrorInitializationError && in_bad_fork()) throw_bad_fork_error();
  if (error == fooErrorRaceDetected) throw_race_error(file, line);  // torch_foo.RaceError
  std::string message = message_of(error);
  if (error == fooErrorLaunchFailure) {
    // Reported at a synchronization, long after the launch: say how to find it.
    message += ". The kernel ran asynchronously; rerun with FOO_SIM_LAUNCH_BLOCKING=1 to have the error raised by "
               "the call that launched it, naming its file and line";
  }
  throw_message(error, message, file, line);
}

void throw_launch_failure(const char* file, int line) {
  std::string message = message_of(fooErrorLaunchFailure);
  LaunchSiteProvider provider = g_launch_site.load();
  std::string site = provider ? provider() : std::string();
  if (!site.empty()) message += ", launched from " + site;
  throw_message(fooErrorLaunchFailure, message, file, line);
}

}  // namespace detail


bool query_result(fooError_t e) {
  if (e == fooErrorNotReady) {
    (void)fooGetLastError();
    return false;
  }
  FOO_CHECK(e);
  return true;
}

}  // namespace foo
