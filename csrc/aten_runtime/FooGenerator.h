// Random numbers on foo, modeled on CUDA's Philox generators: the state is
// (seed, offset) on the host. Each random kernel draws from its own CPU
// generator (ATen's CPU kernels need one), seeded when the kernel is
// launched with Philox4x32-10 of counter `offset` under key `seed`, and the
// offset advances by one then. So numbers depend only on the seed and the order of
// launches, not on when kernels run, and get_state/set_state capture
// exactly what the next kernels will produce.
//
// Graphs (FooGraph.cpp): a kernel captured in a graph runs on every replay,
// so it cannot take its numbers from the launch. As on CUDA, it reads the
// seed and a base offset from foo memory when it runs, adding the offset it
// was given at capture; each replay first writes the generator's current
// (seed, offset) there, in stream order, and advances the offset by what
// one replay consumes. A replay thus draws exactly what eager launches of
// the same kernels would have drawn at that point.
#pragma once

#include <memory>
#include <unordered_map>
#include <mutex>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/GeneratorImpl.h>

namespace foo {

// One generator's state for one graph: where replays put (seed, offset),
// and how many offsets a replay consumes.
struct GraphRngSlot {
  at::Tensor seed_and_offset;  // 2 x int64 on the graph's device
  uint64_t increment = 0;
};

// The random stream of one kernel launch, as the kernel carries it (CUDA's
// PhiloxCudaState): the eager launch's generator, or for a captured launch
// the graph's slot and the offset within one replay.
class PhiloxFooState {
 public:
  PhiloxFooState() = default;
  explicit PhiloxFooState(at::Generator eager) : eager_(std::move(eager)) {}
  PhiloxFooState(std::shared_ptr<const GraphRngSlot> slot, uint64_t offset_in_graph)
      : slot_(std::move(slot)), offset_in_graph_(offset_in_graph) {}

  // The CPU generator the kernel draws from. Inside a kernel for a
  // captured launch, a fresh one on every run.
  at::Generator generator() const;

 private:
  at::Generator eager_;
  std::shared_ptr<const GraphRngSlot> slot_;  // kept alive by every captured kernel
  uint64_t offset_in_graph_ = 0;
};

class FooGeneratorImpl final : public c10::GeneratorImpl {
 public:
  explicit FooGeneratorImpl(c10::DeviceIndex device, uint64_t seed = c10::default_rng_seed_val);

  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  // 16 bytes: seed, then offset (little-endian uint64).
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  // The random stream for one kernel launch, as CUDA's philox_cuda_state:
  // advances the offset (or, while a graph captures on the calling thread's
  // current stream, the graph's offset). Called with mutex_ held.
  PhiloxFooState philox_foo_state();

  // Graph capture, with mutex_ held. capture_prologue: launches on streams
  // in capture `capture_id` now draw from `slot`. capture_epilogue: ends
  // that and records in the slot what one replay consumes. Several
  // captures may be under way at once (on different streams, as CUDA
  // allows), each with its own slot.
  // replay_prologue: writes (seed, offset) into the slot on the current
  // stream and advances the offset as eager launches would.
  void capture_prologue(std::shared_ptr<GraphRngSlot> slot, unsigned long long capture_id);
  void capture_epilogue(unsigned long long capture_id);
  void replay_prologue(const GraphRngSlot& slot);

  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  FooGeneratorImpl* clone_impl() const override;
  // Whether the current stream of the generator's device is capturing: its
  // seed, offset and state are then fixed, as CUDA's are.
  bool its_stream_is_capturing() const;

  uint64_t seed_;
  uint64_t offset_ = 0;
  // The captures under way, by capture id: the graph's slot, and the
  // offsets handed out in the capture so far.
  struct Capture {
    std::shared_ptr<GraphRngSlot> slot;
    uint64_t offset = 0;
  };
  std::unordered_map<unsigned long long, Capture> captures_;
};

const at::Generator& default_generator(c10::DeviceIndex device);
at::Generator make_generator(c10::DeviceIndex device);

}  // namespace foo
