# gpufit_test(NAME LIBS...): adds NAME.cpp, beside the caller, to the test binary of the
# caller's folder, linked with LIBS, and registers its tests with ctest. One binary per folder
# (gpufit_<component>_unit_tests, e.g. gpufit_plan_unit_tests for src/gpufit/plan, and
# gpufit_plan_manifests_unit_tests for src/gpufit/plan/manifests) rather than one per file:
# each source is compiled as before, but about 110 links, test listings and copies of
# GoogleTest's main become about 20 (issue 36). ctest still runs every test alone, in its own
# process, and labels it `unit` or `acceptance` and with its component.
#
# *_acceptance_test and *_reproduction_test replay whole real traces through code the unit and
# end-to-end tests already cover on small inputs: they go to gpufit_<component>_acceptance_tests,
# label `acceptance`, which the sanitizer build (make asan-test), several times slower, does not
# build: the Release run of make test runs them.
#
# Tests find the real traces through the GPUFIT_DATA environment variable (default:
# ../shared/data beside the checkout, from tests/support/test_paths.h).
set(GPUFIT_DATA_DEFAULT "${CMAKE_SOURCE_DIR}/../shared/data")

# One precompiled header for every test binary: GoogleTest, GoogleMock, nlohmann-json and fmt
# are parsed once per build instead of once per test file (about 3-6 s of CPU each).
add_library(gpufit_test_pch STATIC ${CMAKE_CURRENT_LIST_DIR}/test_pch.cpp)
target_link_libraries(gpufit_test_pch PRIVATE GTest::gtest GTest::gmock nlohmann_json::nlohmann_json fmt::fmt)
target_precompile_headers(gpufit_test_pch PRIVATE
  <gtest/gtest.h> <gmock/gmock.h> <nlohmann/json.hpp> <fmt/format.h>
  <algorithm> <cmath> <filesystem> <fstream> <map> <optional> <sstream> <string> <string_view> <vector>)
# With the header precompiled, GCC 12 at -O3 reports std::string copies inlined into test code
# as memcpy out of bounds (-Warray-bounds, -Wstringop-overflow), the false positives of GCC bug
# 105329 (-Wrestrict, off for all code) under other names: the libstdc++ code they point into
# no longer counts as a system header. Off for tests only.
set(GPUFIT_TEST_NO_FALSE_WARNINGS "$<$<CXX_COMPILER_ID:GNU>:-Wno-stringop-overflow;-Wno-array-bounds>")
target_compile_options(gpufit_test_pch PRIVATE ${GPUFIT_TEST_NO_FALSE_WARNINGS})

# gpufit_use_test_pch(TARGET): a test target outside gpufit_test (the e2e tests) shares it.
function(gpufit_use_test_pch target)
  target_precompile_headers(${target} REUSE_FROM gpufit_test_pch)
  target_link_libraries(${target} PRIVATE nlohmann_json::nlohmann_json fmt::fmt)
  target_compile_options(${target} PRIVATE ${GPUFIT_TEST_NO_FALSE_WARNINGS})
endfunction()

# gpufit_test_component(OUT): the caller's folder as a component name: src/gpufit/plan/manifests
# is plan_manifests, tests/support is support.
function(gpufit_test_component out)
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  string(REGEX REPLACE "^(src/gpufit|tests)/" "" rel "${rel}")
  string(REPLACE "/" "_" rel "${rel}")
  set(${out} ${rel} PARENT_SCOPE)
endfunction()

function(gpufit_test name)
  set(kind unit)
  if(name MATCHES "_(acceptance|reproduction)_test$")
    set(kind acceptance)
    if(GPUFIT_SANITIZE)
      return()
    endif()
  endif()
  gpufit_test_component(component)
  # The component is a second label of every test of this folder (a folder's label reaches
  # its subfolders' tests too): `ctest -L '^plan$'`, as `make check` does.
  get_property(labels DIRECTORY PROPERTY LABELS)
  if(NOT component IN_LIST labels)
    set_property(DIRECTORY APPEND PROPERTY LABELS ${component})
  endif()
  set(target gpufit_${component}_${kind}_tests)
  if(NOT TARGET ${target})
    add_executable(${target})
    target_link_libraries(${target} PRIVATE gpufit_test_paths GTest::gtest GTest::gtest_main GTest::gmock)
    gpufit_use_test_pch(${target})
    if(NOT GPUFIT_FUZZ)  # a fuzz build builds no tests
      gtest_discover_tests(${target} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600 LABELS ${kind})
    endif()
  endif()
  target_sources(${target} PRIVATE ${name}.cpp)
  target_link_libraries(${target} PRIVATE ${ARGN})
endfunction()
