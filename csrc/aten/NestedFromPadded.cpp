// _nested_from_padded on foo: a nested tensor made of the leading part of
// each entry of a padded batch, the part its row of `sizes` names.
//
// CPU's kernel selects those elements with a mask (masked_select), whose
// result size would make the host wait for the stream; CUDA's gathers them
// with a kernel, without waiting. The sizes are on the host, so foo knows
// where each entry's elements go: it copies each entry's part into its run
// of the new buffer, one queued copy per entry.
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <ATen/NestedTensorImpl.h>
#include <ATen/ops/empty.h>

#include <vector>

namespace foo::aten {
namespace {

at::Tensor nested_from_padded(const at::Tensor& padded, const at::Tensor& sizes, bool fuse_transform_0213) {
  const c10::OptionalDeviceGuard guard(at::device_of(padded));
  TORCH_CHECK(sizes.device().is_cpu() && sizes.scalar_type() == at::kLong && sizes.dim() == 2,
              "_nested_from_padded: expected the nested sizes as a 2-D int64 CPU tensor, got ", sizes.dim(),
              "-D ", sizes.scalar_type(), " on ", sizes.device());
  at::Tensor entries = padded;
  if (fuse_transform_0213) {
    TORCH_CHECK(padded.dim() == 4, "_nested_from_padded: fuse_transform_0213 expects a 4-D padded tensor, got ",
                padded.dim(), "-D");
    // (batch, heads, length, head dim) -> (batch, length, heads * head dim)
    entries = padded.permute({0, 2, 1, 3}).reshape({padded.size(0), padded.size(2), padded.size(1) * padded.size(3)});
  }
  const int64_t count = sizes.size(0);
  const int64_t entry_dim = sizes.size(1);
  TORCH_CHECK(entries.dim() - 1 == entry_dim, "dim: ", entries.dim(), "target_size: ", entry_dim);
  TORCH_CHECK(entries.size(0) >= count, "_nested_from_padded: ", count, " entries asked of a padded batch of ",
              entries.size(0));
  const at::Tensor shapes = sizes.contiguous();
  const int64_t* shape = shapes.const_data_ptr<int64_t>();
  int64_t total = 0;
  for (int64_t i = 0; i < count; ++i) {
    int64_t numel = 1;
    for (int64_t d = 0; d < entry_dim; ++d) {
      int64_t n = shape[i * entry_dim + d];
      TORCH_CHECK(n >= 0 && n <= entries.size(d + 1), "_nested_from_padded: entry ", i, " has size ", n,
                  " in dimension ", d, ", more than the padded size ", entries.size(d + 1));
      numel *= n;
    }
    total += numel;
  }
  at::Tensor buffer = at::empty({total}, entries.options().memory_format(c10::MemoryFormat::Contiguous));
  int64_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    const at::IntArrayRef entry_sizes(shape + i * entry_dim, entry_dim);
    at::Tensor part = entries.select(0, i);
    int64_t numel = 1;
    for (int64_t d = 0; d < entry_dim; ++d) {
      part = part.narrow(d, 0, entry_sizes[d]);
      numel *= entry_sizes[d];
    }
    if (numel != 0) buffer.narrow(0, offset, numel).view(entry_sizes).copy_(part);
    offset += numel;
  }
  return at::detail::make_tensor<at::native::NestedTensorImpl>(std::move(buffer), sizes);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_nested_from_padded", TORCH_FN(nested_from_padded));
}

}  // namespace
}  // namespace foo::aten
