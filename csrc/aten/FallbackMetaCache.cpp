#include "aten/FallbackMetaCache.h"

#include <cstdint>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <ATen/Context.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DefaultDtype.h>
#include <c10/util/hash.h>

namespace foo::aten {
namespace {

using Stack = torch::jit::Stack;

// A call's signature, one word at a time. Each argument starts with a tag,
// so that two different calls never spell the same words.
enum Tag : int64_t { kUndefined = 1, kTensor, kNone, kInt, kDouble, kBool, kString, kDevice, kComplex, kList };

class Signature {
 public:
  // nullopt when the call holds something a meta function could read the
  // value of, or that is not plain data.
  static std::optional<std::vector<int64_t>> of(const c10::OperatorHandle& op, const Stack& args) {
    if (op.operator_name().name.rfind("aten::", 0) != 0) return std::nullopt;
    Signature s;
    s.words_.reserve(16 * args.size() + 4);
    s.put(reinterpret_cast<intptr_t>(&op.schema()));
    s.put(at::globalContext().deterministicAlgorithms());
    s.put(static_cast<int64_t>(c10::get_default_dtype_as_scalartype()));
    for (const c10::IValue& v : args) {
      if (!s.add(v)) return std::nullopt;
    }
    return std::move(s.words_);
  }

 private:
  void put(int64_t w) { words_.push_back(w); }

  bool add(const c10::IValue& v) {
    if (v.isTensor()) return add_tensor(v.toTensor());
    if (v.isNone()) {
      put(kNone);
    } else if (v.isInt()) {
      put(kInt), put(v.toInt());
    } else if (v.isDouble()) {
      put(kDouble), put(bits(v.toDouble()));
    } else if (v.isBool()) {
      put(kBool), put(v.toBool());
    } else if (v.isComplexDouble()) {
      c10::complex<double> c = v.toComplexDouble();
      put(kComplex), put(bits(c.real())), put(bits(c.imag()));
    } else if (v.isDevice()) {
      put(kDevice), put(static_cast<int64_t>(v.toDevice().type())), put(v.toDevice().index());
    } else if (v.isString()) {
      std::string_view text = v.toStringView();
      put(kString), put(static_cast<int64_t>(text.size()));
      for (size_t i = 0; i < text.size(); i += sizeof(int64_t)) {
        int64_t w = 0;
        std::memcpy(&w, text.data() + i, std::min(sizeof(int64_t), text.size() - i));
        put(w);
      }
    } else if (v.isList()) {
      // Tensor, int, float and bool lists, and lists of optional tensors.
      c10::ArrayRef<c10::IValue> items = v.toListRef();
      put(kList), put(static_cast<int64_t>(items.size()));
      for (const c10::IValue& e : items) {
        if (!add(e)) return false;
      }
    } else {
      return false;  // symbolic values, generators, Python objects, ...
    }
    return true;
  }

  bool add_tensor(const at::Tensor& t) {
    if (!t.defined()) {
      put(kUndefined);
      return true;
    }
    // A CPU tensor is passed to the meta function as it is, values and all.
    if (!t.device().is_privateuseone() || t.layout() != c10::kStrided) return false;
    put(kTensor);
    put(static_cast<int64_t>(t.scalar_type()));
    put(t.device().index());
    put(t.dim());
    for (int64_t d : t.sizes()) put(d);
    for (int64_t d : t.strides()) put(d);
    put(t.storage_offset());
    put(static_cast<int64_t>(t.storage().nbytes()));
    put(t.is_conj() | (t.is_neg() << 1));
    // How it shares storage with the arguments before it, as the meta
    // tensors will (an overlap check depends on it); never the address.
    put(alias_group(t));
    return true;
  }

  int64_t alias_group(const at::Tensor& t) {
    if (t.numel() == 0) return -1;  // meta gives these a storage of their own
    const void* base = t.storage().data();
    for (size_t i = 0; i < storages_.size(); ++i) {
      if (storages_[i] == base) return static_cast<int64_t>(i);
    }
    storages_.push_back(base);
    return static_cast<int64_t>(storages_.size() - 1);
  }

  static int64_t bits(double d) {
    int64_t w;
    std::memcpy(&w, &d, sizeof(w));
    return w;
  }

  std::vector<int64_t> words_;
  std::vector<const void*> storages_;
};

// A copy of a meta result made of tensors of our own: a Python meta
// function's tensors keep their Python objects, which a thread's storage
// must not hold (it is destroyed when the thread ends, possibly while the
// interpreter is finalizing, when releasing a Python object aborts the
// process).
at::Tensor own_meta(const at::Tensor& t) {
  if (!t.defined()) return t;
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
}

Stack owned_copy(const Stack& meta) {
  Stack out;
  out.reserve(meta.size());
  for (const c10::IValue& v : meta) {
    if (v.isTensor()) {
      out.emplace_back(own_meta(v.toTensor()));
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& t : v.toTensorList()) list.push_back(own_meta(t));
      out.emplace_back(std::move(list));
    } else {
      out.push_back(v);  // None (meta results hold nothing else)
    }
  }
  return out;
}

struct SignatureHash {
  size_t operator()(const std::vector<int64_t>& words) const {
    size_t h = words.size();
    for (int64_t w : words) h = c10::hash_combine(h, std::hash<int64_t>()(w));
    return h;
  }
};

// Per thread: no lock on the host's launch path. Bounded, as a program
// that calls a fallback operator on ever new shapes would otherwise grow it
// without end; meta tensors hold no memory, so dropping them all is cheap.
constexpr size_t kMostSignatures = 1024;

}  // namespace

std::optional<Stack> cached_meta_results(const c10::OperatorHandle& op, const Stack& args,
                                             std::optional<Stack> (*compute)(const c10::OperatorHandle&,
                                                                             const Stack&)) {
  thread_local std::unordered_map<std::vector<int64_t>, Stack, SignatureHash> remembered;
  std::optional<std::vector<int64_t>> signature = Signature::of(op, args);
  if (!signature) return compute(op, args);
  if (auto it = remembered.find(*signature); it != remembered.end()) return it->second;
  std::optional<Stack> result = compute(op, args);
  if (result) {
    if (remembered.size() >= kMostSignatures) remembered.clear();
    remembered.emplace(std::move(*signature), owned_copy(*result));
  }
  return result;
}

}  // namespace foo::aten
