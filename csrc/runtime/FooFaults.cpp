#include "FooFaults.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include <c10/util/Exception.h>

namespace foo {

namespace detail {
std::atomic<bool> faults_armed{false};
}  // namespace detail

namespace {

struct Fault {
  enum class Kind { kOom, kKernel } kind;
  std::string op;    // kKernel: the operator, "aten::" added to a bare name
  int64_t n = 0;     // fires at the n-th event it counts
  int64_t seen = 0;  // events counted so far
  std::string text;  // as the spec says it
};

using FaultSet = std::vector<Fault>;

std::mutex g_mutex;
// The active set is the last; the ones below come back as pops uncover them.
std::vector<FaultSet> g_stack;

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::optional<int64_t> positive(const std::string& text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  int64_t v = std::stoll(text);
  return v >= 1 ? std::optional<int64_t>(v) : std::nullopt;
}

// Parses `spec` into `out`; returns what is wrong ("" if nothing).
std::string parse(const std::string& spec, FaultSet* out) {
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string item = trimmed(spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    if (item.empty()) return "an empty fault (expected oom@N or kernel@OP:N, separated by commas)";
    Fault fault;
    fault.text = item;
    if (item.rfind("oom@", 0) == 0) {
      auto n = positive(item.substr(4));
      if (!n) return "'" + item + "': expected oom@N with N a positive integer";
      fault.kind = Fault::Kind::kOom;
      fault.n = *n;
    } else if (item.rfind("kernel@", 0) == 0) {
      size_t colon = item.rfind(':');
      auto n = colon == std::string::npos || colon < 7 ? std::nullopt : positive(item.substr(colon + 1));
      std::string op = colon == std::string::npos ? "" : item.substr(7, colon - 7);
      if (!n || op.empty() || op.back() == ':') {
        return "'" + item + "': expected kernel@OP:N with OP an operator (aten::mm) and N a positive integer";
      }
      fault.kind = Fault::Kind::kKernel;
      fault.op = op.find("::") == std::string::npos ? "aten::" + op : op;
      fault.n = *n;
    } else {
      return "'" + item + "': expected oom@N or kernel@OP:N";
    }
    out->push_back(std::move(fault));
  }
  return "";
}

// With g_mutex held.
void update_armed() {
  bool armed = false;
  if (!g_stack.empty()) {
    for (const Fault& f : g_stack.back()) armed = armed || f.seen < f.n;
  }
  detail::faults_armed.store(armed, std::memory_order_relaxed);
}

// "aten::mul.Tensor" is launched as OP "aten::mul.Tensor" and "aten::mul".
bool names(const std::string& op, const char* op_name) {
  std::string_view name(op_name);
  if (name == op) return true;
  size_t dot = name.find('.');
  return dot != std::string_view::npos && name.substr(0, dot) == op;
}

// Counts an event of `kind` with the faults that match; the one that fires, if any.
template <class Matches>
std::string take(Fault::Kind kind, Matches matches) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_stack.empty()) return "";
  std::string fired;
  for (Fault& f : g_stack.back()) {
    if (f.kind != kind || f.seen >= f.n || !matches(f)) continue;
    if (++f.seen == f.n && fired.empty()) fired = f.text;
  }
  if (!fired.empty()) update_armed();
  return fired;
}

}  // namespace

std::string check_fault_spec(const std::string& spec) {
  FaultSet faults;
  return parse(spec, &faults);
}

void push_faults(const std::string& spec) {
  FaultSet faults;
  std::string problem = parse(spec, &faults);
  TORCH_CHECK_VALUE(problem.empty(), "fault spec '", spec, "': ", problem);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_stack.push_back(std::move(faults));
  update_armed();
}

void pop_faults() {
  std::lock_guard<std::mutex> lock(g_mutex);
  TORCH_CHECK(!g_stack.empty(), "pop_faults without push_faults");
  g_stack.pop_back();
  update_armed();
}

void arm_faults_from_environment() {
  const char* raw = std::getenv("FOO_SIM_FAULTS");
  if (raw == nullptr || trimmed(raw).empty()) return;
  FaultSet faults;
  std::string problem = parse(raw, &faults);
  TORCH_CHECK(problem.empty(), "FOO_SIM_FAULTS='", raw, "' is invalid: ", problem);
  std::lock_guard<std::mutex> lock(g_mutex);
  static bool armed_once = false;  // a start that failed later is retried by the next call
  if (armed_once) return;
  armed_once = true;
  g_stack.insert(g_stack.begin(), std::move(faults));
  update_armed();
}

std::string take_oom_fault() {
  return take(Fault::Kind::kOom, [](const Fault&) { return true; });
}

std::string take_kernel_fault(const char* op_name) {
  return take(Fault::Kind::kKernel, [op_name](const Fault& f) { return names(f.op, op_name); });
}

}  // namespace foo
