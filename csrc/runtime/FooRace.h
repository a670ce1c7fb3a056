// The torch side of foo_sim's stream race detector (foo_sim/foo_race.h):
// reports told in PyTorch's terms, with the synchronization that fixes
// them, and the error raised in raise mode.
#pragma once

#include <string>

#include <foo_sim/foo_race.h>

namespace foo {

// A report as users read it: both accesses and the fix.
std::string race_message(const fooRaceReport& report);
// The fix alone ("call `...` before line N of file.py").
std::string race_fix(const fooRaceReport& report);

// Raises the race the calling thread's last call failed with
// (fooErrorRaceDetected): torch_foo.RaceError once the Python module
// installed its thrower, a c10::Error otherwise.
[[noreturn]] void throw_race_error(const char* file, int line);
using RaceThrower = void (*)(const std::string& message);
void set_race_thrower(RaceThrower thrower);

}  // namespace foo
