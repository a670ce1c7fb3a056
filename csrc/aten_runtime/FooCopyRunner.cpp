#include "aten_runtime/FooCopyRunner.h"

#include <cstdint>

#include <ATen/Parallel.h>
#include <foo_sim/foo_runtime.h>

#include "runtime/FooException.h"

namespace foo {
namespace {

// The pieces on the OpenMP team of the calling thread (an executor), one
// thread per piece: ATen's intra-op pool, as CPU PyTorch's copy_ uses.
void run_on_intra_op_threads(size_t pieces, fooCopyPieceFn piece, void* piece_data, void* /*user_data*/) {
  const auto n = static_cast<int64_t>(pieces);
#pragma omp parallel for num_threads(static_cast<int>(n)) schedule(static, 1)
  for (int64_t i = 0; i < n; ++i) piece(static_cast<size_t>(i), piece_data);
}

// A copy is cut into as many pieces as the thread that issues it has
// intra-op threads, as its copy_ between CPU tensors would be.
int issuing_thread_width(void* /*user_data*/) { return at::get_num_threads(); }

}  // namespace

void use_aten_threads_for_copies() {
  FOO_CHECK(fooSetCopyRunner(&run_on_intra_op_threads, &issuing_thread_width, nullptr));
}

}  // namespace foo
