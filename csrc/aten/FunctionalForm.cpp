#include "aten/FunctionalForm.h"

#include <mutex>
#include <unordered_map>

#include "aten/FallbackArguments.h"

namespace foo::aten {
namespace {

bool writes_nothing(const c10::FunctionSchema& s) {
  for (const auto& a : s.arguments()) {
    if (a.alias_info() && a.alias_info()->isWrite()) return false;
  }
  return true;
}

std::optional<c10::OperatorHandle> search(const c10::FunctionSchema& out) {
  std::vector<const c10::Argument*> inputs;
  for (const auto& a : out.arguments()) {
    if (!fallback::is_out_argument(a)) inputs.push_back(&a);
  }
  if (inputs.size() == out.arguments().size()) return std::nullopt;
  for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name != out.name() || name.overload_name == out.overload_name()) continue;
    auto handle = c10::Dispatcher::singleton().findSchema(name);
    if (!handle || !writes_nothing(handle->schema())) continue;
    const auto& args = handle->schema().arguments();
    bool same = args.size() == inputs.size();
    for (size_t i = 0; same && i < args.size(); ++i) {
      same = args[i].name() == inputs[i]->name() && *args[i].type() == *inputs[i]->type();
    }
    if (same) return handle;
  }
  return std::nullopt;
}

}  // namespace

std::optional<c10::OperatorHandle> functional_form(const c10::OperatorHandle& out_form) {
  // Searched once per operator: the search walks every registered name.
  static std::mutex mutex;
  static std::unordered_map<const c10::FunctionSchema*, std::optional<c10::OperatorHandle>> found;
  std::lock_guard<std::mutex> lock(mutex);
  const c10::FunctionSchema* key = &out_form.schema();
  auto it = found.find(key);
  if (it == found.end()) it = found.emplace(key, search(out_form.schema())).first;
  return it->second;
}

}  // namespace foo::aten
