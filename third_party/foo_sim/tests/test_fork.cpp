// Fork: a child forked before the runtime started may use it; a child forked
// after gets a clear initialization error from every call, never a hang.
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "harness.h"

namespace {

// Runs `body` in a forked child with a watchdog; returns its exit status.
template <class F>
int in_child(F body) {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(20);  // a hang becomes a SIGALRM death, not a stuck test
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace

TEST(child_forked_before_start_uses_the_runtime) {
  int count = 0;
  CHECK_OK(fooGetDeviceCount(&count));  // reads configuration only
  CHECK(fooRuntimeIsStarted() == 0);
  int rc = in_child([] {
    int value = 0;
    int* dev = nullptr;
    if (fooMalloc(reinterpret_cast<void**>(&dev), sizeof(int)) != fooSuccess) return 1;
    if (harness::launch(nullptr, [dev] { *dev = 5; }) != fooSuccess) return 2;
    if (fooMemcpy(&value, dev, sizeof(int), fooMemcpyDeviceToHost) != fooSuccess) return 3;
    return value == 5 ? 0 : 4;
  });
  CHECK(rc == 0);
}

TEST(child_forked_after_start_gets_initialization_errors) {
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(harness::launch_sleep(s, 50));  // executors busy while we fork
  int rc = in_child([] {
    void* p = nullptr;
    int n = 0;
    fooStream_t t;
    if (fooMalloc(&p, 16) != fooErrorInitializationError) return 1;
    if (std::strstr(fooGetErrorDetail(), "spawn") == nullptr) return 2;
    if (fooGetDeviceCount(&n) != fooErrorInitializationError) return 3;
    if (fooStreamCreate(&t) != fooErrorInitializationError) return 4;
    if (fooLaunchHostFunc(nullptr, [](void*) {}, nullptr) != fooErrorInitializationError) return 5;
    if (fooStreamSynchronize(nullptr) != fooErrorInitializationError) return 6;
    if (fooDeviceSynchronize() != fooErrorInitializationError) return 7;
    return 0;
  });
  CHECK(rc == 0);
  // The parent is unaffected.
  CHECK_OK(fooStreamSynchronize(s));
  int* dev = nullptr;
  CHECK_OK(fooMalloc(reinterpret_cast<void**>(&dev), sizeof(int)));
  CHECK_OK(harness::launch(s, [dev] { *dev = 8; }));
  int value = 0;
  CHECK_OK(fooStreamSynchronize(s));
  CHECK_OK(fooMemcpy(&value, dev, sizeof(int), fooMemcpyDeviceToHost));
  CHECK(value == 8);
  CHECK_OK(fooFree(dev));
  CHECK_OK(fooStreamDestroy(s));
}
