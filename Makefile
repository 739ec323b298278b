# Targets behind the README's two commands (scripts/demo and scripts/test, which first
# install make itself through scripts/bootstrap):
#   make demo   sets up, builds the gpufit binary alone and runs the main job on the embedded
#               synthetic cluster
#   make test   sets up, builds everything and runs all tests
# Also: make check (the fast inner loop: the unit tests of the components a change touches,
#   scripts/check), make asan-build and make asan-test (AddressSanitizer + UBSan build and its
#   tests: all but the whole-trace acceptance runs, which the Release run of make test covers and
#   the sanitizer build does not build), make bench,
#   make fuzz (libFuzzer targets of fuzz/, built with clang in build-fuzz, run briefly: scripts/fuzz),
#   make package (the Debian package build/gpufit_<version>_<arch>.deb: cmake/packaging.cmake),
#   make image (the OCI image build/image/gpufit-<version>.oci.tar: packaging/image/build-image.sh),
#   make release (build/release/: the tarball, SHA256SUMS and krew manifest: packaging/release.sh).
# Every build compiles through ccache when it is installed (CMakeLists.txt says how).
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)

.PHONY: setup build build-gpufit demo test check asan-build asan-test fuzz bench package image release clean

setup:
	bash scripts/bootstrap

$(BUILD)/build.ninja: | setup
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUFIT_WERROR=ON

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The demo needs the gpufit binary alone: about a third of the targets of `build`.
build-gpufit: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target gpufit

demo: build-gpufit
	$(BUILD)/apps/gpufit/gpufit demo

test: build
	bash scripts/bootstrap --tests
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

check: setup $(BUILD)/build.ninja
	bash scripts/check $(BUILD)

$(ASAN_BUILD)/build.ninja: | setup
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUFIT_WERROR=ON -DGPUFIT_SANITIZE=ON -DGPUFIT_BENCH=OFF \
	  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"

asan-build: setup $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# What runs under the sanitizers is chosen by what they can find (issue 51). AddressSanitizer and
# UBSan report a memory or UB error on the smallest input that reaches the code: every unit test,
# every fuzz target (make fuzz), and every end-to-end test of inputs, protocols and live servers
# (bad input, serve, the control plane, apply, Prometheus, the demo) run under them. The
# end-to-end tests that replay a whole real trace (GenTD26, openb) through the planners are left
# to the Release run, which checks their figures: the code they drive is the code the smaller
# tests drive, and they took 1,059 of the 2,128 test-seconds of the sanitizer run (measured
# 2026-12-07 on 2 cores: 21 min of wall time).
ASAN_WHOLE_TRACE_TESTS = ^(PrometheusPlan|PlanOnGenTd26|Progress|BacktestDocs|BacktestGenTd26|PlanIsolation|OpenbTrace)\.|^(Formats\.YamlCsvAndHtmlOfOnePlan|Report\.GenTd26PlanUnderFiveMegabytes|TerminalTable\.FitsIn120ColumnsAndMatchesThePlanJsonOnGenTd26|MigPlan\.GenTd26OnH100IsOptimalAndSafe|MigPlan\.SingleStrategyWithNodesGivesEachNodeOneDeviceType)$$

asan-test: asan-build
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -E '$(ASAN_WHOLE_TRACE_TESTS)'


fuzz: setup
	bash scripts/fuzz

package: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target gpufit gpufit_man
	cd $(BUILD) && cpack -G DEB

# The version is the project's (CMakeLists.txt), as `gpufit --version` prints it.
VERSION = $(shell sed -n 's/^project.gpufit VERSION \([0-9.]*\) .*/\1/p' CMakeLists.txt)

image: build-gpufit
	bash packaging/image/build-image.sh $(BUILD)/apps/gpufit/gpufit $(VERSION) $(BUILD)/image

release: build-gpufit
	bash packaging/release.sh $(BUILD)/apps/gpufit/gpufit $(VERSION) $(BUILD)/release

bench: build
	$(BUILD)/bench/plan_bench
	$(BUILD)/bench/sim_bench
	$(BUILD)/bench/training_bench
	$(BUILD)/bench/inference_bench
	$(BUILD)/bench/prometheus_bench

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
