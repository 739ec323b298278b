// Fuzz target: the scheduler extender's request bodies (serve/extender_wire.h): ExtenderArgs
// through both readers (simdjson for NodeNames, nlohmann for the rest) and ExtenderBindingArgs.
// Whatever is read, the answers written from it must be JSON that reads back with the same
// node names (the writer's own string escaper).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "fuzz_input.h"
#include "gpufit/serve/extender_wire.h"

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpufit::serve;
  const std::string body(gpufit::fuzz::Text(data, size));
  if (const gpufit::Result<ExtenderArgs> args = ParseExtenderArgs(body, "fuzz")) {
    FilterResult result;
    std::vector<HostPriority> priorities;
    for (std::size_t i = 0; i < args->node_names.size(); ++i) {
      if (i % 3 == 0) result.kept.push_back(i);
      if (i % 3 == 1) result.failed.push_back({.node = i, .reason = "insufficient cpu"});
      if (i % 3 == 2) result.failed_and_unresolvable.push_back({.node = i, .reason = "not in \"the\" snapshot"});
      priorities.push_back({.host = args->node_names[i], .score = static_cast<std::int64_t>(i % 11)});
    }
    const nlohmann::json filter = nlohmann::json::parse(WriteFilterResult(*args, result), nullptr, false);
    Check(!filter.is_discarded());
    if (!args->full_nodes) {
      Check(filter["NodeNames"].size() == result.kept.size());
      for (std::size_t k = 0; k < result.kept.size(); ++k)
        Check(filter["NodeNames"][k].get<std::string>() == args->node_names[result.kept[k]]);
    }
    const nlohmann::json list = nlohmann::json::parse(WriteHostPriorityList(priorities), nullptr, false);
    Check(!list.is_discarded() && list.size() == priorities.size());
    for (std::size_t k = 0; k < priorities.size(); ++k) Check(list[k]["Host"].get<std::string>() == priorities[k].host);
  }
  if (const gpufit::Result<BindingArgs> bind = ParseBindingArgs(body, "fuzz")) {
    Check(!nlohmann::json::parse(WriteBindingResult(bind->pod_name), nullptr, false).is_discarded());
  }
  return 0;
}
