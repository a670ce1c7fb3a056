#include "aten/Sleep.h"

#include <chrono>
#include <thread>

#include <c10/util/Exception.h>

#include "aten/Launch.h"
#include "runtime/FooLaunch.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooStream.h"

namespace foo::aten {

void sleep(double ms) {
  TORCH_CHECK(ms >= 0, "_sleep: expected a non-negative number of milliseconds, got ", ms);
  launch_kernel(getCurrentFooStream(), [ms] {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
  }, "foo::_sleep");
}

void warn_in_kernel(const std::string& message) {
  launch_op(current_device(), "foo::_warn_in_kernel", [message] { TORCH_WARN(message); }, /*serial=*/true);
}

}  // namespace foo::aten
