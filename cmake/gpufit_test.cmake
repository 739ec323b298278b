# gpufit_test(NAME LIBS...): builds NAME.cpp beside the caller into a GoogleTest binary
# linked with LIBS and registers its tests with ctest. Tests find the real traces through
# the GPUFIT_DATA environment variable (default: ../shared/data beside the checkout).
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

function(gpufit_test name)
  add_executable(${name} ${name}.cpp)
  target_link_libraries(${name} PRIVATE ${ARGN} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name} PRIVATE GPUFIT_DATA_DEFAULT="${GPUFIT_DATA_DEFAULT}")
  gpufit_use_test_pch(${name})
  # *_acceptance_test and *_reproduction_test replay whole real traces through code the unit
  # and end-to-end tests already cover on small inputs: label `acceptance`, so that the
  # sanitizer build (make asan-test), several times slower, can leave them to the Release run.
  set(labels unit)
  if(name MATCHES "_(acceptance|reproduction)_test$")
    set(labels acceptance)
  endif()
  if(NOT GPUFIT_FUZZ)  # a fuzz build builds no tests
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600 LABELS ${labels})
  endif()
endfunction()
