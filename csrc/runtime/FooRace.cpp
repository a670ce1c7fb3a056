#include "runtime/FooRace.h"

#include <atomic>
#include <cstdio>

#include <c10/util/Exception.h>

namespace foo {
namespace {

std::atomic<RaceThrower> g_thrower{nullptr};

std::string stream_name(const fooRaceSide& s) {
  if (s.device < 0) return "the host";
  if (s.isDefaultStream) return "the default stream of foo:" + std::to_string(s.device);
  char handle[32];
  std::snprintf(handle, sizeof handle, "%#zx", reinterpret_cast<size_t>(s.handle));
  return "foo:" + std::to_string(s.device) + " stream foo_stream=" + handle;
}

std::string side_text(const fooRaceSide& s) {
  std::string out = std::string(s.write ? "write" : "read") + " by " + (*s.op ? s.op : "a kernel");
  if (*s.what) out += " of " + std::string(s.what);
  out += s.device < 0 ? " on the host" : " on " + stream_name(s);
  out += ", ";
  out += *s.site ? std::string("at ") + s.site : std::string("from a thread without Python code (autograd engine?)");
  return out;
}

// "file.py:12" -> "line 12 of file.py"; "" if unknown.
std::string where(const char* site) {
  std::string s = site;
  size_t colon = s.rfind(':');
  if (s.empty() || colon == std::string::npos) return "the second access";
  return "line " + s.substr(colon + 1) + " of " + s.substr(0, colon);
}

}  // namespace

std::string race_fix(const fooRaceReport& r) {
  std::string first_stream = stream_name(r.first);
  switch (r.kind) {
    case fooRaceKindUseAfterFree:
      return "the tensor used at " + std::string(*r.first.site ? r.first.site : "the first access") + " on " +
             first_stream + " was freed while that use could still be pending, and its memory went to other work; "
             "call `t.record_stream(s)` on it (s: that stream) after that use, before it is freed, or make its "
             "stream wait: `torch.foo.current_stream().wait_stream(s)` before it is freed";
    case fooRaceKindHost:
      if (r.first.device < 0) break;
      return "the host touched memory that queued work on " + first_stream +
             " may still use; synchronize before " + where(r.second.site) +
             " (`s.synchronize()`, or an event recorded after that work and `event.synchronize()`)";
    default:
      break;
  }
  return "call `torch.foo.current_stream().wait_stream(s)` before " + where(r.second.site) + ", with s = " +
         first_stream + " (the stream of the first access) and the current stream being " +
         stream_name(r.second) + "; or record an event on s after the first access and wait on it";
}

std::string race_message(const fooRaceReport& r) {
  char head[96];
  std::snprintf(head, sizeof head, "stream race on %zu bytes at %p:\n", r.bytes, r.address);
  std::string out = std::string("torch_foo found a ") + head;
  out += "  first:  " + side_text(r.first) + "\n";
  out += "  second: " + side_text(r.second) + "\n";
  out += "Nothing orders the second after the first. Fix: " + race_fix(r) + ".";
  if (r.count > 1) out += " (seen " + std::to_string(r.count) + " times)";
  return out;
}

void set_race_thrower(RaceThrower thrower) { g_thrower.store(thrower); }

void throw_race_error(const char* file, int line) {
  std::string message;
  fooRaceGetRaisedReport(
      [](const fooRaceReport* r, void* out) { *static_cast<std::string*>(out) = race_message(*r); }, &message);
  if (message.empty()) message = std::string("torch_foo found a stream race: ") + fooGetErrorDetail();
  (void)fooGetLastError();
  if (RaceThrower thrower = g_thrower.load()) thrower(message);
  throw c10::Error(c10::SourceLocation{__func__, file, static_cast<uint32_t>(line)}, message);
}

}  // namespace foo
