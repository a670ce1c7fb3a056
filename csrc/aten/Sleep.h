// A kernel that keeps the current stream busy, like torch.cuda._sleep: the
// way tests make "the stream is still running when the host goes on" certain.
#pragma once

namespace foo::aten {

// Queues a kernel that sleeps `ms` milliseconds on the current foo stream.
void sleep(double ms);

}  // namespace foo::aten
