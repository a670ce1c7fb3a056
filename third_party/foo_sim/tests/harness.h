// A minimal test harness: TEST(name) cases, CHECK macros, and a main()
// (harness.cpp) that runs every case, or those named on the command line,
// and ends with an "N passed, M failed" line.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "foo_sim/foo_runtime.h"

namespace harness {

struct Case {
  const char* name;
  void (*fn)();
};
std::vector<Case>& registry();
struct Registrar {
  Registrar(const char* name, void (*fn)()) { registry().push_back({name, fn}); }
};
[[noreturn]] void fail_case(const char* file, int line, const std::string& what);

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Launches a C++ callable as a kernel.
inline fooError_t launch(fooStream_t stream, std::function<void()> fn) {
  auto* box = new std::function<void()>(std::move(fn));
  fooError_t e = fooLaunchHostFunc(
      stream,
      [](void* p) {
        std::unique_ptr<std::function<void()>> f(static_cast<std::function<void()>*>(p));
        (*f)();
      },
      box);
  if (e != fooSuccess && e != fooErrorLaunchFailure) delete box;
  return e;
}

inline fooError_t launch_sleep(fooStream_t stream, int ms) {
  return launch(stream, [ms] { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); });
}

// Waits for the stream's queued work by polling it, without synchronizing:
// a synchronizing host runs queued work itself when an executor would be
// free to (foo_runtime.h, fooSetHostWorkHook), and this leaves it to an
// executor. Returns the stream's last query result.
inline fooError_t wait_by_polling(fooStream_t stream) {
  fooError_t e;
  while ((e = fooStreamQuery(stream)) == fooErrorNotReady) std::this_thread::yield();
  return e;
}

size_t thread_count();

}  // namespace harness

#define TEST(name)                                                  \
  static void name();                                               \
  static harness::Registrar registrar_##name(#name, &name);         \
  static void name()

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) harness::fail_case(__FILE__, __LINE__, "CHECK(" #cond ")"); \
  } while (0)

#define CHECK_OK(expr)                                                                          \
  do {                                                                                          \
    fooError_t e_ = (expr);                                                                     \
    if (e_ != fooSuccess)                                                                       \
      harness::fail_case(__FILE__, __LINE__,                                                    \
                         std::string(#expr " returned ") + fooGetErrorName(e_) + ": " + fooGetErrorDetail()); \
  } while (0)

#define CHECK_ERR(expr, code)                                                                       \
  do {                                                                                              \
    fooError_t e_ = (expr);                                                                         \
    if (e_ != (code))                                                                               \
      harness::fail_case(__FILE__, __LINE__,                                                        \
                         std::string(#expr " returned ") + fooGetErrorName(e_) + ", expected " #code); \
  } while (0)

#define CHECK_DETAIL_HAS(text)                                                                      \
  do {                                                                                              \
    std::string d_ = fooGetErrorDetail();                                                           \
    if (d_.find(text) == std::string::npos)                                                         \
      harness::fail_case(__FILE__, __LINE__, "error detail '" + d_ + "' does not mention '" + (text) + "'"); \
  } while (0)
