#include "aten/RaceAccesses.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/Tensor.h>
#include <ATen/core/function_schema.h>
#include <ATen/record_function.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <foo_sim/foo_race.h>

#include "aten/OperatorName.h"
#include "aten/TensorByteRuns.h"
#include "runtime/FooBufferRegistration.h"
#include "runtime/FooRace.h"

namespace foo::aten {
namespace {

std::atomic<RaceSiteProvider> g_site{nullptr};
std::mutex g_hook_mutex;
at::CallbackHandle g_handle = at::INVALID_CALLBACK_HANDLE;

// Which arguments an operator writes, from its schema's alias annotations.
struct OpInfo {
  std::vector<bool> writes;
  std::string name;  // "aten::add_.Tensor"
  // Touches no data: a view (a result aliases an argument without writing
  // it: as_strided, expand, narrow) or an operator that reads only
  // metadata. No launch follows, and on the host it is no access.
  bool metadata_only = false;
};

bool reads_only_metadata(const std::string& name) {
  // The factories that take a tensor for its shape, dtype and device.
  static const char* const kNames[] = {"aten::empty_like", "aten::zeros_like", "aten::ones_like", "aten::full_like",
                                       "aten::rand_like", "aten::randn_like", "aten::randint_like", "aten::new_empty",
                                       "aten::new_empty_strided", "aten::new_zeros", "aten::new_ones", "aten::new_full",
                                       "aten::is_pinned", "aten::set_", "aten::record_stream",
                                       "aten::_has_same_storage_numel", "aten::is_same_size", "aten::size",
                                       "aten::stride", "aten::sym_size", "aten::sym_stride", "aten::detach_"};
  for (const char* n : kNames) {
    if (name.compare(0, std::strlen(n), n) == 0 && (name.size() == std::strlen(n) || name[std::strlen(n)] == '.')) {
      return true;
    }
  }
  return false;
}

const OpInfo* op_info(const at::RecordFunction& fn) {
  // Per thread: no lock on the hot path; an operator's schema never changes.
  thread_local std::unordered_map<std::string, std::unique_ptr<OpInfo>> cache;
  std::optional<c10::OperatorName> name = fn.operator_name();
  if (!name) return nullptr;
  std::string key = full_name(*name);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second.get();
  auto info = std::make_unique<OpInfo>();
  info->name = key;
  if (std::optional<c10::FunctionSchema> schema = fn.operator_schema()) {
    for (const c10::Argument& a : schema->arguments()) info->writes.push_back(a.alias_info() && a.alias_info()->isWrite());
    for (const c10::Argument& r : schema->returns()) {
      if (r.alias_info() && !r.alias_info()->isWrite()) info->metadata_only = true;
    }
  }
  info->metadata_only = info->metadata_only || reads_only_metadata(info->name);
  return cache.emplace(std::move(key), std::move(info)).first->second.get();
}

std::string describe(const at::Tensor& t) {
  std::string out(c10::getDtypeNames(t.scalar_type()).first);
  out += "[";
  for (int64_t i = 0; i < t.dim(); ++i) out += (i ? ", " : "") + std::to_string(t.size(i));
  return out + "]";
}

// A strided tensor is declared as up to this many runs of bytes (its
// whole span beyond: TensorByteRuns.h).
constexpr size_t kMaxRuns = 1024;

struct Gathered {
  std::vector<at::Tensor> tensors;
  std::vector<bool> writes;
  bool any_foo = false;
};

void gather(const c10::IValue& v, bool write, Gathered& g) {
  auto add = [&](const at::Tensor& t) {
    if (!t.defined()) return;
    g.any_foo = g.any_foo || t.device().type() == c10::DeviceType::PrivateUse1;
    g.tensors.push_back(t);
    g.writes.push_back(write);
  };
  if (v.isTensor()) {
    add(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) add(t);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) {
      if (e.isTensor()) add(e.toTensor());
    }
  }
}

std::string site() {
  RaceSiteProvider provider = g_site.load(std::memory_order_relaxed);
  return provider ? provider() : std::string();
}

// What an operator declared on top of: restored when it returns. Or, for
// a CPU operator, that it is the outermost one checking the host's
// accesses: the operators it calls touch its tensors again, and one access
// of the host must make one report, not one per nested operator.
struct Declared final : at::ObserverContext {
  explicit Declared(fooRaceMark m) : mark(m) {}
  Declared() = default;
  fooRaceMark mark{};
  bool host_operator = false;
};
thread_local bool t_in_host_operator = false;

// Declares the foo tensors among `tensors` as accesses of the calling
// thread's next launch (writes where `writes` says so); false if there was
// none to declare.
bool declare_foo_tensors(const std::vector<at::Tensor>& tensors, const std::vector<bool>& writes, const char* op) {
  std::vector<std::string> whats;
  std::vector<fooRaceAccess> accesses;
  std::vector<size_t> access_what;  // index into whats
  whats.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    if (!t.defined() || t.device().type() != c10::DeviceType::PrivateUse1) continue;
    std::vector<ByteRun> runs = byte_runs(t, kMaxRuns);
    if (runs.empty()) continue;
    whats.push_back(describe(t));
    for (const ByteRun& r : runs) {
      accesses.push_back(fooRaceAccess{r.begin, r.bytes, i < writes.size() && writes[i] ? 1 : 0, nullptr});
      access_what.push_back(whats.size() - 1);
    }
  }
  for (size_t i = 0; i < accesses.size(); ++i) accesses[i].what = whats[access_what[i]].c_str();
  if (accesses.empty()) return false;
  fooRaceDeclare(accesses.data(), accesses.size(), op, site().c_str());
  return true;
}

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  if (fooRaceOnExecutorThread() || fooRaceGetMode() == fooRaceModeOff) return nullptr;
  const OpInfo* info = op_info(fn);
  if (info == nullptr || info->metadata_only) return nullptr;
  Gathered g;
  c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) gather(inputs[i], i < info->writes.size() && info->writes[i], g);
  if (g.tensors.empty()) return nullptr;
  if (!g.any_foo) {
    // CPU tensors in, a foo device named (`x.to("foo")`, `_to_copy`): the
    // result is made on foo by the operators it calls, which declare their
    // own accesses (a pinned source is read on the stream, in order).
    for (const c10::IValue& v : inputs) {
      if (v.isDevice() && v.toDevice().type() == c10::DeviceType::PrivateUse1) return nullptr;
    }
  }
  if (g.any_foo) {
    // A foo operator: its foo tensors are the accesses of its launch.
    auto declared = std::make_unique<Declared>(fooRaceGetMark());
    if (!declare_foo_tensors(g.tensors, g.writes, info->name.c_str())) return nullptr;
    return declared;
  }
  // A CPU operator: the host touches its tensors now. Pinned buffers of
  // asynchronous copies, and CPU aliases of foo memory (the fallback's
  // synchronous path), can be in queued work's way; pageable memory cannot
  // (pageable copies block the host).
  if (t_in_host_operator) return nullptr;
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const at::Tensor& t = g.tensors[i];
    if (!t.is_cpu()) continue;
    // One range per tensor: the host's strided accesses are rare enough.
    std::vector<ByteRun> span = byte_runs(t, 1);
    if (span.empty()) continue;
    const char* begin = span[0].begin;
    size_t bytes = span[0].bytes;
    fooPointerAttributes attributes;
    if (fooPointerGetAttributes(&attributes, begin) != fooSuccess || attributes.type == fooMemoryTypeUnregistered) {
      continue;
    }
    if (is_registered_buffer(begin, bytes)) continue;  // another library's thread, working for a kernel
    // The race (raise mode) fails the thread's next foo call: a callback
    // cannot raise.
    fooRaceHostAccess(begin, bytes, g.writes[i] ? 1 : 0, describe(t).c_str(), info->name.c_str(), site().c_str());
  }
  // Set last: nothing above may leave it set if it throws (RecordFunction
  // then calls on_op_end without this context).
  auto outermost = std::make_unique<Declared>();
  outermost->host_operator = true;
  t_in_host_operator = true;
  return outermost;
}

void warn_new_reports() {
  if (fooRaceGetMode() != fooRaceModeWarn) return;
  std::vector<std::string> messages;
  fooRaceTakeNewReports(
      [](const fooRaceReport* r, void* out) {
        static_cast<std::vector<std::string>*>(out)->push_back(race_message(*r));
      },
      &messages);
  for (const std::string& m : messages) TORCH_WARN(m);
}

void on_op_end(const at::RecordFunction&, at::ObserverContext* context) {
  if (fooRaceOnExecutorThread()) return;
  // Declared accesses that no launch took (views, metadata-only operators)
  // must not be attributed to a later, unrelated launch; an enclosing
  // operator's stay for its own launch.
  if (auto* declared = static_cast<Declared*>(context)) {
    if (declared->host_operator) {
      t_in_host_operator = false;
    } else {
      fooRaceRestoreMark(declared->mark);
    }
  }
  warn_new_reports();
}

}  // namespace

bool race_check_on() { return fooRaceGetMode() != fooRaceModeOff; }

void launch_with_accesses(const std::vector<at::Tensor>& tensors, const std::vector<bool>& writes, const char* op,
                          const std::function<void()>& launch) {
  if (!race_check_on() || fooRaceOnExecutorThread()) return launch();
  fooRaceMark mark = fooRaceGetMark();
  declare_foo_tensors(tensors, writes, op);
  try {
    launch();
  } catch (...) {
    fooRaceRestoreMark(mark);  // a launch refused before foo_sim took the accesses
    throw;
  }
  warn_new_reports();
}

void set_race_site_provider(RaceSiteProvider provider) { g_site.store(provider); }

void sync_race_hooks() {
  std::lock_guard<std::mutex> lock(g_hook_mutex);
  bool on = fooRaceGetMode() != fooRaceModeOff;
  if (on && g_handle == at::INVALID_CALLBACK_HANDLE) {
    g_handle = at::addGlobalCallback(
        at::RecordFunctionCallback(&on_op_start, &on_op_end).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
  } else if (!on && g_handle != at::INVALID_CALLBACK_HANDLE) {
    at::removeCallback(g_handle);
    g_handle = at::INVALID_CALLBACK_HANDLE;
  }
}

}  // namespace foo::aten

namespace foo::aten {
namespace {

// FOO_SIM_RACE_CHECK turns the detector on in foo_sim; the operator hook
// that declares accesses is installed when the library loads, so that
// programs that never reach the Python layer (C++ programs) are checked too.
const bool g_hooks_at_load = [] {
  const char* check = std::getenv("FOO_SIM_RACE_CHECK");
  if (check != nullptr && std::strcmp(check, "") != 0 && std::strcmp(check, "0") != 0) sync_race_hooks();
  return true;
}();

}  // namespace
}  // namespace foo::aten
