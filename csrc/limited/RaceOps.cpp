// torch.ops._foo_C: the stream race detector's mode and reports.
#include <string>

#include <torch/library.h>

#include "aten/RaceAccesses.h"
#include "limited/Json.h"
#include "runtime/FooException.h"
#include "runtime/FooRace.h"

namespace foo::limited {
namespace {

void write_side(JsonWriter& out, const fooRaceSide& s) {
  out.begin_object();
  out.key("op").value(s.op).key("access").value(s.write ? "write" : "read").key("tensor").value(s.what);
  out.key("site").value(s.site);
  out.key("device");
  if (s.device < 0) {
    out.null();
  } else {
    out.value("foo:" + std::to_string(s.device));
  }
  out.key("stream");
  if (s.device < 0) {
    out.null();
  } else {
    out.value(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(s.handle)));
  }
  out.key("default_stream").value(s.isDefaultStream != 0);
  out.end_object();
}

std::string race_reports_json() {
  JsonWriter out;
  out.begin_array();
  fooRaceGetReports(
      [](const fooRaceReport* r, void* p) {
        auto& out = *static_cast<JsonWriter*>(p);
        out.begin_object();
        out.key("kind").value(r->kind == fooRaceKindUseAfterFree ? "use after free"
                              : r->kind == fooRaceKindHost       ? "host"
                                                                 : "unordered");
        out.key("first");
        write_side(out, r->first);
        out.key("second");
        write_side(out, r->second);
        out.key("bytes").value(static_cast<uint64_t>(r->bytes)).key("count").value(static_cast<uint64_t>(r->count));
        out.key("fix").value(race_fix(*r)).key("message").value(race_message(*r));
        out.end_object();
      },
      &out);
  out.end_array();
  return std::move(out).str();
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(_foo_C, m) {
  m.def("race_set_mode(int mode) -> ()", [](int64_t mode) {
    FOO_CHECK(fooRaceSetMode(static_cast<fooRaceMode>(mode)));
    aten::sync_race_hooks();
  });
  m.def("race_get_mode() -> int", [] {
    fooRaceMode mode = fooRaceGetMode();
    aten::sync_race_hooks();  // FOO_SIM_RACE_CHECK may have turned it on
    return static_cast<int64_t>(mode);
  });
  m.def("race_reports() -> str", &race_reports_json);
  m.def("race_clear_reports() -> ()", [] { fooRaceClearReports(); });
}

}  // namespace foo::limited
