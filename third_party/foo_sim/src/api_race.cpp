// C API: the stream race detector (foo_sim/foo_race.h).
#include <mutex>
#include <thread>
#include <vector>

#include "error.h"
#include "race_detector.h"
#include "race_state.h"
#include "runtime.h"

using foo_sim::fail;
namespace race = foo_sim::race;

extern "C" {

fooError_t fooRaceSetMode(fooRaceMode mode) {
  if (mode != fooRaceModeOff && mode != fooRaceModeWarn && mode != fooRaceModeRaise) {
    return fail(fooErrorInvalidValue, foo_sim::format("fooRaceSetMode: unknown mode %d", static_cast<int>(mode)));
  }
  // The runtime reads FOO_SIM_RACE_CHECK first, so that this call wins.
  foo_sim::Runtime* rt;
  if (fooError_t e = foo_sim::Runtime::get(&rt)) return e;
  race::State& st = race::state();
  std::lock_guard<std::mutex> lock(st.mutex);
  if (race::g_mode.load() == fooRaceModeOff && mode != fooRaceModeOff) st.reset();
  race::g_mode.store(mode);
  return fooSuccess;
}

fooRaceMode fooRaceGetMode(void) {
  foo_sim::Runtime* rt;
  if (foo_sim::Runtime::get(&rt) != fooSuccess) return fooRaceModeOff;
  return static_cast<fooRaceMode>(race::g_mode.load());
}

fooError_t fooRaceDeclare(const fooRaceAccess* accesses, size_t count, const char* op, const char* site) {
  if (!race::on() || foo_sim::Scheduler::on_executor_thread()) return fooSuccess;
  if (accesses == nullptr && count != 0) return fail(fooErrorInvalidValue, "fooRaceDeclare: accesses is NULL");
  race::declare(accesses, count, op, site);
  return fooSuccess;
}

void fooRaceClearDeclared(void) {
  if (race::on()) race::clear_declared();
}

fooRaceMark fooRaceGetMark(void) {
  if (!race::on()) return fooRaceMark{0, 0};
  return race::mark();
}

void fooRaceRestoreMark(fooRaceMark mark) {
  if (race::on()) race::restore(mark);
}

fooError_t fooRaceDeclareAllocation(const void* ptr, size_t bytes, fooStream_t stream) {
  if (!race::on() || ptr == nullptr || bytes == 0) return fooSuccess;
  foo_sim::Runtime* rt;
  if (fooError_t e = foo_sim::Runtime::get(&rt)) return e;
  race::declare_allocation(ptr, bytes, rt->resolve(stream));
  return fooSuccess;
}

fooError_t fooRaceNoteFree(const void* ptr, size_t bytes) {
  if (race::on() && ptr != nullptr) race::note_free(ptr, bytes);
  return fooSuccess;
}

fooError_t fooRaceHostAccess(const void* ptr, size_t bytes, int write, const char* what, const char* op,
                             const char* site) {
  if (!race::on() || ptr == nullptr || bytes == 0 || foo_sim::Scheduler::on_executor_thread()) return fooSuccess;
  return race::host_access(ptr, bytes, write != 0, what, op, site);
}

int fooRaceOnExecutorThread(void) { return foo_sim::Scheduler::on_executor_thread() ? 1 : 0; }

fooError_t fooRaceGetReports(fooRaceReportFn_t fn, void* userData) {
  if (fn == nullptr) return fail(fooErrorInvalidValue, "fooRaceGetReports: fn is NULL");
  race::State& st = race::state();
  std::lock_guard<std::mutex> lock(st.mutex);
  for (const race::Report& r : st.reports) {
    fooRaceReport out;
    race::State::fill(r, &out);
    fn(&out, userData);
  }
  return fooSuccess;
}

void fooRaceClearReports(void) {
  race::State& st = race::state();
  std::lock_guard<std::mutex> lock(st.mutex);
  st.reports.clear();
  st.report_index.clear();
  st.new_reports.clear();
  st.last_raised.clear();
}

fooError_t fooRaceTakeNewReports(fooRaceReportFn_t fn, void* userData) {
  if (fn == nullptr) return fail(fooErrorInvalidValue, "fooRaceTakeNewReports: fn is NULL");
  race::State& st = race::state();
  std::lock_guard<std::mutex> lock(st.mutex);
  auto it = st.new_reports.find(std::this_thread::get_id());
  if (it == st.new_reports.end()) return fooSuccess;
  std::vector<size_t> taken = std::move(it->second);
  st.new_reports.erase(it);
  for (size_t i : taken) {
    if (i >= st.reports.size()) continue;
    fooRaceReport out;
    race::State::fill(st.reports[i], &out);
    fn(&out, userData);
  }
  return fooSuccess;
}

fooError_t fooRaceGetRaisedReport(fooRaceReportFn_t fn, void* userData) {
  if (fn == nullptr) return fail(fooErrorInvalidValue, "fooRaceGetRaisedReport: fn is NULL");
  race::State& st = race::state();
  std::lock_guard<std::mutex> lock(st.mutex);
  auto it = st.last_raised.find(std::this_thread::get_id());
  if (it == st.last_raised.end() || it->second >= st.reports.size()) return fooSuccess;
  fooRaceReport out;
  race::State::fill(st.reports[it->second], &out);
  fn(&out, userData);
  return fooSuccess;
}

}  // extern "C"
