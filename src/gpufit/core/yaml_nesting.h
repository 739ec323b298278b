// A bound on how deeply a YAML text nests, checked before yaml-cpp parses it: yaml-cpp builds
// nodes by recursion, so a file of 200,000 nested brackets exhausts its depth guard or the stack
// (it said "line 1: bad file"), and the readers after it recurse again. No file gpufit reads
// (kubeconfig, training workloads, inference services, emitted manifests) nests past a few
// tens of levels; 100 flow levels ([ and {) leaves room for any of them.
//
// Counted outside quoted scalars ('...' with '' escapes, "..." with \ escapes) and comments (#
// at the start of a line or after a blank). Block nesting is bounded by the indentation:
// a line indented more than `max_indent` columns is refused too.
#pragma once

#include <string>
#include <string_view>

#include "gpufit/core/result.h"

namespace gpufit {

// kInvalidArgument "<where>: line L: YAML nested deeper than 100 levels ..." or "... indented
// more than 1000 columns ...".
Result<void> CheckYamlNesting(std::string_view text, const std::string& where, int max_depth = 100,
                              int max_indent = 1000);

}  // namespace gpufit
