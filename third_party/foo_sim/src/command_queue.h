// A stream's queue of commands: a ring buffer that grows and never shrinks.
//
// The host pushes and an executor pops, on different threads. A std::deque
// allocates a block every few pushes on the host and frees it on the
// executor; with glibc that sends every such block back to the host
// thread's arena under its lock, and the two threads, taking turns on that
// lock, end up sleeping on it (measured: a chain of small kernels ran at
// about half speed). A ring that keeps its slots allocates only while a
// stream's queue grows past its longest length so far.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace foo_sim {

template <class T>
class RingQueue {
 public:
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }

  T& front() { return slots_[head_]; }
  const T& front() const { return slots_[head_]; }

  void push_back(T value) {
    if (count_ == slots_.size()) grow();
    slots_[(head_ + count_) % slots_.size()] = std::move(value);
    ++count_;
  }

  // Puts back a command taken from the front and not run.
  void push_front(T value) {
    if (count_ == slots_.size()) grow();
    head_ = (head_ + slots_.size() - 1) % slots_.size();
    slots_[head_] = std::move(value);
    ++count_;
  }

  // Resets the slot, so that what the command held (a marker, a replayed
  // graph) is released now, not when the slot is next written.
  void pop_front() {
    slots_[head_] = T();
    head_ = (head_ + 1) % slots_.size();
    --count_;
  }

 private:
  void grow() {
    std::vector<T> bigger(slots_.empty() ? 16 : slots_.size() * 2);
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace foo_sim
