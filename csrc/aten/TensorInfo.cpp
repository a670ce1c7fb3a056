#include "aten/TensorInfo.h"

#include <ATen/EmptyTensor.h>
#include <ATen/ops/empty_strided.h>

#include <array>

namespace foo::aten {
namespace {

thread_local AliasScope* t_scope = nullptr;

c10::Storage cpu_storage(void* base, size_t nbytes) {
  return c10::Storage(c10::Storage::use_byte_size_t(), nbytes, c10::DataPtr(base, c10::Device(c10::kCPU)),
                      /*allocator=*/nullptr, /*resizable=*/false);
}

// The CPU storages of the thread's latest kernels, for the next kernels
// over the same memory: making and freeing one per tensor argument is a
// tenth of what a small kernel costs the host. A storage is reused only
// when the cache alone holds it, strongly or weakly (the kernels that had
// it are done with it, and no cache keyed on storage identity remembers
// it); it owns nothing and cannot be resized, so a kernel cannot tell.
class RecentStorages {
 public:
  c10::Storage take(void* base, size_t nbytes) {
    for (c10::Storage& s : slots_) {
      if (s && s.data() == base && s.nbytes() == nbytes && held_here_only(s)) return s;
    }
    c10::Storage fresh = cpu_storage(base, nbytes);
    slots_[next_] = fresh;
    next_ = (next_ + 1) % slots_.size();
    return fresh;
  }

 private:
  static bool held_here_only(const c10::Storage& s) {
    if (s.use_count() != 1) return false;
    // Counted without taking a weak reference: reclaimed, read, released.
    auto weak = c10::weak_intrusive_ptr<c10::StorageImpl>::reclaim(s.unsafeGetStorageImpl());
    bool no_weak = weak.weak_use_count() == 1;  // 1: the strong references' own
    weak.release();
    return no_weak;
  }

  std::array<c10::Storage, 8> slots_;
  size_t next_ = 0;
};

thread_local RecentStorages t_recent;

// A non-owning CPU tensor over foo memory. Built directly rather than with
// at::from_blob: this runs once per tensor argument of every kernel.
at::Tensor alias(void* base, size_t nbytes, int64_t offset, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                 c10::ScalarType dtype, bool conj, bool neg) {
  at::Tensor t;
  if (base == nullptr) {  // no elements
    t = at::empty_strided(sizes, strides, at::TensorOptions().dtype(dtype).device(c10::kCPU));
    // Kept for views of it, whose offsets follow (view_as_real of an empty slice).
    if (offset != 0) t.unsafeGetTensorImpl()->set_storage_offset(offset);
  } else {
    c10::Storage storage = t_scope ? t_scope->storage_for(base, nbytes) : cpu_storage(base, nbytes);
    t = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                                 c10::scalarTypeToTypeMeta(dtype));
    t.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides, offset);
  }
  if (conj) t._set_conj(true);
  if (neg) t._set_neg(true);
  return t;
}

}  // namespace

TensorInfo::TensorInfo(const at::Tensor& t)
    : storage_base_(t.numel() == 0 ? nullptr : const_cast<void*>(t.storage().data())),
      storage_nbytes_(t.numel() == 0 ? 0 : t.storage().nbytes()),
      storage_offset_(t.storage_offset()),
      sizes_(t.sizes().begin(), t.sizes().end()),
      strides_(t.strides().begin(), t.strides().end()),
      dtype_(t.scalar_type()),
      conj_(t.is_conj()),
      neg_(t.is_neg()) {
  if (storage_nbytes_ == 0 && t.numel() == 0) return;
  // A storage resized or freed under its views (FSDP frees parameters with
  // resize_(0)) would be read or written past its end by the kernel, later,
  // on the executor: refused at the call, as CPU's set_ refuses it.
  const size_t needed = at::detail::computeStorageNbytes(t.sizes(), t.strides(), t.itemsize(), t.storage_offset());
  TORCH_CHECK(storage_base_ != nullptr && needed <= storage_nbytes_, "a foo tensor of sizes ", t.sizes(),
              ", strides ", t.strides(), ", storage offset ", t.storage_offset(), " and itemsize ", t.itemsize(),
              " needs ", needed, " bytes of its storage, which has ", storage_nbytes_,
              " (was the storage resized or freed under it?)");
}

at::Tensor TensorInfo::cpu() const {
  return alias(storage_base_, storage_nbytes_, storage_offset_, sizes_, strides_, dtype_, conj_, neg_);
}

AliasScope::AliasScope() : previous_(t_scope) { t_scope = this; }

AliasScope::~AliasScope() { t_scope = previous_; }

c10::Storage AliasScope::storage_for(void* base, size_t nbytes) {
  for (const c10::Storage& s : storages_) {
    if (s.data() == base) return s;
  }
  storages_.push_back(t_recent.take(base, nbytes));
  return storages_.back();
}

at::Tensor cpu_alias(const at::Tensor& t) { return TensorInfo(t).cpu(); }

}  // namespace foo::aten
