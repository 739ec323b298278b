// Where the tests and benchmarks find the checkout, the real traces, the built binary and
// Node.js. Absolute paths fixed when CMake configures the build (tests/support/test_paths.cpp.in,
// made into one small object of gpufit_test_paths). They live in that one object rather than in
// compile definitions so that every other test object is the same in any checkout: ccache, with
// base_dir set to the checkout (CMakeLists.txt), then reuses them in a fresh clone.
// None of these checks that the path exists; a test that needs a trace skips when it is absent.
#pragma once

#include <string>
#include <string_view>

namespace gpufit::test_paths {

// The checkout's top folder (CMAKE_SOURCE_DIR), no trailing slash.
const char* SourceDir();
// A file or folder of the checkout by its path from the top: SourcePath("docs/bad-inputs.md").
std::string SourcePath(std::string_view relative);
// The real public traces: $GPUFIT_DATA when set, else ../shared/data beside the checkout.
std::string DataDir();
// The `gpufit` binary of this build (apps/gpufit/gpufit); the end-to-end tests run it.
const char* GpufitBin();
// Node.js, found at configure time (node or nodejs); it runs tools/validate-manifests.
const char* Node();

}  // namespace gpufit::test_paths
