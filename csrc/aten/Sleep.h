// A kernel that keeps the current stream busy, like torch.cuda._sleep: the
// way tests make "the stream is still running when the host goes on" certain.
#pragma once

#include <string>

namespace foo::aten {

// Queues a kernel that sleeps `ms` milliseconds on the current foo stream.
void sleep(double ms);

// Queues a kernel that raises `message` as a warning when it runs, as a CPU
// kernel warns from inside its loop: how tests show where such a warning goes.
void warn_in_kernel(const std::string& message);

}  // namespace foo::aten
