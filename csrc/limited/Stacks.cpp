#include "limited/Stacks.h"

#include "limited/PythonFrames.h"

namespace foo::limited {
namespace {

std::shared_ptr<GatheredStack> python_stack() {
  auto stack = std::make_shared<GatheredStack>();
  walk_python_frames([&stack](const std::string& file, int line, const std::string& name) {
    stack->python.push_back({file, line, name});
    return true;
  });
  return stack;
}

}  // namespace

std::shared_ptr<c10::GatheredContext> gather_python_stack() { return python_stack(); }

std::shared_ptr<c10::GatheredContext> gather_python_and_cpp_stack() {
  auto stack = python_stack();
  stack->cpp = torch::CapturedTraceback::gather(/*python=*/false, /*script=*/false, /*cpp=*/true);
  return stack;
}

}  // namespace foo::limited
