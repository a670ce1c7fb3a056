#include "distributed/FooWork.h"

#include <thread>

#include <ATen/core/jit_type.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/DeviceGuard.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "runtime/FooException.h"

namespace foo::distributed {
namespace {

// The failed collective's message (gloo's error, prefixed by fooccl and the
// operation) as the DistBackendError torch.distributed users catch.
std::exception_ptr failure(const char* detail) {
  return std::make_exception_ptr(
      c10::DistBackendError(c10::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, detail));
}

}  // namespace

FooWork::FooWork(int rank, c10d::OpType type, const char* title, c10::Device device, std::vector<at::Tensor> outputs,
                 bool host_blocking, std::vector<FailureSlot> failures)
    : c10d::Work(rank, type, title),
      device_(device),
      outputs_(std::move(outputs)),
      host_blocking_(host_blocking),
      failures_(std::move(failures)) {
  c10::DeviceGuard guard(device_);
  // Timing is not needed; failures are reported through this event, since
  // it is how the user learns that the collective failed.
  FOO_CHECK(fooEventCreateWithFlags(&end_, fooEventDisableTiming));
  future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                      std::vector<c10::Device>{device_});
}

FooWork::~FooWork() {
  if (end_ != nullptr) fooEventDestroy(end_);
}

void FooWork::record_end(const FooStream& internal) {
  FOO_CHECK(fooEventRecord(end_, internal.stream()));
  // The future records its own events on the current stream: make that
  // the internal stream, so that its users wait for the collective, not
  // for the caller's stream.
  c10::StreamGuard guard(internal.unwrap());
  future_->markCompleted(c10::IValue(outputs_));
}

bool FooWork::poll_locked() {
  if (done_) return true;
  fooError_t e = fooEventQuery(end_);
  if (e == fooErrorNotReady) return false;
  finish_locked(e);
  return true;
}

void FooWork::finish_locked(fooError_t e) {
  if (e != fooErrorLaunchFailure) FOO_CHECK(e);
  done_ = true;
  if (e == fooErrorLaunchFailure) {
    error_ = failure(fooGetErrorDetail());
  } else {
    // The stream's error went to an earlier synchronization.
    for (const FailureSlot& slot : failures_) {
      if (slot && !slot->empty()) {
        error_ = failure(slot->c_str());
        break;
      }
    }
  }
}

bool FooWork::isCompleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return poll_locked();
}

bool FooWork::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_ && !error_;
}

std::exception_ptr FooWork::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void FooWork::synchronize() {
  FooStream current = getCurrentFooStream(device_.index());
  FOO_CHECK(fooStreamWaitEvent(current.stream(), end_, 0));
}

void FooWork::block_host(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout == kNoTimeout) {
    lock.unlock();
    fooError_t e = fooEventSynchronize(end_);
    lock.lock();
    if (!done_) finish_locked(e);
    return;
  }
  while (!poll_locked()) {
    lock.unlock();
    TORCH_CHECK_WITH(DistBackendError, std::chrono::steady_clock::now() < deadline,
                     "fooccl: the collective did not complete within the wait timeout of ", timeout.count(), " ms");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    lock.lock();
  }
}

bool FooWork::wait(std::chrono::milliseconds timeout) {
  if (host_blocking_ || timeout != kNoTimeout) block_host(timeout);
  {
    // As NCCL's: a collective already known to have failed raises here.
    std::lock_guard<std::mutex> lock(mutex_);
    poll_locked();
    if (error_) std::rethrow_exception(error_);
  }
  synchronize();
  return true;
}

std::vector<at::Tensor> FooWork::result() { return outputs_; }

c10::intrusive_ptr<c10::ivalue::Future> FooWork::getFuture() { return future_; }

}  // namespace foo::distributed
