# TORCH_FOO_LIMITED_API=ON: torch_foo's Python layer without pybind11 and
# without torch_python (docs/limited-api.md). The bindings are dispatcher
# operators (torch.ops._foo_C, csrc/limited/*Ops.cpp) in an extension
# module built against Python's stable ABI, torch_foo/_C_limited.abi3.so,
# and torch_foo/_C.py gives the Python layer the default build's names.
if(CMAKE_VERSION VERSION_LESS 3.26)
  message(FATAL_ERROR "TORCH_FOO_LIMITED_API needs CMake 3.26 or newer (Python_add_library's USE_SABI)")
endif()
find_package(Python 3.11 REQUIRED COMPONENTS Interpreter Development.SABIModule)

file(GLOB TORCH_FOO_LIMITED_SOURCES CONFIGURE_DEPENDS csrc/limited/*.cpp)
Python_add_library(_C_limited MODULE USE_SABI 3.11 WITH_SOABI ${TORCH_FOO_LIMITED_SOURCES})
torch_foo_layer_includes(_C_limited runtime aten limited)
target_compile_definitions(_C_limited PRIVATE Py_LIMITED_API=0x030B0000)
target_link_libraries(_C_limited PRIVATE torch_foo)
target_compile_options(_C_limited PRIVATE -Wall -Wextra -Wno-unused-parameter)
set_target_properties(_C_limited PROPERTIES INSTALL_RPATH "$ORIGIN/lib;$ORIGIN/../torch/lib")

install(TARGETS _C_limited LIBRARY DESTINATION torch_foo)
install(FILES csrc/limited/_C.py DESTINATION torch_foo)
