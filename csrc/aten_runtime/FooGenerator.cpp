#include "aten_runtime/FooGenerator.h"

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/DistributionsHelper.h>
#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>

#include "aten_runtime/Philox.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooGraphsUtils.h"
#include "runtime/FooLaunch.h"

namespace foo {
namespace {

constexpr size_t kStateBytes = 2 * sizeof(uint64_t);

// The 64 bits of Philox4x32-10 at counter `offset` under key `seed`.
uint64_t philox_bits(uint64_t seed, uint64_t offset) {
  auto out = philox4x32_10({static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32), 0, 0},
                           {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  return (static_cast<uint64_t>(out[1]) << 32) | out[0];
}

}  // namespace

FooGeneratorImpl::FooGeneratorImpl(c10::DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(seed) {}

bool FooGeneratorImpl::its_stream_is_capturing() const {
  return captures_underway() != 0 && is_capturing(getCurrentFooStream(device().index()));
}

void FooGeneratorImpl::set_current_seed(uint64_t seed) {
  // A graph's random operators draw from the seed the replay finds; a new
  // seed now would reseed eager work only. CUDA allows the same seed.
  if (its_stream_is_capturing()) {
    TORCH_CHECK(seed == seed_, "The foo generator of device ", static_cast<int>(device().index()),
                " may be seeded during a graph capture only with the seed it has (", seed_, "), not ", seed,
                "; seed it before the capture or between replays");
    return;
  }
  seed_ = seed;
  offset_ = 0;
}

uint64_t FooGeneratorImpl::current_seed() const { return seed_; }

uint64_t FooGeneratorImpl::seed() {
  // A non-deterministic seed, as torch.cuda.seed() takes one.
  uint64_t s = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  set_current_seed(s);
  return s;
}

void FooGeneratorImpl::set_offset(uint64_t offset) {
  TORCH_CHECK(!its_stream_is_capturing(), "The offset of the foo generator of device ",
              static_cast<int>(device().index()), " cannot be set during a graph capture");
  offset_ = offset;
}

uint64_t FooGeneratorImpl::get_offset() const { return offset_; }

void FooGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK(new_state.device().is_cpu() && new_state.dtype() == c10::kByte,
              "RNG state must be a torch.ByteTensor on the CPU");
  TORCH_CHECK(static_cast<size_t>(new_state.numel()) == kStateBytes, "RNG state is wrong size: expected ",
              kStateBytes, " bytes, got ", new_state.numel());
  TORCH_CHECK(!its_stream_is_capturing(), "The state of the foo generator of device ",
              static_cast<int>(device().index()), " cannot be set during a graph capture; set it before the "
              "capture or between replays");
  uint64_t values[2];
  std::memcpy(values, new_state.data(), kStateBytes);
  seed_ = values[0];
  offset_ = values[1];
}

c10::intrusive_ptr<c10::TensorImpl> FooGeneratorImpl::get_state() const {
  at::Tensor state = at::empty({static_cast<int64_t>(kStateBytes)}, at::TensorOptions().dtype(c10::kByte));
  uint64_t values[2] = {seed_, offset_};
  std::memcpy(state.data_ptr(), values, kStateBytes);
  return state.getIntrusivePtr();
}

at::Generator PhiloxFooState::generator() const {
  if (!slot_) return eager_;
  // Written by the replay's prologue, in stream order before this kernel.
  const auto* state = static_cast<const uint64_t*>(slot_->seed_and_offset.const_data_ptr());
  return at::make_generator<at::CPUGeneratorImpl>(philox_bits(state[0], state[1] + offset_in_graph_));
}

PhiloxFooState FooGeneratorImpl::philox_foo_state() {
  if (captures_underway() != 0) {
    unsigned long long id = capture_id(getCurrentFooStream(device().index()));
    if (id != 0) {
      auto it = captures_.find(id);
      TORCH_CHECK(it != captures_.end(),
                  "A random operator on a capturing foo stream used a generator that the graph does not know: "
                  "graphs draw from the default generator of their device only");
      return PhiloxFooState(it->second.slot, it->second.offset++);
    }
  }
  uint64_t stream_seed = philox_bits(seed_, offset_);
  ++offset_;
  return PhiloxFooState(at::make_generator<at::CPUGeneratorImpl>(stream_seed));
}

void FooGeneratorImpl::capture_prologue(std::shared_ptr<GraphRngSlot> slot, unsigned long long capture_id) {
  TORCH_CHECK(captures_.count(capture_id) == 0, "The foo generator of device ", static_cast<int>(device().index()),
              " already serves capture ", capture_id);
  captures_[capture_id] = Capture{std::move(slot), 0};
}

void FooGeneratorImpl::capture_epilogue(unsigned long long capture_id) {
  auto it = captures_.find(capture_id);
  if (it == captures_.end()) return;
  it->second.slot->increment = it->second.offset;
  captures_.erase(it);
}

void FooGeneratorImpl::replay_prologue(const GraphRngSlot& slot) {
  if (slot.increment == 0) return;  // the graph draws no random numbers
  uint64_t values[2] = {seed_, offset_};
  offset_ += slot.increment;
  // A queued write, ordered before the replay on the current stream, as
  // CUDA fills its seed and offset tensors.
  launch_kernel(getCurrentFooStream(device().index()),
                [dst = static_cast<uint64_t*>(slot.seed_and_offset.data_ptr()), seed = values[0], offset = values[1]] {
                  dst[0] = seed;
                  dst[1] = offset;
                },
                "foo::graph_rng_prologue");
}

FooGeneratorImpl* FooGeneratorImpl::clone_impl() const {
  auto* copy = new FooGeneratorImpl(device().index(), seed_);
  copy->offset_ = offset_;
  return copy;
}

const at::Generator& default_generator(c10::DeviceIndex device) {
  static const std::vector<at::Generator> generators = [] {
    std::vector<at::Generator> v;
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) v.push_back(make_generator(d));
    return v;
  }();
  if (device == -1) device = current_device();  // other negative indices are refused below
  check_device_index(device);
  return generators[device];
}

at::Generator make_generator(c10::DeviceIndex device) {
  if (device == -1) device = current_device();  // other negative indices are refused below
  check_device_index(device);
  return at::make_generator<FooGeneratorImpl>(device);
}

}  // namespace foo
