// Issue 40, item 5: the command line under hazards a break test found. Two runs into the
// same --out (the output lock, core/output_lock.h), a Prometheus that trickles its response
// headers (the request deadline, ingest/prometheus/client.h), a file-size limit (ulimit -f),
// a dangling --out link, and untrusted names in plan.md.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "../support/trickle_server.h"
#include "cli_run.h"

namespace gpufit::e2e {
namespace {

using ::testing::HasSubstr;

// A long telemetry CSV of `pods` pods named PREFIX-0, PREFIX-1, ... over an hour.
std::string Telemetry(const std::string& prefix, int pods) {
  std::string csv = "timestamp_s,pod,metric,value\n";
  for (int t = 0; t < 3600; t += 60)
    for (int p = 0; p < pods; ++p) {
      csv += fmt::format("{},{}-{},DCGM_FI_DEV_FB_USED,{}\n", t, prefix, p, 1000 + 500 * p + t / 60);
      csv += fmt::format("{},{}-{},DCGM_FI_DEV_GPU_UTIL,{}\n", t, prefix, p, 5 + (p * 7 + t / 60) % 20);
    }
  return csv;
}

// What one run leaves in --out: plan.json's source, plan.md's, and the manifests' names.
struct Outcome {
  std::string json_source, md_source;
  std::map<std::string, std::string> manifests;  // name -> contents, .gpufit-manifests included
};

Outcome Read(const fs::path& out) {
  Outcome o;
  o.json_source = nlohmann::json::parse(Slurp(out / "plan.json"))["source"].get<std::string>();
  std::smatch m;
  const std::string md = Slurp(out / "plan.md");
  if (std::regex_search(md, m, std::regex("Telemetry: ([^ ]+) \\("))) o.md_source = m[1];
  for (const auto& e : fs::directory_iterator(out / "k8s"))
    if (e.path().filename() != ".gpufit-lock") o.manifests[e.path().filename().string()] = Slurp(e.path());
  return o;
}

std::string PlanArgs(const fs::path& telemetry, const fs::path& out) {
  return fmt::format("plan --telemetry {} --gpu h100-80gb --search-budget 0 --out {} --emit-manifests {} -q",
                     telemetry.string(), out.string(), (out / "k8s").string());
}

// Runs `pairs` pairs of concurrent plans (inputs a and b, whose pods and so manifests differ)
// into one --out; after each pair every file must come from one run. Returns the seconds taken.
double ConcurrentPairs(const fs::path& dir, int pairs) {
  const fs::path a = dir / "a.csv", b = dir / "b.csv", out = dir / "out";
  std::ofstream(a) << Telemetry("alpha", 3);
  std::ofstream(b) << Telemetry("beta", 4);
  // What each run leaves alone.
  const CliRun solo_a = Gpufit(PlanArgs(a, dir / "solo-a"), dir);
  EXPECT_EQ(solo_a.exit_code, 0) << solo_a.err;
  const CliRun solo_b = Gpufit(PlanArgs(b, dir / "solo-b"), dir);
  EXPECT_EQ(solo_b.exit_code, 0) << solo_b.err;
  const Outcome want_a = Read(dir / "solo-a"), want_b = Read(dir / "solo-b");
  EXPECT_NE(want_a.manifests, want_b.manifests) << "the two inputs must tell their runs apart (replicas 3 and 4)";
  EXPECT_NE(want_a.json_source, want_b.json_source);
  const std::string bin = gpufit::test_paths::GpufitBin();
  const auto started = std::chrono::steady_clock::now();
  int mixed = 0;
  for (int i = 0; i < pairs; ++i) {
    const std::string cmd = fmt::format(
        "{0} {1} > {3}/o1 2> {3}/e1 & p1=$!; {0} {2} > {3}/o2 2> {3}/e2 & p2=$!; wait $p1; r1=$?; "
        "wait $p2; r2=$?; test $r1 = 0 -a $r2 = 0",
        bin, PlanArgs(a, out), PlanArgs(b, out), dir.string());
    const int status = std::system(("bash -c '" + cmd + "'").c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "pair " << i << ": " << Slurp(dir / "e1") << Slurp(dir / "e2");
    const Outcome got = Read(out);
    const Outcome& want = got.json_source == want_a.json_source ? want_a : want_b;
    const bool one_run =
        got.json_source == want.json_source && got.md_source == want.md_source && got.manifests == want.manifests;
    if (!one_run) {
      ++mixed;
      ADD_FAILURE() << "pair " << i << " left a mix: plan.json from " << got.json_source << ", plan.md from "
                    << got.md_source << ", " << got.manifests.size() << " manifests";
    }
  }
  EXPECT_EQ(mixed, 0);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

// 10 pairs here (GPUFIT_LOCK_PAIRS=N for more: bench/output_lock_pairs.sh runs 100; the break
// test found 2 mixes in 80 pairs before the lock).
TEST(OutputLock, ConcurrentPlansIntoOneOutNeverMix) {
  const fs::path dir = Scratch("pairs");
  const char* env = std::getenv("GPUFIT_LOCK_PAIRS");
  const int pairs = env != nullptr ? std::atoi(env) : 10;
  const double s = ConcurrentPairs(dir, pairs);
  std::printf("%d pairs of concurrent plans in %.1f s\n", pairs, s);
  for (const auto& e : fs::recursive_directory_iterator(dir / "out")) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name.find("gpufit-tmp") == std::string::npos && name.find("gpufit-commit") == std::string::npos)
        << "left behind: " << e.path();
  }
  fs::remove_all(dir);
}

// A fake server: no real Prometheus trickles its headers on demand. One byte a second, so
// each read succeeds within cpp-httplib's per-read timeout and only the request's own
// deadline (3 s) can end it.
TEST(PrometheusDeadline, HeaderTricklingServerGivesExit2WithinTheTimeout) {
  testing::HeaderTrickleServer server(std::chrono::milliseconds(1000));
  const fs::path dir = Scratch("trickle");
  const auto started = std::chrono::steady_clock::now();
  const CliRun r = Gpufit(fmt::format("plan --prometheus {} --prometheus-timeout 3 --prometheus-retries 0 --gpu "
                                      "h100-80gb --since 2026-01-01T00:00:00Z --until 2026-01-01T01:00:00Z",
                                      server.url()),
                          dir);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, fmt::format("gpufit: error: prometheus {}/api/v1/series (match[] 'DCGM_FI_DEV_FB_USED', "
                               "1767225600.000 to 1767229200.000): no complete answer within 3 s\n",
                               server.url()));
  EXPECT_LT(took, 6.0) << "the deadline is 3 s; before issue 40 it ran past 45 s";
  fs::remove_all(dir);
}

TEST(FileSizeLimit, AWritePastUlimitIsAnErrorNamingTheFileAndNothingIsWritten) {
  const fs::path dir = Scratch("fsize");
  std::ofstream(dir / "t.csv") << Telemetry("p", 2);
  // 8 blocks of 512 bytes (dash's unit): plan.md fits, plan.json does not.
  const std::string cmd = fmt::format(
      "cd {0} && sh -c 'ulimit -f 8; exec {1} plan --telemetry t.csv --gpu h100-80gb "
      "--search-budget 0 --out out --format json' > {0}/stdout 2> {0}/stderr",
      dir.string(), gpufit::test_paths::GpufitBin());
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal (SIGXFSZ?)";
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const std::string err = Slurp(dir / "stderr");
  EXPECT_THAT(err, ::testing::MatchesRegex(
                       "gpufit: error: out/plan\\.json: file too large \\(the file-size limit, ulimit -f\\): [0-9]+ "
                       "bytes not written\n"));
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(dir / "out")) left.insert(e.path().filename().string());
  EXPECT_EQ(left, std::set<std::string>{".gpufit-lock"}) << "no plan.md, no temporary (the lock file stays)";
  fs::remove_all(dir);
}

TEST(DanglingOut, ASymbolicLinkToNothingIsNamedWithItsTarget) {
  const fs::path dir = Scratch("dangling");
  std::ofstream(dir / "t.csv") << Telemetry("p", 2);
  fs::create_symlink(dir / "gone", dir / "out");
  const CliRun r = Gpufit(
      fmt::format("plan --telemetry {} --gpu h100-80gb --out {}", (dir / "t.csv").string(), (dir / "out").string()),
      dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, fmt::format("gpufit: error: --out {}: is a symbolic link to {}, which does not exist\n",
                               (dir / "out").string(), (dir / "gone").string()));
  EXPECT_FALSE(fs::exists(dir / "gone"));
  fs::remove_all(dir);
}

TEST(PlanMarkdown, UntrustedPodNamesAreEscaped) {
  const fs::path dir = Scratch("markdown");
  std::string csv = Telemetry("ok", 1);
  for (int t = 0; t < 3600; t += 60) {
    csv += fmt::format("{},\"<script>alert(1)</script>|x`y\",DCGM_FI_DEV_FB_USED,2000\n", t);
    csv += fmt::format("{},\"<script>alert(1)</script>|x`y\",DCGM_FI_DEV_GPU_UTIL,10\n", t);
  }
  std::ofstream(dir / "t.csv") << csv;
  const CliRun r =
      Gpufit(fmt::format("plan --telemetry {} --gpu h100-80gb --search-budget 0", (dir / "t.csv").string()), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;\\|x\\`y"));
  EXPECT_EQ(r.out.find("<script>"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpufit::e2e
