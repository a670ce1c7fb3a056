# What C++ programs use from an installed torch_foo: libtorch_foo, the
# headers of the layers below Python that make up its API (the c10-level
# runtime: device, guard, streams, events, caching allocator, as c10/cuda's
# headers are torch's; the ATen-level one: generator, graphs, hooks, pinned
# host allocator, as ATen/cuda's) with foo_sim's C API, which those headers
# include, and the TorchFoo CMake package. All of it under torch_foo/, so
# that the wheel and `cmake --install` lay it out alike:
# <prefix>/torch_foo/{lib,include,share}.
include(CMakePackageConfigHelpers)

# The package's version is the Python project's.
file(STRINGS pyproject.toml torch_foo_version_line REGEX "^version = ")
string(REGEX REPLACE "^version = \"([^\"]+)\".*" "\\1" TORCH_FOO_VERSION "${torch_foo_version_line}")

# torch 2.13 leaves its C++ ABI to the compiler's default (TORCH_CXX_FLAGS
# is empty); the package states the one torch was built with, so that a
# program built with another default still links.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env TORCH_DEVICE_BACKEND_AUTOLOAD=0
          ${Python_EXECUTABLE} -c "import torch; print(int(torch.compiled_with_cxx11_abi()))"
  OUTPUT_VARIABLE TORCH_FOO_CXX11_ABI OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)

set(TORCH_FOO_PUBLIC_LAYERS runtime aten_runtime)
set(TORCH_FOO_INSTALL_INCLUDEDIR torch_foo/include)
set(TORCH_FOO_INSTALL_LIBDIR torch_foo/lib)
set(TORCH_FOO_INSTALL_CMAKEDIR torch_foo/share/cmake/TorchFoo)

foreach(layer IN LISTS TORCH_FOO_PUBLIC_LAYERS)
  install(DIRECTORY csrc/${layer}/ DESTINATION ${TORCH_FOO_INSTALL_INCLUDEDIR}/${layer} FILES_MATCHING PATTERN "*.h")
endforeach()
install(DIRECTORY third_party/foo_sim/include/ DESTINATION ${TORCH_FOO_INSTALL_INCLUDEDIR})

configure_package_config_file(cmake/TorchFooConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/TorchFooConfig.cmake
  INSTALL_DESTINATION ${TORCH_FOO_INSTALL_CMAKEDIR}
  PATH_VARS TORCH_FOO_INSTALL_INCLUDEDIR TORCH_FOO_INSTALL_LIBDIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/TorchFooConfigVersion.cmake
  VERSION ${TORCH_FOO_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/TorchFooConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/TorchFooConfigVersion.cmake
        DESTINATION ${TORCH_FOO_INSTALL_CMAKEDIR})
