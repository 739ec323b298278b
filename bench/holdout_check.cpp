// Issue 37: an independent check of gpufit's guarantee on many cuts of GenTD26.
//
// For each cut (a share of the window: 0.1, 0.2, ..., 0.9 by default) it writes the rows of
// the trace before the cut to a temporary GenTD26 folder, runs `gpufit plan` there (the fit
// part), and replays the rows after the cut against what the plan says it did:
//  * the same-model groups (plan.json `groups`) against `capacity_mib`;
//  * the mixed fleet (plan.json `fleet.shared_gpus`) each against its `oom_line_mib`.
// and prints one row per cut and plan with the plan's own verdicts beside the checker's.
//
// It shares no code with gpufit's backtest or its readers: the CSVs are parsed here, and a
// GPU's memory at an instant is the sum over its pods of each pod's latest sample at or
// before that instant (last value carried forward), evaluated at every sample time of any
// of its pods inside the later part, while the pod lives there (between its first and last
// row after the cut). Duty cycle the same way; a collision is an instant whose summed duty
// exceeds 100% (on the mixed fleet, each pod's duty times its slowdown on its GPU's model, as
// plan.json states it). Those instants are what the checker counts as "samples".
//
// Usage: holdout_check GPUFIT_BIN GENTD26_DIR "plan args" [cuts...]
//   e.g. holdout_check build/apps/gpufit/gpufit ../shared/data/gentd26 "--gpu a100-80gb"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

struct Row {
  double t = 0;
  double v = 0;
};
using Series = std::map<std::string, std::vector<Row>>;  // pod -> rows by time

struct Raw {
  std::string header;
  std::vector<std::pair<double, std::string>> lines;  // (time, the line as read)
};

// Reads a CSV with a header, its time column named `time_col`, its value `value_col` and pod `pod_col`.
Raw ReadLines(const std::string& path, int time_col, int value_col, int pod_col, Series& out, double scale) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "cannot read " << path << "\n";
    std::exit(2);
  }
  Raw raw;
  std::getline(in, raw.header);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    if (static_cast<int>(f.size()) <= std::max({time_col, value_col, pod_col})) continue;
    const double t = std::strtod(f[time_col].c_str(), nullptr);
    const double v = std::strtod(f[value_col].c_str(), nullptr) * scale;
    out[f[pod_col]].push_back({t, v});
    raw.lines.emplace_back(t, line);
  }
  for (auto& [pod, rows] : out)
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.t < b.t; });
  return raw;
}

void WriteBefore(const Raw& raw, double cut, const std::filesystem::path& path) {
  std::ofstream out(path);
  out << raw.header << "\n";
  for (const auto& [t, line] : raw.lines)
    if (t < cut) out << line << "\n";
}

// The pod's latest value at or before t among rows with time >= from; -1 when none.
double ValueAt(const std::vector<Row>& rows, double from, double t) {
  auto it = std::upper_bound(rows.begin(), rows.end(), t, [](double x, const Row& r) { return x < r.t; });
  if (it == rows.begin()) return -1;
  --it;
  if (it->t < from) return -1;
  return it->v;
}

struct GpuCheck {
  long instants = 0, over = 0, collisions = 0;
  double worst_over = 0;
};

GpuCheck CheckGpu(const std::vector<std::string>& pods, double line_mib, double cut, const Series& mem,
                  const Series& duty, const std::map<std::string, double>& slowdown = {}) {
  GpuCheck c;
  std::vector<double> times;
  std::vector<std::pair<double, double>> life;  // per pod: first and last row after the cut
  for (const std::string& p : pods) {
    const auto it = mem.find(p);
    double first = 1e300, last = -1e300;
    if (it != mem.end())
      for (const Row& r : it->second)
        if (r.t >= cut) {
          times.push_back(r.t);
          first = std::min(first, r.t);
          last = std::max(last, r.t);
        }
    life.emplace_back(first, last);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  for (double t : times) {
    double sum = 0, busy = 0;
    for (std::size_t k = 0; k < pods.size(); ++k) {
      if (t < life[k].first || t > life[k].second) continue;
      const double m = ValueAt(mem.at(pods[k]), cut, t);
      if (m > 0) sum += m;
      const auto d = duty.find(pods[k]);
      if (d != duty.end()) {
        const double u = ValueAt(d->second, cut, t);
        const auto f = slowdown.find(pods[k]);
        if (u > 0) busy += u * (f == slowdown.end() ? 1.0 : f->second);
      }
    }
    ++c.instants;
    if (sum > line_mib) {
      ++c.over;
      c.worst_over = std::max(c.worst_over, sum - line_mib);
    }
    if (busy > 100) ++c.collisions;
  }
  return c;
}

struct Totals {
  int gpus = 0, gpus_over = 0;
  long over = 0;
  double worst_over = 0, worst_collision_share = 0;
};

void Add(Totals& t, const GpuCheck& c) {
  t.gpus_over += c.over > 0;
  t.over += c.over;
  t.worst_over = std::max(t.worst_over, c.worst_over);
  if (c.instants > 0)
    t.worst_collision_share =
        std::max(t.worst_collision_share, static_cast<double>(c.collisions) / static_cast<double>(c.instants));
}

std::string Status(const nlohmann::json& j, const std::string& strategy) {
  const nlohmann::json* s = nullptr;
  if (j.contains("summary") && j["summary"].contains("status") && j["summary"]["status"].contains(strategy))
    s = &j["summary"]["status"][strategy];
  if (s != nullptr && s->is_object() && s->contains("status")) return (*s)["status"].get<std::string>();
  // Before per-strategy statuses: the co-location verdict and the fleet's.
  if (strategy == "colocation" && j.contains("backtest") && j["backtest"].contains("safe"))
    return j["backtest"]["safe"].get<bool>() ? "held" : "did not hold";
  if (strategy == "fleet" && j.contains("fleet") && j["fleet"]["backtest_held"].is_boolean())
    return j["fleet"]["backtest_held"].get<bool>() ? "held" : "did not hold";
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: holdout_check GPUFIT_BIN GENTD26_DIR \"plan args\" [cut shares...]\n";
    return 2;
  }
  const std::string bin = argv[1], dir = argv[2], args = argv[3];
  std::vector<double> cuts;
  for (int i = 4; i < argc; ++i) cuts.push_back(std::strtod(argv[i], nullptr));
  if (cuts.empty()) cuts = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
  Series mem, duty;
  const Raw mem_raw = ReadLines(dir + "/pod_gpu_memory_used_bytes_anon.csv", 0, 1, 2, mem, 1.0 / (1024.0 * 1024.0));
  const Raw duty_raw = ReadLines(dir + "/pod_gpu_duty_cycle_anon.csv", 1, 0, 2, duty, 1.0);
  double t0 = 1e300, t1 = -1e300;
  for (const auto& [t, line] : mem_raw.lines) {
    t0 = std::min(t0, t);
    t1 = std::max(t1, t);
  }
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("holdout_check." + std::to_string(::getpid()));
  std::cout << "| cut | fit h | plan | GPUs | status | later: GPUs over | overflow instants | worst MiB over | "
               "worst collision share |\n|---|---:|---|---:|---|---:|---:|---:|---:|\n";
  int violations = 0;
  for (double share : cuts) {
    const double cut = t0 + share * (t1 - t0);
    std::filesystem::create_directories(tmp);
    WriteBefore(mem_raw, cut, tmp / "pod_gpu_memory_used_bytes_anon.csv");
    WriteBefore(duty_raw, cut, tmp / "pod_gpu_duty_cycle_anon.csv");
    const std::string cmd = bin + " plan --telemetry " + tmp.string() + " " + args + " -f json > " +
                            (tmp / "plan.json").string() + " 2> " + (tmp / "stderr").string();
    const int rc = std::system(cmd.c_str());
    std::ifstream pj(tmp / "plan.json");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(pj);
    } catch (...) {
      std::cout << "| " << share << " | plan failed (rc " << rc << ") |\n";
      continue;
    }
    // Same-model groups.
    Totals same;
    const double capacity = j["capacity_mib"].get<double>();
    for (const auto& g : j["groups"]) {
      Add(same, CheckGpu(g["pods"].get<std::vector<std::string>>(), capacity, cut, mem, duty));
      ++same.gpus;
    }
    // The fleet's duty is scaled by each pod's slowdown on its model, as the plan assumed
    // (plan.json fleet.pods[].slowdown: the catalog's BF16 and bandwidth ratio).
    std::map<std::string, double> slowdown;
    for (const auto& p : j["fleet"]["pods"]) slowdown[p["pod"].get<std::string>()] = p["slowdown"].get<double>();
    Totals fleet;
    for (const auto& g : j["fleet"]["shared_gpus"]) {
      Add(fleet, CheckGpu(g["pods"].get<std::vector<std::string>>(), g["oom_line_mib"].get<double>(), cut, mem, duty,
                          slowdown));
      ++fleet.gpus;
    }
    const double fit_h = (cut - t0) / 3600;
    auto row = [&](const char* name, const Totals& t, std::size_t gpus, const std::string& status) {
      char buf[512];
      std::snprintf(buf, sizeof buf, "| %.1f | %.1f | %s | %zu | %s | %d of %d | %ld | %.0f | %.2f%% |\n", share, fit_h,
                    name, gpus, status.c_str(), t.gpus_over, t.gpus, t.over, t.worst_over,
                    100 * t.worst_collision_share);
      std::cout << buf;
      // Held is the promise; provisional is checked too (a plan shown at all should not fail).
      if ((status == "held" || status == "provisional") && (t.over > 0 || t.worst_collision_share > 0.01))
        ++violations;
    };
    row("same model", same, j["totals"]["gpus_after"].get<std::size_t>(), Status(j, "colocation"));
    row("mixed fleet", fleet, j["fleet"]["gpus"].get<std::size_t>(), Status(j, "fleet"));
    std::cout.flush();
  }
  std::filesystem::remove_all(tmp);
  std::cout << "\nplans reported held or provisional that overflowed or collided over 1% later: " << violations
            << "\n";
  return violations == 0 ? 0 : 1;
}
