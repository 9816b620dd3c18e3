# Run by ctest (gdn_install_consumer): install the build tree into a scratch
# prefix, configure tests/install against it with CMAKE_PREFIX_PATH set to that
# prefix alone, build it and run it. The installed GDNConfig.cmake must find
# Kokkos by itself; EXPECTED_KOKKOS_DIR (the Kokkos gdn was built with) is only
# compared with the one the consumer found, never passed to it.
foreach(v GDN_BINARY_DIR CONSUMER_SOURCE_DIR WORK_DIR EXPECTED_KOKKOS_DIR CXX)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_install.cmake: ${v} not set")
  endif()
endforeach()
# Nothing from the calling environment may point the consumer at Kokkos.
foreach(v Kokkos_ROOT KOKKOS_ROOT Kokkos_DIR CMAKE_PREFIX_PATH)
  unset(ENV{${v}})
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
step(${CMAKE_COMMAND} --install ${GDN_BINARY_DIR} --prefix ${WORK_DIR}/prefix)
# Kokkos Kernels is no dependency of the library (only its tests link it): the
# consumer configures with every Kokkos Kernels hidden.
step(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/build -DCMAKE_BUILD_TYPE=Release
     -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_CXX_COMPILER=${CXX}
     -DCMAKE_DISABLE_FIND_PACKAGE_KokkosKernels=ON)
# The consumer's Kokkos must be the one gdn was built with.
file(STRINGS ${WORK_DIR}/build/CMakeCache.txt found REGEX "^Kokkos_DIR:")
string(REGEX REPLACE "^Kokkos_DIR:[A-Z]*=" "" found "${found}")
get_filename_component(found "${found}" REALPATH)
get_filename_component(expected "${EXPECTED_KOKKOS_DIR}" REALPATH)
if(NOT found STREQUAL expected)
  message(FATAL_ERROR "the consumer found Kokkos in '${found}', not in '${expected}' (gdn's)")
endif()
message(STATUS "the consumer found gdn's Kokkos by itself: ${found}")
# Without a Kokkos to find, find_package(GDN) fails with a message that names
# what to set (CMAKE_DISABLE_FIND_PACKAGE_Kokkos hides every Kokkos, the hint too).
execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/build_no_kokkos
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_CXX_COMPILER=${CXX}
                        -DCMAKE_DISABLE_FIND_PACKAGE_Kokkos=ON
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[ \n]+" " " said "${out} ${err}")  # CMake wraps its messages
if(NOT rc)
  message(FATAL_ERROR "the consumer configured with no Kokkos to find")
endif()
foreach(expected "gdn needs Kokkos, and none was found" "Set Kokkos_ROOT to the prefix")
  string(FIND "${said}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "with no Kokkos to find, CMake did not say '${expected}':\n${out}${err}")
  endif()
endforeach()
message(STATUS "with no Kokkos to find, find_package(GDN) says what to set")
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
if(RUN_CONSUMER)
  step(${WORK_DIR}/build/gdn_consumer)
endif()
