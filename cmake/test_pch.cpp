// Translation unit of the shared test precompiled header (cmake/gpufit_test.cmake).
