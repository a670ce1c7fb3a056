// Warnings of a structured operator's meta function, raised once.
//
// foo runs a structured operator's meta function on the host at the call,
// where its warnings reach the caller (indexing with a uint8 mask is
// deprecated), and the kernel then runs CPU's out= function, which runs the
// meta function again before its loops. What the host already raised, the
// kernel drops; a warning only the loops raise still reaches the launching
// thread.
#pragma once

#include <string>
#include <vector>

#include <c10/util/Exception.h>

namespace foo::aten {

// On the host, while the meta function runs: passes warnings on to the
// thread's handler and keeps their messages.
class MetaWarningRecorder final : public c10::WarningHandler {
 public:
  MetaWarningRecorder() : previous_(c10::WarningUtils::get_warning_handler()) {
    c10::WarningUtils::set_warning_handler(this);
  }
  ~MetaWarningRecorder() override { c10::WarningUtils::set_warning_handler(previous_); }
  MetaWarningRecorder(const MetaWarningRecorder&) = delete;
  MetaWarningRecorder& operator=(const MetaWarningRecorder&) = delete;

  void process(const c10::Warning& warning) override {
    messages_.push_back(warning.msg());
    previous_->process(warning);
  }
  // Empty (and allocation-free) when the meta function raised none.
  std::vector<std::string> take() { return std::move(messages_); }

 private:
  c10::WarningHandler* previous_;
  std::vector<std::string> messages_;
};

// In the kernel, while the CPU out= function runs: drops the warnings the
// host raised, passes the others on.
class RepeatedWarningFilter final : public c10::WarningHandler {
 public:
  explicit RepeatedWarningFilter(const std::vector<std::string>& raised)
      : raised_(raised), previous_(c10::WarningUtils::get_warning_handler()) {
    if (!raised_.empty()) c10::WarningUtils::set_warning_handler(this);
  }
  ~RepeatedWarningFilter() override {
    if (!raised_.empty()) c10::WarningUtils::set_warning_handler(previous_);
  }
  RepeatedWarningFilter(const RepeatedWarningFilter&) = delete;
  RepeatedWarningFilter& operator=(const RepeatedWarningFilter&) = delete;

  void process(const c10::Warning& warning) override {
    for (const std::string& m : raised_) {
      if (m == warning.msg()) return;
    }
    previous_->process(warning);
  }

 private:
  const std::vector<std::string>& raised_;
  c10::WarningHandler* previous_;
};

}  // namespace foo::aten
