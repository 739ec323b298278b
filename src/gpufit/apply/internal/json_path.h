// The string at a path of keys in a JSON object, "" where the path ends early or the value is
// not a string: how apply reads fields of API objects that may lack them.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

namespace gpufit::apply::internal {

inline std::string Str(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &j;
  for (const char* k : path) {
    if (!at->is_object() || !at->contains(k)) return "";
    at = &(*at)[k];
  }
  return at->is_string() ? at->get<std::string>() : "";
}

}  // namespace gpufit::apply::internal
