// The ATen-level runtime's part of starting foo (FooInit.h's ATen init
// step), registered when the library loads.
#include "aten_runtime/FooCopyRunner.h"
#include "aten_runtime/FooHostWork.h"
#include "runtime/FooInit.h"

namespace foo {
namespace {

void start_aten_runtime() {
  use_aten_threads_for_copies();
  // Before any kernel is queued: a host may run queued work from its first wait.
  run_host_work_in_executor_state();
}

const bool g_registered = [] {
  set_aten_init_step(&start_aten_runtime);
  return true;
}();

}  // namespace
}  // namespace foo
