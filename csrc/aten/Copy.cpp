// Copies between foo and CPU tensors and between foo devices, with dtype
// conversion and any strides. Every copy is queued on the current stream of
// the foo device involved (the destination's, between two foo devices).
// As on CUDA, a copy to or from pageable CPU memory returns once the data
// has arrived; with pinned memory and non_blocking=True it returns at once.
#include <cstring>
#include <optional>

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/_local_scalar_dense.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/real.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/Launch.h"
#include "aten/OpCounts.h"
#include "aten/TensorInfo.h"
#include "aten_runtime/FooHostAllocator.h"
#include "runtime/FooEvent.h"
#include "runtime/FooException.h"
#include "runtime/FooStream.h"

namespace foo::aten {
namespace {

// Whether `t`'s elements fill one span of memory without gaps or overlap
// (contiguous in some order of its dimensions, as channels-last is).
bool dense(const at::Tensor& t) { return t.is_contiguous() || t.is_non_overlapping_and_dense(); }

// Same sizes and the same order of elements in memory (strides of size-1
// dimensions do not matter), both dense.
bool same_dense_layout(const at::Tensor& a, const at::Tensor& b) {
  if (a.is_contiguous() && b.is_contiguous()) return true;
  if (a.sizes() != b.sizes() || !dense(a) || !dense(b)) return false;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (a.size(d) != 1 && a.stride(d) != b.stride(d)) return false;
  }
  return true;
}

// Same dtype, the same dense layout (contiguous, channels-last, or any
// other order), no pending conjugation or negation of one side only: the
// copy is a plain move of bytes, as CUDA's is then.
bool plain_bytes(const at::Tensor& a, const at::Tensor& b) {
  return a.dtype() == b.dtype() && a.is_conj() == b.is_conj() && a.is_neg() == b.is_neg() && same_dense_layout(a, b);
}

// A tensor of `layout`'s sizes and strides with `options`: something a
// dense tensor of that layout copies into byte for byte.
at::Tensor empty_with_layout_of(const at::Tensor& layout, const c10::TensorOptions& options) {
  return at::empty_strided(layout.sizes(), layout.strides(), options);
}

size_t nbytes(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

// The largest element `.item()` reads (complex128).
constexpr size_t kMostScalarBytes = 16;

at::Tensor empty_foo_like(const at::Tensor& like, c10::ScalarType dtype, c10::Device device) {
  return at::empty(like.sizes(), like.options().dtype(dtype).device(device).memory_format(c10::MemoryFormat::Contiguous));
}

// After a copy with host memory queued on `stream`: pinned memory stays
// reserved until the copy ran (non_blocking), or the host waits for it.
void finish_host_copy(const at::Tensor& host, const FooStream& stream, bool non_blocking) {
  if (!is_pinned_ptr(host.data_ptr())) {  // pageable: foo_sim already waited
    reraise_kernel_warnings();
    return;
  }
  if (non_blocking) {
    getFooHostAllocator()->record_event(host.data_ptr(), host.storage().data_ptr().get_context(), stream.unwrap());
  } else {
    stream.synchronize();
  }
}

// Between two tensors of one foo device.
void copy_same_device(const at::Tensor& src, const at::Tensor& dst) {
  auto device = dst.device().index();
  if (plain_bytes(src, dst)) {
    FOO_CHECK(fooMemcpyAsync(dst.data_ptr(), src.data_ptr(), nbytes(dst), fooMemcpyDeviceToDevice,
                             getCurrentFooStream(device).stream()));
    return;
  }
  launch_op(device, "aten::copy_", [s = TensorInfo(src), d = TensorInfo(dst)] { d.cpu().copy_(s.cpu()); },
            loop_kernel_threads(src, dst));
}

// Between foo devices: on the destination's current stream, ordered after
// the work queued on the source's current stream, which in turn waits for
// the copy before it may overwrite the source. Plain bytes move as a peer
// copy (foo_sim's copy engine, as cudaMemcpyPeerAsync), the rest through
// ATen's CPU copy kernel.
void copy_between_devices(const at::Tensor& src, const at::Tensor& dst) {
  FooStream src_stream = getCurrentFooStream(src.device().index());
  FooStream dst_stream = getCurrentFooStream(dst.device().index());
  FooEvent src_ready;
  src_ready.record(src_stream);
  src_ready.block(dst_stream);
  if (plain_bytes(src, dst)) {
    FOO_CHECK(fooMemcpyPeerAsync(dst.data_ptr(), dst.device().index(), src.data_ptr(), src.device().index(),
                                 nbytes(dst), dst_stream.stream()));
  } else {
    launch_op(dst.device().index(), "aten::copy_",
              [s = TensorInfo(src), d = TensorInfo(dst)] { d.cpu().copy_(s.cpu()); }, loop_kernel_threads(src, dst));
  }
  FooEvent copied;
  copied.record(dst_stream);
  copied.block(src_stream);
}

void copy_host_to_device(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  FooStream stream = getCurrentFooStream(dst.device().index());
  if (plain_bytes(src, dst)) {
    FOO_CHECK(fooMemcpyAsync(dst.data_ptr(), src.data_ptr(), nbytes(dst), fooMemcpyHostToDevice, stream.stream()));
    finish_host_copy(src, stream, non_blocking);
    return;
  }
  // A destination whose memory is not its values in plain order (another
  // layout, or a negated or conjugated view) takes them through a copy on
  // the device, as on CUDA: the source's bytes still move when the stream
  // gets there.
  if (!dst.is_contiguous() || dst.is_neg() || dst.is_conj()) {
    at::Tensor staging = empty_foo_like(dst, dst.scalar_type(), dst.device());
    copy_host_to_device(src, staging, non_blocking);
    copy_same_device(staging, dst);
    return;
  }
  // A non_blocking copy that changes the dtype converts on the device, as
  // CUDA's does: the source's own bytes move when the stream gets there
  // (from pinned memory they are read then, not at the call), and a kernel
  // converts them.
  if (non_blocking && src.scalar_type() != dst.scalar_type() && !src.is_conj() && !src.is_neg()) {
    at::Tensor raw = empty_foo_like(dst, src.scalar_type(), dst.device());
    copy_host_to_device(src, raw, true);
    if (raw.is_complex() && !dst.is_complex() && dst.scalar_type() != at::kBool) {
      // The warning CPU's and CUDA's copy_ give at the call, given here,
      // on the host; the device takes the real part, which is that cast.
      TORCH_WARN_ONCE("Casting complex values to real discards the imaginary part");
      raw = at::real(raw);
    }
    copy_same_device(raw, dst);
    return;
  }
  // Otherwise, as CUDA does, the host converts the source's dtype, layout
  // and bits at the call, then the bytes move.
  at::Tensor host = src.to(dst.scalar_type()).resolve_conj().resolve_neg().contiguous();
  FOO_CHECK(fooMemcpyAsync(dst.data_ptr(), host.data_ptr(), nbytes(dst), fooMemcpyHostToDevice, stream.stream()));
  finish_host_copy(host, stream, non_blocking);
}

void copy_device_to_host(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  if (!plain_bytes(src, dst) && dense(dst) && !dst.is_conj() && !dst.is_neg()) {
    // Convert on the device into dst's dtype and layout, then move plain bytes.
    at::Tensor converted = empty_with_layout_of(dst, src.options().dtype(dst.scalar_type()));
    copy_same_device(src, converted);
    copy_device_to_host(converted, dst, non_blocking);
    return;
  }
  if (!plain_bytes(src, dst)) {
    // A destination with gaps or overlaps, or a conjugated or negated view:
    // plain values to the host, then CPU's copy_ into it.
    at::Tensor host = at::empty(dst.sizes(), dst.options().memory_format(c10::MemoryFormat::Contiguous));
    copy_device_to_host(src, host, false);
    dst.copy_(host);
    return;
  }
  FooStream stream = getCurrentFooStream(src.device().index());
  FOO_CHECK(fooMemcpyAsync(dst.data_ptr(), src.data_ptr(), nbytes(dst), fooMemcpyDeviceToHost, stream.stream()));
  finish_host_copy(dst, stream, non_blocking);
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  if (dst.numel() == 0 || self.is_same(dst)) return dst;
  at::Tensor src = self.expand_as(dst);  // copy_ broadcasts its source
  bool src_foo = src.device().type() == c10::DeviceType::PrivateUse1;
  bool dst_foo = dst.device().type() == c10::DeviceType::PrivateUse1;
  TORCH_CHECK((src_foo || src.is_cpu()) && (dst_foo || dst.is_cpu()), "foo cannot copy from ", src.device(), " to ",
              dst.device());
  // The checks TensorIterator makes for CPU and CUDA copies (ATen hands
  // PrivateUse1 copies to us before building one).
  if (dst_foo) at::assert_no_internal_overlap(dst);
  // With the source as given, not broadcast: a 0-dim element of dst
  // copied over all of dst overlaps it partly, as CPU's copy_ finds.
  if (src_foo && dst_foo) at::assert_no_partial_overlap(dst, self);
  if (src_foo && dst_foo) {
    c10::DeviceGuard guard(dst.device());
    if (src.device() == dst.device()) {
      copy_same_device(src, dst);
    } else {
      copy_between_devices(src, dst);
    }
  } else if (dst_foo) {
    c10::DeviceGuard guard(dst.device());
    copy_host_to_device(src, dst, non_blocking);
    if (!non_blocking || !is_pinned_ptr(src.data_ptr())) note_synchronizing("aten::copy_ (host to device)");
  } else {
    c10::DeviceGuard guard(src.device());
    copy_device_to_host(src, dst, non_blocking);
    if (!non_blocking || !is_pinned_ptr(dst.data_ptr())) note_synchronizing("aten::copy_ (device to host)");
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

// The value in `bytes` as CPU's _local_scalar_dense reads it, for the
// common dtypes; nullopt for the others, which go through CPU's own.
std::optional<at::Scalar> scalar_from_bytes(const unsigned char* bytes, at::ScalarType type) {
  auto as = [bytes](auto value) {
    std::memcpy(&value, bytes, sizeof(value));
    return at::Scalar(value);
  };
  switch (type) {
    case at::kFloat: return as(float{});
    case at::kDouble: return as(double{});
    case at::kHalf: return as(at::Half{});
    case at::kBFloat16: return as(at::BFloat16{});
    case at::kLong: return as(int64_t{});
    case at::kInt: return as(int32_t{});
    case at::kShort: return as(int16_t{});
    case at::kChar: return as(int8_t{});
    case at::kByte: return as(uint8_t{});
    case at::kBool: return as(bool{});
    case at::kComplexFloat: return as(c10::complex<float>{});
    case at::kComplexDouble: return as(c10::complex<double>{});
    default: return std::nullopt;
  }
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  c10::DeviceGuard guard(self.device());
  if (self.is_conj() || self.is_neg() || static_cast<size_t>(self.element_size()) > kMostScalarBytes) {
    at::Tensor host = at::empty({}, self.options().device(c10::kCPU));
    copy_device_to_host(self, host, false);
    note_synchronizing("aten::_local_scalar_dense");
    return at::_local_scalar_dense(host);
  }
  // The value's bytes, copied on the stream into this frame (pageable: the
  // copy completes before it returns), then read as CPU's
  // _local_scalar_dense reads them, without a CPU tensor to hold them.
  alignas(16) unsigned char bytes[kMostScalarBytes];
  FooStream stream = getCurrentFooStream(self.device().index());
  FOO_CHECK(fooMemcpyAsync(bytes, self.const_data_ptr(), self.element_size(), fooMemcpyDeviceToHost, stream.stream()));
  reraise_kernel_warnings();
  note_synchronizing("aten::_local_scalar_dense");
  if (std::optional<at::Scalar> value = scalar_from_bytes(bytes, self.scalar_type())) return *value;
  return at::_local_scalar_dense(at::from_blob(bytes, {}, self.options().device(c10::kCPU)));
}

// foo's copy honours the conjugation and negation bits itself; without
// these, their fallbacks would materialize the source with clone, which
// copies through _copy_from again.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
}

}  // namespace
}  // namespace foo::aten
