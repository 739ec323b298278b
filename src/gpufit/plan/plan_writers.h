// Writers of a Plan: JSON for scripts (schema in docs/plan-json.md) and Markdown for
// people (the terminal summary and plan.md), plus the analyze report.
#pragma once

#include <string>
#include <vector>

#include "gpufit/analyze/profile.h"
#include "gpufit/plan/plan.h"

namespace gpufit {

std::string PlanToJson(const Plan& plan);      // pretty-printed, ends in a newline
std::string PlanToMarkdown(const Plan& plan);  // summary, right-sizing table, groups

// The analyze report: per-pod profiles and waste totals.
std::string ProfilesToJson(const std::vector<PodProfile>& profiles, const std::vector<ContainerProfile>& containers,
                           const std::vector<std::string>& skipped, const std::string& source, double step_s);
std::string ProfilesToMarkdown(const std::vector<PodProfile>& profiles, const std::vector<ContainerProfile>& containers,
                               const std::vector<std::string>& skipped, const std::string& source);

}  // namespace gpufit
