// The order in which one fooccl group's collectives exchange data with
// the peers. gloo pairs a collective with the peers' by the order the
// calls reach it, and fooccl makes those calls from a kernel on each
// device's internal stream, so collectives on two foo devices of a process
// could reach gloo in an order that depends on which device got there
// first, and pair with the wrong peer collectives. NCCL keeps one
// communicator per device, so those never meet; here every collective
// takes a ticket when the host calls it, and its kernel exchanges only
// once the collectives called before it have: the order of the calls,
// the same on every rank.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>

namespace foo::distributed {

class ExchangeOrder {
 public:
  // On the host, as the collective's kernel is launched.
  uint64_t take();
  // In the kernel: waits until every ticket before `ticket` is finished;
  // throws after `timeout`.
  void wait_turn(uint64_t ticket, std::chrono::milliseconds timeout);
  // Once the exchange is over, failed, or was never launched.
  void finish(uint64_t ticket);

 private:
  std::mutex mutex_;
  std::condition_variable turn_;
  uint64_t next_ = 0;
  uint64_t first_unfinished_ = 0;
  std::set<uint64_t> finished_ahead_;  // finished, but an earlier ticket is not
};

// A kernel's turn: waits for it, and finishes the ticket however the
// kernel ends.
class ExchangeTurn {
 public:
  ExchangeTurn(ExchangeOrder& order, uint64_t ticket, std::chrono::milliseconds timeout);
  ~ExchangeTurn();
  ExchangeTurn(const ExchangeTurn&) = delete;
  ExchangeTurn& operator=(const ExchangeTurn&) = delete;

 private:
  ExchangeOrder& order_;
  uint64_t ticket_;
};

}  // namespace foo::distributed
