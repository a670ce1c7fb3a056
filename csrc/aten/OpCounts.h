// What operators did that a library author wants to know of before running
// on a GPU: which ran through the CPU fallback and which made the host wait
// for the device (as CUDA's synchronizing operations do), counted per
// operator since the last take_op_counts() (pytest --foo counts per test).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace foo::aten {

// A call of `op` ("aten::nonzero") through the CPU fallback.
void count_fallback_call(const std::string& op);
// A call of `op` that made the host wait for the device (every `.item()`:
// it takes no copy of the name unless the operator is new to the counts).
void note_synchronizing(std::string_view op);

// The operators that made the host wait, since the process started, sorted.
std::vector<std::string> synchronizing_ops();

struct OpCounts {
  std::map<std::string, int64_t, std::less<>> fallback;
  std::map<std::string, int64_t, std::less<>> synchronizing;
};

// The counts since the previous call (or the process's start); starts over.
OpCounts take_op_counts();

}  // namespace foo::aten
