# gpufit_test(NAME LIBS...): builds NAME.cpp beside the caller into a GoogleTest binary
# linked with LIBS and registers its tests with ctest. Tests find the real traces through
# the GPUFIT_DATA environment variable (default: ../shared/data beside the checkout).
set(GPUFIT_DATA_DEFAULT "${CMAKE_SOURCE_DIR}/../shared/data")
function(gpufit_test name)
  add_executable(${name} ${name}.cpp)
  target_link_libraries(${name} PRIVATE ${ARGN} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name} PRIVATE GPUFIT_DATA_DEFAULT="${GPUFIT_DATA_DEFAULT}")
  if(NOT GPUFIT_FUZZ)  # a fuzz build builds no tests
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
  endif()
endfunction()
