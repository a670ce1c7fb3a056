// Random numbers on foo, modeled on CUDA's Philox generators: the state is
// (seed, offset) on the host. Each random kernel draws from its own CPU
// generator (ATen's CPU kernels need one), seeded when the kernel is
// launched with Philox4x32-10 of counter `offset` under key `seed`, and the
// offset advances by one then. So numbers depend only on the seed and the order of
// launches, not on when kernels run, and get_state/set_state capture
// exactly what the next kernels will produce.
#pragma once

#include <mutex>

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace foo {

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

  // A CPU generator for one kernel launch; advances the offset.
  at::Generator next_kernel_generator();

  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  FooGeneratorImpl* clone_impl() const override;

  uint64_t seed_;
  uint64_t offset_ = 0;
};

const at::Generator& default_generator(c10::DeviceIndex device);
at::Generator make_generator(c10::DeviceIndex device);

}  // namespace foo
