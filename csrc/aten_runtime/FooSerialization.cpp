#include "aten_runtime/FooSerialization.h"

#include <c10/core/TensorImpl.h>
#include <torch/csrc/jit/serialization/pickler_helper.h>

namespace foo {
namespace {

constexpr const char* kPrefix = "foo.";

struct FooTensorMeta final : public c10::BackendMeta {
  std::map<std::string, bool> flags;
  c10::intrusive_ptr<c10::BackendMeta> clone(const c10::intrusive_ptr<c10::BackendMeta>& ptr) const override {
    auto copy = c10::make_intrusive<FooTensorMeta>();
    copy->flags = static_cast<const FooTensorMeta*>(ptr.get())->flags;
    return copy;
  }
};

FooTensorMeta* meta_of(const at::Tensor& t) {
  return dynamic_cast<FooTensorMeta*>(t.unsafeGetTensorImpl()->get_backend_meta());
}

// torch.save: each flag becomes a "foo.<name>" entry of the tensor's metadata.
void save_flags(const at::Tensor& t, std::unordered_map<std::string, bool>& metadata) {
  if (auto* meta = meta_of(t)) {
    for (const auto& [name, value] : meta->flags) metadata[kPrefix + name] = value;
  }
}

// torch.load: and back.
void load_flags(const at::Tensor& t, std::unordered_map<std::string, bool>& metadata) {
  for (const auto& [key, value] : metadata) {
    if (key.rfind(kPrefix, 0) == 0) set_backend_flag(t, key.substr(std::char_traits<char>::length(kPrefix)), value);
  }
}

const bool g_registered = [] {
  torch::jit::TensorBackendMetaRegistry(c10::DeviceType::PrivateUse1, &save_flags, &load_flags);
  return true;
}();

}  // namespace

void set_backend_flag(const at::Tensor& t, const std::string& name, bool value) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, "backend flags are kept on foo tensors, not on ",
              t.device(), " tensors");
  TORCH_CHECK(!name.empty(), "a backend flag needs a name");
  auto* meta = meta_of(t);
  if (meta == nullptr) {
    auto fresh = c10::make_intrusive<FooTensorMeta>();
    meta = fresh.get();
    t.unsafeGetTensorImpl()->set_backend_meta(fresh);
  }
  meta->flags[name] = value;
}

std::map<std::string, bool> backend_flags(const at::Tensor& t) {
  auto* meta = meta_of(t);
  return meta ? meta->flags : std::map<std::string, bool>{};
}

}  // namespace foo
