#include "distributed/ExchangeOrder.h"

#include <c10/util/Exception.h>

namespace foo::distributed {

uint64_t ExchangeOrder::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_++;
}

void ExchangeOrder::wait_turn(uint64_t ticket, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  bool ready = turn_.wait_for(lock, timeout, [&] { return first_unfinished_ == ticket; });
  TORCH_CHECK(ready, "timed out after ", timeout.count(),
              " ms waiting for the group's collectives called before it on another foo device");
}

void ExchangeOrder::finish(uint64_t ticket) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ticket != first_unfinished_) {
      finished_ahead_.insert(ticket);
      return;
    }
    ++first_unfinished_;
    while (!finished_ahead_.empty() && *finished_ahead_.begin() == first_unfinished_) {
      finished_ahead_.erase(finished_ahead_.begin());
      ++first_unfinished_;
    }
  }
  turn_.notify_all();
}

ExchangeTurn::ExchangeTurn(ExchangeOrder& order, uint64_t ticket, std::chrono::milliseconds timeout)
    : order_(order), ticket_(ticket) {
  try {
    order_.wait_turn(ticket_, timeout);
  } catch (...) {
    order_.finish(ticket_);
    throw;
  }
}

ExchangeTurn::~ExchangeTurn() { order_.finish(ticket_); }

}  // namespace foo::distributed
