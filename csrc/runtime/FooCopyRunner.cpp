#include "FooCopyRunner.h"

#include <cstdint>

#include <ATen/Parallel.h>
#include <foo_sim/foo_runtime.h>

#include "FooException.h"

namespace foo {
namespace {

// One piece per task, on as many intra-op threads as the calling thread
// (an executor, which takes its kernels' thread count) has.
void run_on_intra_op_threads(size_t pieces, fooCopyPieceFn piece, void* piece_data, void* /*user_data*/) {
  at::parallel_for(0, static_cast<int64_t>(pieces), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) piece(static_cast<size_t>(i), piece_data);
  });
}

}  // namespace

void use_aten_threads_for_copies() { FOO_CHECK(fooSetCopyRunner(&run_on_intra_op_threads, nullptr)); }

}  // namespace foo
