// Small text helpers for list-valued fields and flags.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpufit {

// The items of `text` separated by `sep`, spaces around each item trimmed, empty items
// dropped: SplitList(" a, b,,c ", ',') is {"a", "b", "c"}.
inline std::vector<std::string> SplitList(std::string_view text, char sep) {
  std::vector<std::string> out;
  while (true) {
    const std::size_t at = text.find(sep);
    std::string_view item = text.substr(0, at);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (at == std::string_view::npos) return out;
    text.remove_prefix(at + 1);
  }
}

}  // namespace gpufit
