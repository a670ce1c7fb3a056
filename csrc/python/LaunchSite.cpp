// Tells the runtime where in the user's Python program the host is, for
// errors raised by the call that launched a failing kernel and for the
// kernels launched while launch sites are recorded.
#include "python/Bindings.h"
#include "python/UserSite.h"
#include "runtime/FooException.h"

namespace foo::python {

void install_launch_site_provider() { set_launch_site_provider(&user_site); }

}  // namespace foo::python
