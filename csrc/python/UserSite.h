// Where the user's Python program is: the innermost frame outside torch,
// torch_foo and the wrapper code torch.compile generates (the user's line,
// not the library code between it and the operator), as "file:line" in
// storage that lives as long as the process; nullptr when the thread has no
// Python frame. Every launch asks for it while launch sites are recorded or
// the race detector is on, so a site is built once per launching
// instruction and then looked up.
#pragma once

namespace foo::python {

// Takes the GIL on threads that have a Python thread state; nullptr at
// once on the others (the autograd engine's threads may have one, with no
// Python frame: they pay the GIL for nothing).
const char* user_site();

}  // namespace foo::python
