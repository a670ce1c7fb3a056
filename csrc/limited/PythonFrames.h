// Reading the calling thread's Python frames through Python's Limited API
// (no frame internals, no torch_python). Every function takes the GIL
// itself and returns nothing on a thread that never ran Python.
#pragma once

#include <functional>
#include <string>

namespace foo::limited {

// Calls visit(filename, line, function) from the innermost frame outwards
// until it returns false.
void walk_python_frames(const std::function<bool(const std::string&, int, const std::string&)>& visit);

// "file:line" of the innermost frame outside torch and torch_foo, or "".
std::string user_site();

}  // namespace foo::limited
