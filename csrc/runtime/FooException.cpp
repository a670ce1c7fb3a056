#include "runtime/FooException.h"

#include <atomic>
#include <string>

#include "runtime/FooInit.h"
#include "runtime/FooRace.h"

namespace foo {
namespace {

std::atomic<LaunchSiteProvider> g_launch_site{nullptr};

// The exception types a kernel's failure keeps, as its message's tag: a
// unit separator, the type's index here, another separator.
enum class Kind : char { Runtime = '0', Index, Value, Type, NotImplemented, LinAlg };
constexpr char kTag = '\x1f';

Kind kind_of(const c10::Error& e) {
  if (dynamic_cast<const c10::IndexError*>(&e)) return Kind::Index;
  if (dynamic_cast<const c10::ValueError*>(&e)) return Kind::Value;
  if (dynamic_cast<const c10::TypeError*>(&e)) return Kind::Type;
  if (dynamic_cast<const c10::NotImplementedError*>(&e)) return Kind::NotImplemented;
  if (dynamic_cast<const c10::LinAlgError*>(&e)) return Kind::LinAlg;
  return Kind::Runtime;
}

// foo_sim's detail of the error, its tag taken off into `kind`.
std::string message_of(fooError_t error, Kind* kind = nullptr) {
  std::string detail = fooGetErrorDetail();
  if (detail.size() >= 3 && detail[0] == kTag && detail[2] == kTag) {
    if (kind) *kind = static_cast<Kind>(detail[1]);
    detail.erase(0, 3);
  }
  return "foo error: " + (detail.empty() ? std::string(fooGetErrorString(error)) : detail) + " (" +
         fooGetErrorName(error) + ")";
}

[[noreturn]] void throw_message(fooError_t error, const std::string& message, const char* file, int line,
                                Kind kind = Kind::Runtime) {
  c10::SourceLocation where{__func__, file, static_cast<uint32_t>(line)};
  if (error == fooErrorMemoryAllocation) throw c10::OutOfMemoryError(where, message);
  switch (kind) {
    case Kind::Index: throw c10::IndexError(where, message);
    case Kind::Value: throw c10::ValueError(where, message);
    case Kind::Type: throw c10::TypeError(where, message);
    case Kind::NotImplemented: throw c10::NotImplementedError(where, message);
    case Kind::LinAlg: throw c10::LinAlgError(where, message);
    case Kind::Runtime: break;
  }
  throw c10::Error(where, message);
}

}  // namespace

void set_launch_site_provider(LaunchSiteProvider provider) { g_launch_site.store(provider); }

std::string typed_kernel_message(const c10::Error& e, const std::string& message) {
  Kind kind = kind_of(e);
  if (kind == Kind::Runtime) return message;
  return std::string{kTag, static_cast<char>(kind), kTag} + message;
}

namespace detail {

void throw_foo_error(fooError_t error, const char* file, int line) {
  if (error == fooErrorInitializationError && in_bad_fork()) throw_bad_fork_error();
  if (error == fooErrorRaceDetected) throw_race_error(file, line);  // torch_foo.RaceError
  Kind kind = Kind::Runtime;
  std::string message = message_of(error, &kind);
  if (error == fooErrorLaunchFailure) {
    // Reported at a synchronization, long after the launch: say how to find it.
    message += ". The kernel ran asynchronously; rerun with FOO_SIM_LAUNCH_BLOCKING=1 to have the error raised by "
               "the call that launched it, naming its file and line";
  }
  throw_message(error, message, file, line, kind);
}

void throw_launch_failure(const char* file, int line) {
  Kind kind = Kind::Runtime;
  std::string message = message_of(fooErrorLaunchFailure, &kind);
  LaunchSiteProvider provider = g_launch_site.load();
  std::string site = provider ? provider() : std::string();
  if (!site.empty()) message += ", launched from " + site;
  throw_message(fooErrorLaunchFailure, message, file, line, kind);
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
