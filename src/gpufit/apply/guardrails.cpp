#include "gpufit/apply/guardrails.h"

#include <cctype>
#include <cmath>
#include <regex>

namespace gpufit::apply {

using Json = nlohmann::json;

Result<MaintenanceWindow> ParseWindow(const std::string& text) {
  static const std::regex form(
      R"(\s*(Mon|Tue|Wed|Thu|Fri|Sat|Sun|\*)\s+([0-9]{2}):([0-9]{2})-([0-9]{2}):([0-9]{2})\s*)");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    return InvalidArgument("maintenance window '{}': not DAY HH:MM-HH:MM (DAY: Mon..Sun or *; UTC)", text);
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  MaintenanceWindow w;
  w.text = text.substr(text.find_first_not_of(" \t"));
  w.text.erase(w.text.find_last_not_of(" \t\r") + 1);
  for (int d = 0; d < 7; ++d)
    if (m[1] == kDays[d]) w.weekday = d;
  const int sh = std::stoi(m[2]), sm = std::stoi(m[3]), eh = std::stoi(m[4]), em = std::stoi(m[5]);
  if (sh > 23 || sm > 59 || eh > 24 || em > 59 || (eh == 24 && em != 0))
    return InvalidArgument("maintenance window '{}': a time out of 00:00-24:00", text);
  w.start_min = sh * 60 + sm;
  w.end_min = eh * 60 + em;
  if (w.start_min == w.end_min) return InvalidArgument("maintenance window '{}': it starts where it ends", text);
  return w;
}

Result<std::vector<MaintenanceWindow>> ParseWindows(const std::string& text) {
  std::vector<MaintenanceWindow> out;
  std::string cur;
  auto flush = [&]() -> Result<void> {
    if (cur.find_first_not_of(" \t\r") != std::string::npos) {
      Result<MaintenanceWindow> w = ParseWindow(cur);
      if (!w) return w.error();
      out.push_back(*w);
    }
    cur.clear();
    return {};
  };
  for (char c : text) {
    if (c == ',' || c == '\n') {
      if (Result<void> r = flush(); !r) return r.error();
    } else {
      cur += c;
    }
  }
  if (Result<void> r = flush(); !r) return r.error();
  return out;
}

const MaintenanceWindow* WindowAt(const std::vector<MaintenanceWindow>& windows, double unix_s) {
  const auto minute = static_cast<long long>(std::floor(unix_s / 60));
  const auto day = static_cast<long long>(std::floor(unix_s / 86400));  // floored: before 1970 too
  const int of_day = static_cast<int>(minute - day * 1440);
  const int weekday = static_cast<int>(((day + 4) % 7 + 7) % 7);  // 1970-01-01 was a Thursday
  for (const MaintenanceWindow& w : windows) {
    if (w.start_min < w.end_min) {
      if ((w.weekday < 0 || w.weekday == weekday) && of_day >= w.start_min && of_day < w.end_min) return &w;
    } else {  // past midnight: the start day's evening, or the next day's morning
      if ((w.weekday < 0 || w.weekday == weekday) && of_day >= w.start_min) return &w;
      if ((w.weekday < 0 || (w.weekday + 1) % 7 == weekday) && of_day < w.end_min) return &w;
    }
  }
  return nullptr;
}

Result<Control> ReadControl(const Json& configmap, const std::string& where) {
  Control c;
  if (!configmap.is_object() || !configmap.contains("data") || !configmap["data"].is_object()) return c;
  const Json& data = configmap["data"];
  if (data.contains("stop")) {
    const std::string stop = data["stop"].is_string() ? data["stop"].get<std::string>() : "";
    if (stop != "true" && stop != "false")
      return InvalidArgument("{}: data.stop is '{}'; it is \"true\" or \"false\"", where, stop);
    c.stop = stop == "true";
  }
  if (data.contains("maintenance-windows")) {
    if (!data["maintenance-windows"].is_string())
      return InvalidArgument("{}: data.maintenance-windows is not a string", where);
    Result<std::vector<MaintenanceWindow>> w = ParseWindows(data["maintenance-windows"].get<std::string>());
    if (!w) return InvalidArgument("{}: data.maintenance-windows: {}", where, w.error().message);
    c.windows = std::move(*w);
  }
  return c;
}

bool Excluded(const Json& object) {
  if (!object.is_object() || !object.contains("metadata")) return false;
  const Json& meta = object["metadata"];
  if (!meta.is_object() || !meta.contains("annotations") || !meta["annotations"].is_object()) return false;
  const Json& a = meta["annotations"];
  if (!a.contains(kExcludeAnnotation)) return false;
  // Fail safe: any value but "false" ("True", "yes", "1", a typo) keeps gpufit away.
  std::string v = a[kExcludeAnnotation].is_string() ? a[kExcludeAnnotation].get<std::string>() : "";
  for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return v != "false";
}

}  // namespace gpufit::apply
