#include "gpufit/report/terminal_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

namespace gpufit::report {
// Named, not anonymous: the folder is built as one unity file.
namespace terminal_table_internal {

using Json = nlohmann::json;

constexpr double kHoursPerMonth = 730;  // the summary's month (plan_summary.h)

std::string TextOr(const Json& j, const char* key, std::string fallback = {}) {
  if (j.is_object() && j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
  return fallback;
}

double NumberOr(const Json& j, const char* key, double fallback) {
  if (j.is_object() && j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return fallback;
}

// "$391,998", "-$12": whole dollars with thousands separators.
std::string Dollars(double usd) {
  const long long whole = std::llround(std::fabs(usd));
  std::string digits = std::to_string(whole), grouped;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return (usd < 0 && whole != 0 ? "-$" : "$") + grouped;
}

// One GPU of the plan: its model, its pods, its price per month (< 0: unknown).
struct PlanGpu {
  std::string model;
  std::vector<std::string> pods;
  double usd_per_month = -1;
};

std::vector<std::string> Names(const Json& pods) {
  std::vector<std::string> names;
  if (pods.is_array())
    for (const Json& p : pods)
      if (p.is_string()) names.push_back(p.get<std::string>());
  return names;
}

// The status word of a strategy in summary.status ("" when absent).
std::string StatusOf(const Json& plan, const char* strategy) {
  if (!plan.contains("summary") || !plan["summary"].is_object()) return {};
  const Json& status = plan["summary"].value("status", Json::object());
  return status.is_object() && status.contains(strategy) ? TextOr(status[strategy], "status") : std::string();
}

const char* VerdictColour(std::string_view verdict) {
  if (verdict == "held") return "\x1b[32m";                                          // green
  if (verdict == "did not hold" || verdict == "not recommended") return "\x1b[31m";  // red
  if (verdict == "keep") return "\x1b[2m";                                           // dim
  return "\x1b[33m";                                                                 // yellow
}

// `text` left-aligned (right-aligned when `right`) in exactly `width` display columns.
std::string Pad(const std::string& text, std::size_t width, bool right = false) {
  const std::string cut = ShortenMiddle(text, width);
  const std::string fill(width - DisplayWidth(cut), ' ');
  return right ? fill + cut : cut + fill;
}

std::string SharesCell(const std::vector<std::string>& others, std::size_t width) {
  if (others.empty()) return "-";
  const std::string more = others.size() > 1 ? fmt::format(" +{}", others.size() - 1) : "";
  if (width <= more.size() + 4) return fmt::format("{} pods", others.size());
  return ShortenMiddle(others.front(), width - more.size()) + more;
}

}  // namespace terminal_table_internal

using namespace terminal_table_internal;

std::size_t DisplayWidth(std::string_view utf8) {
  std::size_t columns = 0;
  for (std::size_t i = 0; i < utf8.size(); ++i) {
    if (utf8[i] == '\x1b' && i + 1 < utf8.size() && utf8[i + 1] == '[') {
      while (i < utf8.size() && utf8[i] != 'm') ++i;
      continue;
    }
    if ((static_cast<unsigned char>(utf8[i]) & 0xC0) != 0x80) ++columns;  // not a continuation byte
  }
  return columns;
}

std::string ShortenMiddle(std::string_view text, std::size_t width) {
  if (DisplayWidth(text) <= width) return std::string(text);
  if (width == 0) return {};
  // Code point boundaries, so that "…" never splits a multi-byte character.
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  const std::size_t keep = width - 1, head = keep / 2, tail = keep - head;
  return std::string(text.substr(0, starts[head])) + "…" + std::string(text.substr(starts[starts.size() - tail]));
}

Result<std::vector<TerminalRow>> TerminalRows(const std::string& plan_json) {
  const Json plan = Json::parse(plan_json, nullptr, false);
  if (plan.is_discarded() || !plan.is_object()) return InvalidArgument("the terminal table needs a plan JSON object");
  const Json& fleet = plan.value("fleet", Json());
  const bool use_fleet = fleet.is_object() && fleet.value("recommended", false) && fleet.contains("shared_gpus");
  std::vector<PlanGpu> gpus;
  std::map<std::string, std::size_t> gpu_of_pod;
  if (use_fleet) {
    for (const Json& g : fleet["shared_gpus"])
      gpus.push_back({TextOr(g, "model"), Names(g.value("pods", Json())), NumberOr(g, "usd_per_month", -1)});
  } else if (plan.contains("groups") && plan["groups"].is_array()) {
    const Json prices = plan.value("prices", Json::object());
    const double hourly =
        NumberOr(prices.is_object() ? prices.value("target_gpu", Json()) : Json(), "usd_per_gpu_hour", -1);
    for (const Json& g : plan["groups"])
      gpus.push_back({TextOr(g, "gpu_model", TextOr(plan, "target_gpu")), Names(g.value("pods", Json())),
                      hourly < 0 ? -1 : hourly * kHoursPerMonth});
  }
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (const std::string& p : gpus[i].pods) gpu_of_pod.emplace(p, i);
  const std::string verdict = StatusOf(plan, use_fleet ? "fleet" : "colocation");
  std::vector<TerminalRow> rows;
  if (plan.contains("pods") && plan["pods"].is_array())
    for (const Json& p : plan["pods"]) {
      TerminalRow row;
      const std::string pod = TextOr(p, "pod");
      row.workload = TextOr(p, "workload", pod);
      row.gpu_now = TextOr(p.value("current_gpu", Json()), "id", TextOr(plan, "current_gpu"));
      const Json rs = p.value("right_sizing", Json());
      row.cap_gib = rs.is_object() && rs.contains("required_mib") && rs["required_mib"].is_number()
                        ? rs["required_mib"].get<double>() / 1024
                        : -1;
      row.reason = TextOr(rs, "reason");
      const double current = NumberOr(rs, "usd_per_month_current", -1);
      if (const auto it = gpu_of_pod.find(pod); it != gpu_of_pod.end()) {
        const PlanGpu& g = gpus[it->second];
        row.gpu_recommended = g.model;
        for (const std::string& other : g.pods)
          if (other != pod) row.shares_with.push_back(other);
        row.verdict = verdict.empty() ? "not tested" : verdict;
        if (current >= 0 && g.usd_per_month >= 0 && !g.pods.empty()) {
          row.usd_saved_per_month = current - g.usd_per_month / static_cast<double>(g.pods.size());
          row.priced = true;
        }
      } else {
        row.gpu_recommended = row.gpu_now;
        row.verdict = "keep";
      }
      rows.push_back(std::move(row));
    }
  std::stable_sort(rows.begin(), rows.end(), [](const TerminalRow& a, const TerminalRow& b) {
    if (a.usd_saved_per_month != b.usd_saved_per_month) return a.usd_saved_per_month > b.usd_saved_per_month;
    return a.workload < b.workload;
  });
  return rows;
}

Result<std::string> RenderTerminalTable(const std::string& plan_json, const TerminalTableOptions& o) {
  Result<std::vector<TerminalRow>> rows = TerminalRows(plan_json);
  if (!rows) return rows.error();
  const Json plan = Json::parse(plan_json);
  const std::size_t width = std::max<std::size_t>(o.width, 60);
  const auto colour = [&](const char* code, const std::string& text) {
    return o.colour ? std::string(code) + text + "\x1b[0m" : text;
  };
  std::string out;
  // The strategies of the summary, one line each.
  const Json summary = plan.value("summary", Json::object());
  if (summary.is_object() && summary.contains("strategies") && summary["strategies"].is_array())
    for (const Json& s : summary["strategies"]) {
      const double saved = NumberOr(s, "usd_saved", 0);
      const std::string status = TextOr(s, "status");
      // The basis only where it fits: the strategy, the dollars and the status matter more.
      const std::string head = fmt::format("{}: {}/month saved, {}", TextOr(s, "strategy"), Dollars(saved), status);
      const std::string full = fmt::format("{} ({})", head, TextOr(s, "basis"));
      const std::string line = ShortenMiddle(DisplayWidth(full) <= width ? full : head, width);
      out += o.colour ? std::string(VerdictColour(status)) + line + "\x1b[0m\n" : line + "\n";
    }
  const std::size_t shown = o.max_rows == 0 ? rows->size() : std::min(o.max_rows, rows->size());
  // Cells first, then the widths: fixed columns to their content (capped), the rest shared
  // by WORKLOAD and SHARES WITH.
  struct Cells {
    std::string gpu, cap, saved;
  };
  std::vector<Cells> cells;
  std::size_t w_gpu = 14, w_cap = 7, w_saved = 10, w_verdict = 7, w_workload = 8, w_shares_wanted = 11;  // headers
  for (std::size_t i = 0; i < shown; ++i) {
    const TerminalRow& r = (*rows)[i];
    Cells c;
    c.gpu = r.gpu_now == r.gpu_recommended ? (r.gpu_now.empty() ? "-" : r.gpu_now + " (same)")
                                           : r.gpu_now + " → " + r.gpu_recommended;
    c.cap = r.cap_gib < 0 ? "-" : fmt::format("{:.1f} GiB", r.cap_gib);
    c.saved = r.priced ? Dollars(r.usd_saved_per_month) : "-";
    w_gpu = std::max(w_gpu, DisplayWidth(c.gpu));
    w_cap = std::max(w_cap, DisplayWidth(c.cap));
    w_saved = std::max(w_saved, DisplayWidth(c.saved));
    w_verdict = std::max(w_verdict, DisplayWidth(r.verdict));
    w_workload = std::max(w_workload, DisplayWidth(r.workload));
    w_shares_wanted = std::max(w_shares_wanted, DisplayWidth(SharesCell(r.shares_with, 1000)));
    cells.push_back(std::move(c));
  }
  w_gpu = std::min<std::size_t>(w_gpu, 27);
  w_cap = std::min<std::size_t>(w_cap, 10);
  w_saved = std::min<std::size_t>(w_saved, 11);
  w_verdict = std::min<std::size_t>(w_verdict, 14);
  constexpr std::size_t kGaps = 5 * 2, kMinRest = 14;  // WORKLOAD 8 + SHARES WITH 6
  // A narrow terminal: the widest fixed column gives a column back, down to 6 each.
  for (;;) {
    const std::size_t fixed = w_gpu + w_cap + w_saved + w_verdict + kGaps;
    if (fixed + kMinRest <= width) break;
    std::size_t* widest = &w_gpu;
    for (std::size_t* w : {&w_cap, &w_saved, &w_verdict})
      if (*w > *widest) widest = w;
    if (*widest <= 6) break;
    --*widest;
  }
  const std::size_t fixed = w_gpu + w_cap + w_saved + w_verdict + kGaps;
  const std::size_t rest = width > fixed + kMinRest ? width - fixed : kMinRest;
  w_workload = std::clamp<std::size_t>(
      w_workload, 8, rest - std::max<std::size_t>(6, std::min<std::size_t>({rest / 3, 24, w_shares_wanted})));
  const std::size_t w_shares = std::min(rest - w_workload, std::max<std::size_t>(w_shares_wanted, 6));
  const auto line = [&](const std::string& a, const std::string& b, const std::string& c, const std::string& d,
                        const std::string& e, const std::string& verdict, bool colour_verdict) {
    const std::string v = ShortenMiddle(verdict, w_verdict);
    return Pad(a, w_workload) + "  " + Pad(b, w_gpu) + "  " + Pad(c, w_cap, true) + "  " + Pad(d, w_shares) + "  " +
           Pad(e, w_saved, true) + "  " + (colour_verdict ? colour(VerdictColour(verdict), v) : v);
  };
  out +=
      colour("\x1b[1m", line("WORKLOAD", "GPU NOW → PLAN", "MEM CAP", "SHARES WITH", "$/MO SAVED", "VERDICT", false)) +
      "\n";
  for (std::size_t i = 0; i < shown; ++i) {
    const TerminalRow& r = (*rows)[i];
    out += line(r.workload, cells[i].gpu, cells[i].cap, SharesCell(r.shares_with, w_shares), cells[i].saved, r.verdict,
                true) +
           "\n";
    if (o.reasons && !r.reason.empty()) out += ShortenMiddle("    why: " + r.reason, width) + "\n";
  }
  if (shown < rows->size())
    out +=
        ShortenMiddle(fmt::format("… {} more pods (-o wide: every pod with its reason)", rows->size() - shown), width) +
        "\n";
  for (const std::string& n : o.next) out += ShortenMiddle(n, width) + "\n";
  return out;
}

}  // namespace gpufit::report
