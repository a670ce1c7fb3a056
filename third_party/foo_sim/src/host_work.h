// A host thread that runs queued work while it waits for it, in place of an
// executor (foo_runtime.h, fooSetHostWorkHook; the scheduler decides when).
#pragma once

#include <memory>

#include "error.h"
#include "foo_sim/foo_runtime.h"
#include "graph_capture.h"
#include "profiler.h"
#include "race_detector.h"

namespace foo_sim {

void set_host_work_hook(fooHostWorkHook hook, void* user_data);
// What the embedding lets the calling thread take now (its hook's
// fooHostWorkAsk); called under the scheduler's mutex.
enum class HostWorkScope { Any, Serial };
HostWorkScope host_work_scope();
// Counts functions the calling thread ran in place of an executor.
void count_host_work(size_t functions);

// While entered, the calling thread has an executor's foo_sim state and the
// embedding's hook has begun; leave() (or the destructor) gives the thread
// its own state back. Entered once per wait, however many streams and
// batches the thread then runs. Enter and leave without foo_sim's locks.
class HostWork {
 public:
  HostWork() = default;
  ~HostWork() { leave(); }
  HostWork(const HostWork&) = delete;
  HostWork& operator=(const HostWork&) = delete;

  // False if the embedding's hook declined (the thread is then not entered).
  bool enter();
  void leave();
  bool entered() const { return entered_; }
  // Makes `device` the thread's current device while entered: an executor's
  // is the device it serves.
  void serve_device(int device);

 private:
  bool entered_ = false;
  fooHostWorkHook hook_ = nullptr;  // the one that began, to end
  void* hook_data_ = nullptr;
  bool was_on_executor_ = false;
  int device_ = 0;
  LastError error_;
  fooStreamCaptureMode capture_mode_ = fooStreamCaptureModeGlobal;
  profiler::ThreadLabel label_;
  race::SavedDeclarations race_;
};

}  // namespace foo_sim
