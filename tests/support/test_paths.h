// Where the tests find the checkout, the build, the real traces, the built binary and Node.js.
// Absolute paths fixed when CMake configures the build (tests/support/test_paths.cpp.in, made
// into one small object of gpufit_test_paths). They live in that one object rather than in
// compile definitions so that every other test object is the same in any checkout: ccache,
// with base_dir set to the checkout (CMakeLists.txt), then reuses them in a fresh clone.
#pragma once

namespace gpufit::test_paths {

// The checkout's top folder (CMAKE_SOURCE_DIR), no trailing slash.
const char* SourceDir();
// The real public traces when $GPUFIT_DATA is not set: ../shared/data beside the checkout.
const char* DataDefault();
// The `gpufit` binary of this build (apps/gpufit/gpufit); the end-to-end tests run it.
const char* GpufitBin();
// Node.js, found at configure time (node or nodejs); it runs tools/validate-manifests.
const char* Node();

}  // namespace gpufit::test_paths
