// A kernel that holds the current stream until the host opens its gate: the
// way tests show that a call returned without waiting for the device, with
// no timing involved (the stream cannot finish before the test lets it).
#pragma once

#include <memory>

namespace foo::aten {

class Gate {
 public:
  // Queues the gate's kernel on the current foo stream.
  Gate();
  // Opens the gate if the test did not: a failed test must not leave an
  // executor waiting forever.
  ~Gate();
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // Lets the kernel finish (and the work queued after it run).
  void open();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace foo::aten
