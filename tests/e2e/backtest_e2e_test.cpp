// Issue 16's acceptance on GenTD26: split at the midpoint timestamp, keep the pods present
// in both halves, plan on one half with default options and replay the other half with
// `gpufit replay` (the independent checker), in both directions. The halves are cut and
// written by this test from the raw CSVs, not by gpufit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <vector>

#include "cli_run.h"

namespace gpufit::e2e {
namespace {

std::string fmt(double v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}

struct Sample {
  double t;
  std::string pod;
  double value;
};

// timestamp_anon, value, container_ip by header name.
std::vector<Sample> ReadRaw(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::stringstream ss(line); std::getline(ss, line, ',');) header.push_back(line);
  const auto col = [&](const char* name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const std::size_t ct = col("timestamp_anon"), cv = col("value"), cp = col("container_ip");
  std::vector<Sample> out;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    for (std::stringstream ss(line); std::getline(ss, line, ',');) f.push_back(line);
    if (f.size() < header.size()) continue;
    out.push_back({std::stod(f[ct]), f[cp], std::stod(f[cv])});
  }
  return out;
}

struct Halves {
  fs::path first, second;
  std::size_t pods = 0;
  std::map<std::string, double> peak_mib[2];
};

Halves WriteHalves(const fs::path& dir) {
  const std::vector<Sample> mem = ReadRaw(GenTd26() + "/pod_gpu_memory_used_bytes_anon.csv");
  const std::vector<Sample> duty = ReadRaw(GenTd26() + "/pod_gpu_duty_cycle_anon.csv");
  double lo = 1e300, hi = -1e300;
  for (const auto* v : {&mem, &duty})
    for (const Sample& s : *v) lo = std::min(lo, s.t), hi = std::max(hi, s.t);
  const double mid = (lo + hi) / 2;
  std::set<std::string> in[2][2];  // [metric][half]
  for (const Sample& s : mem) in[0][s.t >= mid].insert(s.pod);
  for (const Sample& s : duty) in[1][s.t >= mid].insert(s.pod);
  std::set<std::string> both;
  for (const std::string& p : in[0][0])
    if (in[0][1].count(p) && in[1][0].count(p) && in[1][1].count(p)) both.insert(p);
  Halves h;
  h.pods = both.size();
  h.first = dir / "first.csv";
  h.second = dir / "second.csv";
  std::ofstream out[2] = {std::ofstream(h.first), std::ofstream(h.second)};
  for (auto& o : out) o << "timestamp_s,pod,metric,value\n";
  for (const Sample& s : mem) {
    if (!both.count(s.pod)) continue;
    const double mib = s.value / 1048576.0;
    out[s.t >= mid] << fmt(s.t) << "," << s.pod << ",DCGM_FI_DEV_FB_USED," << fmt(mib) << "\n";
    double& peak = h.peak_mib[s.t >= mid][s.pod];
    peak = std::max(peak, mib);
  }
  for (const Sample& s : duty)
    if (both.count(s.pod)) out[s.t >= mid] << fmt(s.t) << "," << s.pod << ",DCGM_FI_DEV_GPU_UTIL," << fmt(s.value) << "\n";
  return h;
}

struct Direction {
  std::size_t gpus = 0;
  nlohmann::json plan, replay;
  int replay_exit = -1;
};

Direction PlanAndReplay(const fs::path& fit, const fs::path& test, const fs::path& dir) {
  Direction d;
  const CliRun plan = Gpufit("plan --telemetry " + fit.string() + " --gpu a100-80gb --format json --out " +
                                 (dir / "out").string(),
                             dir);
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  d.plan = nlohmann::json::parse(Slurp(dir / "out" / "plan.json"));
  d.gpus = d.plan["totals"]["gpus_after"].get<std::size_t>();
  const CliRun replay = Gpufit(
      "replay --telemetry " + test.string() + " --plan " + (dir / "out" / "plan.json").string() + " --format json", dir);
  d.replay_exit = replay.exit_code;
  d.replay = nlohmann::json::parse(replay.out);
  return d;
}

TEST(BacktestGenTd26, MidpointSplitHoldsOnTheOtherHalf) {
  if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("backtest-split");
  const Halves h = WriteHalves(dir);
  ASSERT_EQ(h.pods, 111u);
  fs::create_directories(dir / "fwd");
  fs::create_directories(dir / "rev");
  const Direction fwd = PlanAndReplay(h.first, h.second, dir / "fwd");
  const Direction rev = PlanAndReplay(h.second, h.first, dir / "rev");
  std::printf("forward: %zu GPUs, %s\nreverse: %zu GPUs, %s\n", fwd.gpus, fwd.replay.dump().c_str(), rev.gpus,
              rev.replay.dump().c_str());
  // Forward: 0 overflow samples over 81,920 MiB, collisions <= 1% per GPU. Measured: 74 GPUs
  // (65 before issue 37's group margin; the reverse direction below is why it is kept).
  EXPECT_EQ(fwd.replay_exit, 0);
  EXPECT_EQ(fwd.replay["memory_overflows"], 0);
  EXPECT_LE(fwd.replay["max_collision_share"].get<double>(), 0.01);
  EXPECT_LE(fwd.gpus, 75u);
  // Right-sizing: 11.4 h is under the 24 h needed to shrink memory, so every pod keeps its
  // A100 80GB, and no held-out peak exceeds 81,920 MiB.
  for (const auto& pod : fwd.plan["pods"]) {
    EXPECT_EQ(pod["right_sizing"]["recommended_gpu"], "a100-80gb") << pod["pod"];
    EXPECT_LE(h.peak_mib[1].at(pod["pod"].get<std::string>()), 81920.0);
  }
  // Reverse (fit on the quiet half, replay the busy one): with one pod's margin on every GPU
  // it took 71 GPUs and overflowed 4 samples on one GPU (two pods surprising together); with
  // the group margin (optimize/memory_envelope.h), measured: 101 GPUs and none. Pinned so that
  // a change is seen.
  EXPECT_LE(rev.replay["max_collision_share"].get<double>(), 0.01);
  EXPECT_EQ(rev.replay["memory_overflows"].get<int>(), 0);
  EXPECT_LE(rev.gpus, 101u);
  fs::remove_all(dir);
}

// Issue 37: docs/backtest.md's measured tables are the command's own output. Each block
// "<!-- gpufit backtest ARGS -->" ... "<!-- end -->" holds the trade-off table that
// `gpufit backtest ARGS` prints (GENTD26 standing for the trace's folder); the test runs it
// and compares line by line, so the page cannot go stale.
TEST(BacktestDocs, TablesComeFromTheCommand) {
  if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
  std::ifstream in(gpufit::test_paths::SourcePath("docs/backtest.md"));
  std::stringstream page;
  page << in.rdbuf();
  const std::string doc = page.str();
  const std::string open = "<!-- gpufit backtest ", close = "<!-- end -->";
  std::size_t blocks = 0;
  for (std::size_t at = doc.find(open); at != std::string::npos; at = doc.find(open, at + 1)) {
    ++blocks;
    const std::size_t args_end = doc.find(" -->", at);
    std::string args = doc.substr(at + open.size(), args_end - at - open.size());
    const std::size_t g = args.find("GENTD26");
    ASSERT_NE(g, std::string::npos) << args;
    args.replace(g, 7, GenTd26());
    const std::size_t body = doc.find('\n', args_end) + 1;
    const std::string expected = doc.substr(body, doc.find(close, body) - body);
    const fs::path dir = Scratch("backtest-docs");
    const CliRun r = Gpufit("backtest " + args, dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::size_t section = r.out.find("### Trade-off");
    ASSERT_NE(section, std::string::npos) << r.out;
    std::string table;
    std::istringstream lines(r.out.substr(section));
    for (std::string line; std::getline(lines, line);)
      if (!line.empty() && line[0] == '|') table += line + "\n";
    EXPECT_EQ(table, expected) << "docs/backtest.md is stale for `gpufit backtest " << args << "`";
    fs::remove_all(dir);
  }
  EXPECT_GE(blocks, 1u);
}

}  // namespace
}  // namespace gpufit::e2e
