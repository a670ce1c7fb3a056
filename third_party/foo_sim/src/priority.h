// Stream priorities follow CUDA: a lower number is a higher priority.
#pragma once

namespace foo_sim {

constexpr int kLeastStreamPriority = 0;
constexpr int kGreatestStreamPriority = -3;

}  // namespace foo_sim
