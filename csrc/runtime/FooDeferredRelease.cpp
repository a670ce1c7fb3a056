#include "runtime/FooDeferredRelease.h"

#include <atomic>

namespace foo::detail {
namespace {

// Executors push one at a time; a launching thread takes the whole list at
// once, so no pop can see a node that was taken and pushed again (no ABA).
std::atomic<FinishedClosure*> g_finished{nullptr};

}  // namespace

void defer_release(FinishedClosure* closure) noexcept {
  closure->next = g_finished.load(std::memory_order_relaxed);
  while (!g_finished.compare_exchange_weak(closure->next, closure, std::memory_order_release,
                                           std::memory_order_relaxed)) {
  }
}

void release_finished_closures() noexcept {
  if (g_finished.load(std::memory_order_relaxed) == nullptr) return;
  FinishedClosure* k = g_finished.exchange(nullptr, std::memory_order_acquire);
  while (k != nullptr) {
    FinishedClosure* next = k->next;
    k->destroy(k);
    k = next;
  }
}

}  // namespace foo::detail
