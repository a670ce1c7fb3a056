// torch.ops._foo_C: tensor-level services (the fallback's logs, generators,
// backend flags, pinned memory statistics) and torch.compile's launches.
#include <array>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/CachingHostAllocator.h>
#include <torch/library.h>

#include "aten/CompiledKernels.h"
#include "aten/Convolution.h"
#include "aten/Fallback.h"
#include "limited/Ops.h"
#include "runtime/FooGenerator.h"
#include "runtime/FooHostAllocator.h"
#include "runtime/FooSerialization.h"
#include "runtime/Philox.h"

namespace foo::limited {
namespace {

c10::Dict<std::string, int64_t> host_memory_stats() {
  at::HostStats s = getFooHostAllocator()->get_stats();
  c10::Dict<std::string, int64_t> out;
  auto put = [&out](const std::string& name, const c10::CachingAllocator::Stat& stat) {
    out.insert(name + ".current", stat.current);
    out.insert(name + ".peak", stat.peak);
    out.insert(name + ".allocated", stat.allocated);
    out.insert(name + ".freed", stat.freed);
  };
  put("active_requests", s.active_requests);
  put("active_bytes", s.active_bytes);
  put("allocations", s.allocations);
  put("allocated_bytes", s.allocated_bytes);
  out.insert("num_host_alloc", s.num_host_alloc);
  out.insert("num_host_free", s.num_host_free);
  return out;
}

std::vector<int64_t> philox(std::vector<int64_t> counter, std::vector<int64_t> key) {
  TORCH_CHECK_VALUE(counter.size() == 4 && key.size() == 2, "philox4x32_10 takes 4 counter words and 2 key words");
  std::array<uint32_t, 4> c{};
  std::array<uint32_t, 2> k{};
  for (size_t i = 0; i < 4; ++i) c[i] = static_cast<uint32_t>(counter[i]);
  for (size_t i = 0; i < 2; ++i) k[i] = static_cast<uint32_t>(key[i]);
  std::array<uint32_t, 4> out = philox4x32_10(c, k);
  return {out.begin(), out.end()};
}

c10::Dict<std::string, bool> flags_of(const at::Tensor& t) {
  c10::Dict<std::string, bool> out;
  for (const auto& [name, value] : backend_flags(t)) out.insert(name, value);
  return out;
}

// Tensors, ints (and bools) and floats, taken at the time of the call.
void launch_compiled_kernel(int64_t fn, int64_t device, const c10::List<c10::IValue>& args) {
  aten::CompiledKernelArgs packed;
  for (size_t n = 0; n < args.size(); ++n) {
    const c10::IValue arg = args.get(n);
    if (arg.isTensor()) {
      packed.add_tensor(arg.toTensor());
    } else if (arg.isInt()) {
      packed.add_int(arg.toInt());
    } else if (arg.isBool()) {
      packed.add_int(arg.toBool());
    } else if (arg.isDouble()) {
      packed.add_double(arg.toDouble());
    } else {
      TORCH_CHECK_TYPE(false, "torch.compile kernel launch: argument ", n, " is neither a tensor, an int nor a float: ",
                       arg.tagKind());
    }
  }
  aten::launch_compiled_kernel(device_index(device), reinterpret_cast<aten::PackedKernelFn>(fn), std::move(packed));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(_foo_C, m) {
  m.def("fallback_ops() -> str[]", &aten::fallback_ops);
  m.def("synchronizing_ops() -> str[]", &aten::synchronizing_ops);
  m.def("host_memory_stats() -> Dict(str, int)", &host_memory_stats);
  m.def("philox4x32_10(int[] counter, int[] key) -> int[]", &philox);
  m.def("set_backend_flag(Tensor t, str name, bool value) -> ()", &set_backend_flag);
  m.def("backend_flags(Tensor t) -> Dict(str, bool)", &flags_of);
  m.def("default_generator(int d) -> Generator?",
        [](int64_t d) { return std::optional<at::Generator>(default_generator(device_index(d))); });

  m.def("launch_compiled_kernel(int fn, int device, Any[] args) -> ()", &launch_compiled_kernel);
  m.def("name_compiled_kernel(int fn, str name) -> ()", [](int64_t fn, const std::string& name) {
    aten::name_compiled_kernel(reinterpret_cast<aten::PackedKernelFn>(fn), name);
  });
  // The layout of a foo convolution's output, for fake tensors, as c10::MemoryFormat's value.
  m.def("convolution_memory_format(Tensor input, Tensor weight) -> int",
        [](const at::Tensor& input, const at::Tensor& weight) {
          return static_cast<int64_t>(aten::convolution_memory_format(input, weight));
        });
}

}  // namespace foo::limited
