// Tells foo_sim's race detector (foo_sim/foo_race.h) what each operator
// reads and writes, from the operator's schema: arguments annotated as
// written (`Tensor(a!)`: in-place self, out=) are writes, other tensor
// arguments reads; results are fresh allocations, which the caching
// allocator declares as writes of the next launch on their stream. A
// RecordFunction callback sees every operator call, so native, structured,
// fallback and composite kernels are all covered, and is registered only
// while the detector is on (off, the launch path pays nothing).
// torch.compile's kernels, which no operator describes, declare what the
// generated wrapper says each one reads and writes (launch_with_accesses).
//
// For an operator that only runs on the CPU (no foo tensor argument), its
// tensors that live in pinned or foo memory are host accesses: a host write
// to a pinned buffer that an asynchronous copy still reads is a race.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace foo::aten {

// Whether the race detector is on (warn or raise).
bool race_check_on();
// Runs `launch` (which launches one kernel on the calling thread) with
// `tensors` declared as that kernel's accesses: the defined foo ones,
// written where `writes` (same positions) says so, read otherwise. For kernels that no operator schema
// describes (torch.compile's, whose wrapper knows what each one reads and
// writes); as an operator's, a race is raised by the launch (raise mode)
// or warned about after it (warn mode). Just `launch()` while the detector
// is off.
void launch_with_accesses(const std::vector<at::Tensor>& tensors, const std::vector<bool>& writes, const char* op,
                          const std::function<void()>& launch);

// Registers or removes the callback to match foo_sim's mode (call after
// changing it).
void sync_race_hooks();
// Where the user's Python program is ("file.py:12"); "" if unknown. The
// Python module installs it.
using RaceSiteProvider = std::string (*)();
void set_race_site_provider(RaceSiteProvider provider);

}  // namespace foo::aten
