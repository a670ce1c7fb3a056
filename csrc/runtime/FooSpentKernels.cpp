#include "runtime/FooSpentKernels.h"

#include <atomic>

namespace foo::detail {
namespace {

// Executors push one at a time; a launching thread takes the whole list at
// once, so no pop can see a node that was taken and pushed again (no ABA).
std::atomic<SpentKernel*> g_spent{nullptr};

}  // namespace

void hand_back(SpentKernel* kernel) noexcept {
  kernel->next = g_spent.load(std::memory_order_relaxed);
  while (!g_spent.compare_exchange_weak(kernel->next, kernel, std::memory_order_release,
                                        std::memory_order_relaxed)) {
  }
}

void destroy_spent_kernels() noexcept {
  if (g_spent.load(std::memory_order_relaxed) == nullptr) return;
  SpentKernel* k = g_spent.exchange(nullptr, std::memory_order_acquire);
  while (k != nullptr) {
    SpentKernel* next = k->next;
    k->destroy(k);
    k = next;
  }
}

}  // namespace foo::detail
