// Graph capture and replay on foo: at::GraphImplInterface over foo_sim's
// stream capture (foo_graph.h), registered for torch.accelerator.Graph, in
// the shape of ATen/xpu/XPUGraph.h.
//
// capture_begin captures on the current stream of the current device, which
// must not be its default stream (as on CUDA). What the capture allocates
// comes from the graph's private memory pool (its own, or one shared with
// other graphs), which stays reserved while a graph uses it, so every replay
// finds its tensors at the same addresses; once no graph uses it, its free
// memory goes back at the next empty_cache, as CUDA's does. Random
// kernels read the device's default generator state at run time (see
// FooGenerator.h), so each replay draws fresh numbers.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include <ATen/core/Generator.h>
#include <ATen/core/GraphImplInterface.h>
#include <foo_sim/foo_graph.h>

#include "aten_runtime/FooGenerator.h"
#include "runtime/FooGraphWarnings.h"
#include "runtime/FooStream.h"

namespace foo {

class FooGraphImpl final : public at::GraphImplInterface {
 public:
  explicit FooGraphImpl(const at::GraphImplArgs& args = {});
  ~FooGraphImpl() override;
  FooGraphImpl(const FooGraphImpl&) = delete;
  FooGraphImpl& operator=(const FooGraphImpl&) = delete;

  void capture_begin(c10::MempoolId_t pool = {0, 0},
                     at::GraphCaptureMode capture_mode = at::GraphCaptureMode::Default) override;
  void capture_end() override;
  void instantiate() override;
  void replay() override;
  void reset() override;
  c10::MempoolId_t pool() const override;
  void enable_debug_mode() override;
  void debug_dump(const std::string& path) override;

 private:
  // Ends foo_sim's capture and drops its graph, for a capture that will
  // not complete (an error in capture_begin, or destruction mid-capture).
  void abandon_capture() noexcept;
  // Undoes what capture_begin set up around foo_sim's capture.
  void end_capture_bookkeeping() noexcept;
  void release_memory_pool() noexcept;

  const bool keep_graph_;
  bool debug_ = false;
  bool capturing_ = false;
  bool has_graph_ = false;      // a capture ended successfully and reset() was not called since
  fooGraph_t graph_ = nullptr;  // kept after capture_end only with keep_graph or debug mode
  fooGraphExec_t exec_ = nullptr;
  c10::DeviceIndex device_ = -1;
  std::optional<FooStream> capture_stream_;
  unsigned long long capture_id_ = 0;
  c10::MempoolId_t pool_{0, 0};
  bool holds_pool_ = false;  // one use of pool_ (device and host) is ours
  at::Generator generator_;  // the device's default generator, while it draws for this graph
  std::shared_ptr<GraphRngSlot> rng_;
  // Where the captured kernels warn (FooGraphWarnings.h), made at the first
  // capture; and the thread inbox the last replay queued it to point at.
  KernelWarningInbox* warnings_ = nullptr;
  std::atomic<KernelWarningInbox*> warnings_replayer_{nullptr};
};

}  // namespace foo
