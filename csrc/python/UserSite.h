// Where the user's Python program is: the innermost frame outside torch,
// torch_foo and the wrapper code torch.compile generates (the user's line,
// not the library code between it and the operator), as "file:line"; empty
// when Python has no frame here.
#pragma once

#include <string>

namespace foo::python {

// Takes the GIL. Call only from threads that run Python code.
std::string user_site();

}  // namespace foo::python
