#include "aten/Gate.h"

#include <condition_variable>
#include <mutex>

#include "runtime/FooLaunch.h"
#include "runtime/FooStream.h"

namespace foo::aten {

struct Gate::State {
  std::mutex mutex;
  std::condition_variable opened_cv;
  bool opened = false;
};

Gate::Gate() : state_(std::make_shared<State>()) {
  launch_kernel(getCurrentFooStream(), [state = state_] {
    std::unique_lock<std::mutex> lock(state->mutex);
    state->opened_cv.wait(lock, [&] { return state->opened; });
  }, "foo::_gate");
}

Gate::~Gate() { open(); }

void Gate::open() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->opened = true;
  }
  state_->opened_cv.notify_all();
}

}  // namespace foo::aten
