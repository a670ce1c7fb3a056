# The declarations of ATen's DispatchStub.h that foo's operators must share
# with libtorch_cpu, read from libtorch_cpu itself.
#
# DispatchStub.h declares, under macros that torch's build defines and its
# CMake config does not pass on:
#  - one kernel pointer per CPU capability (HAVE_<capability>_CPU_DEFINITION)
#    in the arguments of DispatchStubImpl::get_call_ptr, which calling a
#    stub (at::native::flash_attention_kernel(at::kCPU, ...)) links against;
#  - one entry slot per device type in DispatchStubImpl (USE_XPU adds one),
#    whose offsets REGISTER_PRIVATEUSE1_DISPATCH writes at.
# A wrong capability set is an undefined symbol when torch_foo loads; a
# wrong slot list writes foo's entry into another device's slot. So the
# capabilities are those whose kernel pointers libtorch_cpu exports, checked
# against get_call_ptr's arity, and the configure fails unless a stub
# compiled here has the size of libtorch_cpu's.
#
# Sets TORCH_FOO_DISPATCH_STUB_DEFINITIONS: the compile definitions of every
# source that includes DispatchStub.h.

set(libtorch_cpu "${TORCH_PACKAGE_DIR}/lib/libtorch_cpu.so")
execute_process(
  COMMAND "${CMAKE_NM}" -D -S --defined-only "${libtorch_cpu}"
  COMMAND grep -E "DispatchStubImpl12get_call_ptrE|_DECLARE_DISPATCH_typeEE[0-9]+[A-Z0-9]+E$|_fused_sdp_choice_stubE$"
  OUTPUT_VARIABLE stub_symbols
  COMMAND_ERROR_IS_FATAL ANY)

# get_call_ptr(DeviceType, void* DEFAULT, void* <capability>...): the
# mangled name repeats void* as S4_.
string(REGEX MATCH "DispatchStubImpl12get_call_ptrEN3c1010DeviceTypeEPv((S4_)*)" call_ptr "${stub_symbols}")
if(NOT call_ptr)
  message(FATAL_ERROR "DispatchStub ABI: ${libtorch_cpu} exports no "
                      "DispatchStubImpl::get_call_ptr(DeviceType, void*...)")
endif()
string(REGEX MATCHALL "S4_" extra_pointers "${CMAKE_MATCH_1}")
list(LENGTH extra_pointers extra_pointers)

# DispatchStub<...>::<capability>: one kernel pointer per stub and
# capability; SVE's macro declares two (SVE128, SVE256).
string(REGEX MATCHALL "_DECLARE_DISPATCH_typeEE[0-9]+[A-Z0-9]+E\n" members "${stub_symbols}")
list(TRANSFORM members REPLACE "^.*EE[0-9]+([A-Z0-9]+)E\n$" "\\1")
list(REMOVE_DUPLICATES members)
list(REMOVE_ITEM members DEFAULT)
set(TORCH_FOO_DISPATCH_STUB_DEFINITIONS "")
foreach(member IN LISTS members)
  if(NOT member MATCHES "^(AVX512|AVX2|VSX|ZVECTOR|SVE128|SVE256)$")
    message(FATAL_ERROR "DispatchStub ABI: ${libtorch_cpu} has kernels for CPU capability ${member}, "
                        "which DispatchStub.h does not declare")
  endif()
  string(REGEX REPLACE "^SVE(128|256)$" "SVE" macro "${member}")
  # Defined empty: DispatchStub.h tests them with #ifdef.
  list(APPEND TORCH_FOO_DISPATCH_STUB_DEFINITIONS "HAVE_${macro}_CPU_DEFINITION=")
endforeach()
list(REMOVE_DUPLICATES TORCH_FOO_DISPATCH_STUB_DEFINITIONS)
list(LENGTH members declared)
if(NOT declared EQUAL extra_pointers)
  message(FATAL_ERROR "DispatchStub ABI: ${libtorch_cpu}'s get_call_ptr takes ${extra_pointers} capability "
                      "kernel pointers, its stubs have ${declared} (${members})")
endif()

# The size of one stub object, which is its DispatchStubImpl's.
string(REGEX MATCH "[0-9a-f]+ ([0-9a-f]+) [BD] _ZN2at6native22_fused_sdp_choice_stubE" stub_object "${stub_symbols}")
if(NOT stub_object)
  message(FATAL_ERROR "DispatchStub ABI: ${libtorch_cpu} exports no _fused_sdp_choice_stub object")
endif()
math(EXPR stub_bytes "0x${CMAKE_MATCH_1}")
set(probe "${CMAKE_CURRENT_BINARY_DIR}/dispatch_stub_abi.cpp")
file(WRITE "${probe}" "#include <ATen/native/DispatchStub.h>\n"
                      "static_assert(sizeof(at::native::DispatchStubImpl) == ${stub_bytes});\n")
list(TRANSFORM TORCH_FOO_DISPATCH_STUB_DEFINITIONS PREPEND "-D" OUTPUT_VARIABLE probe_definitions)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
try_compile(stub_layout_matches
  SOURCES "${probe}"
  CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${TORCH_INCLUDE_DIRS}"
  COMPILE_DEFINITIONS ${TORCH_CXX_FLAGS} ${probe_definitions}
  CXX_STANDARD 20
  OUTPUT_VARIABLE probe_output)
if(NOT stub_layout_matches)
  message(FATAL_ERROR "DispatchStub ABI: a DispatchStubImpl compiled here is not the ${stub_bytes} bytes of "
                      "libtorch_cpu's (torch built with device slots, e.g. USE_XPU, that its headers do not "
                      "declare by themselves?):\n${probe_output}")
endif()
message(STATUS "DispatchStub ABI: ${TORCH_FOO_DISPATCH_STUB_DEFINITIONS}, DispatchStubImpl of ${stub_bytes} bytes")
