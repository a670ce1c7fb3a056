// A minimal JSON writer for the operators that return structured records
// (memory snapshots, race reports): the dispatcher's types have no nested
// heterogeneous dictionary, so those return one JSON string that the
// Python layer loads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace foo::limited {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // A key inside an object; the next call writes its value.
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(bool v);
  JsonWriter& null();

  std::string str() && { return std::move(out_); }

 private:
  void separate();

  std::string out_;
  bool need_comma_ = false;
};

}  // namespace foo::limited
