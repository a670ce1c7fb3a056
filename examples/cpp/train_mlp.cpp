// A libtorch program on foo: a few SGD steps of a small MLP on foo:0 and the
// same steps on the CPU from the same start, then the comparison. The foo
// model trains on a stream taken through the device guard, ordered against
// the default stream with events, as a CUDA program would do it.
//
// Exit status 0 when every loss and every final parameter of foo matches
// the CPU's (float32, within 1e-5 relative), 1 otherwise.
#include <cmath>
#include <cstdio>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <runtime/FooStream.h>

namespace {

constexpr int kSteps = 5;
constexpr double kTolerance = 1e-5;

torch::nn::Sequential make_mlp() {
  return torch::nn::Sequential(torch::nn::Linear(16, 32), torch::nn::ReLU(), torch::nn::Linear(32, 4));
}

// One step of plain SGD; returns the loss, left on the model's device.
torch::Tensor train_step(torch::nn::Sequential& model, torch::optim::SGD& sgd, const torch::Tensor& x,
                         const torch::Tensor& y) {
  sgd.zero_grad();
  torch::Tensor loss = torch::mse_loss(model->forward(x), y);
  loss.backward();
  sgd.step();
  return loss.detach();
}

int64_t allocated_bytes(c10::DeviceIndex device) {
  auto stats = c10::getDeviceAllocator(c10::kPrivateUse1)->getDeviceStats(device);
  return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].current;
}

}  // namespace

int main() {
  // "foo" parses because loading libtorch_foo registered the name.
  const c10::Device foo_device("foo:0");
  c10::impl::VirtualGuardImpl guard(c10::DeviceType::PrivateUse1);
  std::printf("training on %s (%d foo devices)\n", foo_device.str().c_str(), static_cast<int>(guard.deviceCount()));

  torch::manual_seed(0);
  torch::nn::Sequential cpu_model = make_mlp();
  torch::nn::Sequential foo_model =
      std::dynamic_pointer_cast<torch::nn::SequentialImpl>(cpu_model->clone(foo_device));
  const torch::Tensor x = torch::randn({64, 16});
  const torch::Tensor y = torch::randn({64, 4});
  const torch::Tensor foo_x = x.to(foo_device);
  const torch::Tensor foo_y = y.to(foo_device);
  const int64_t before_training = allocated_bytes(foo_device.index());

  torch::optim::SGD cpu_sgd(cpu_model->parameters(), torch::optim::SGDOptions(0.1));
  torch::optim::SGD foo_sgd(foo_model->parameters(), torch::optim::SGDOptions(0.1));

  // The parameters and inputs were copied on the default stream; the side
  // stream waits for those copies, on the device, before training.
  const c10::Stream default_stream = guard.getDefaultStream(foo_device);
  const c10::Stream side = guard.getStreamFromGlobalPool(foo_device);
  c10::Event copied(c10::DeviceType::PrivateUse1);
  copied.record(default_stream);
  copied.block(side);

  std::vector<torch::Tensor> foo_losses;
  c10::Event start(c10::DeviceType::PrivateUse1, c10::EventFlag::BACKEND_DEFAULT);
  c10::Event end(c10::DeviceType::PrivateUse1, c10::EventFlag::BACKEND_DEFAULT);
  {
    c10::StreamGuard on_side(side);
    // The current stream, seen through foo's own API.
    if (foo::getCurrentFooStream(foo_device.index()).unwrap() != side) {
      std::printf("FAIL: the stream guard did not make the side stream current\n");
      return 1;
    }
    start.record(side);
    for (int step = 0; step < kSteps; ++step) foo_losses.push_back(train_step(foo_model, foo_sgd, foo_x, foo_y));
    end.record(side);
  }
  // Reading results on the default stream waits for the side stream first.
  end.block(default_stream);
  const int64_t after_training = allocated_bytes(foo_device.index());

  std::vector<torch::Tensor> cpu_losses;
  for (int step = 0; step < kSteps; ++step) cpu_losses.push_back(train_step(cpu_model, cpu_sgd, x, y));

  bool match = true;
  const torch::Tensor foo_loss_values = torch::stack(foo_losses).cpu();  // synchronizes the default stream
  for (int step = 0; step < kSteps; ++step) {
    const double cpu_loss = cpu_losses[step].item<double>();
    const double foo_loss = foo_loss_values[step].item<double>();
    const bool same = std::abs(cpu_loss - foo_loss) <= kTolerance * std::abs(cpu_loss);
    match = match && same;
    std::printf("step %d: loss cpu %.6f foo %.6f%s\n", step, cpu_loss, foo_loss, same ? "" : "  MISMATCH");
  }
  const auto cpu_params = cpu_model->parameters();
  const auto foo_params = foo_model->parameters();
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    if (!torch::allclose(foo_params[i].cpu(), cpu_params[i], kTolerance, kTolerance)) {
      std::printf("parameter %zu differs\n", i);
      match = false;
    }
  }
  std::printf("foo training time: %.3f ms (events on the side stream)\n", start.elapsedTime(end));
  std::printf("foo allocator: %lld bytes allocated before training, %lld after\n",
              static_cast<long long>(before_training), static_cast<long long>(after_training));
  if (!(before_training > 0 && after_training >= before_training)) {
    std::printf("FAIL: the allocator's statistics do not show the model's memory\n");
    match = false;
  }
  std::printf(match ? "foo matches cpu\n" : "foo differs from cpu\n");
  return match ? 0 : 1;
}
