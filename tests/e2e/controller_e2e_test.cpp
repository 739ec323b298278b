// `gpufit controller` (issue 42, continuous mode) on the GenTD26 trace: its /metrics over TLS
// with a bearer token, scraped by a real Prometheus (Debian's, started here with a scrape job
// for it), every panel query of deploy/grafana/gpufit-dashboard.json run against that
// Prometheus, the Slack-compatible summary received by a loopback webhook, and the bad inputs
// (no token: 401; an unreachable webhook: logged, the run succeeds; plain HTTP off loopback).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "child_process.h"
#include "cli_run.h"
#include "dcgm_fixture.h"
#include "gpufit/serve/tls_fixture.h"
#include "prometheus_server.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using gpufit::e2e::CliRun;
using gpufit::e2e::GenTd26;
using gpufit::e2e::Gpufit;
using gpufit::e2e::Scratch;
using gpufit::e2e::Slurp;
using gpufit::testing::FreeLoopbackPort;
using gpufit::testing::ReadFileText;
using gpufit::testing::SpawnLogged;
using gpufit::testing::TerminateAndWait;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// The plan's inputs: the GenTD26 trace with the quick packing (cli_e2e_test's).
const std::string kPlanFlags = " --telemetry " + GenTd26() + " --gpu a100-80gb --search-budget 0";

// Runs `command` under sh with stdout and stderr captured in `dir`.
CliRun Shell(const std::string& command, const fs::path& dir) {
  const int status =
      std::system((command + " > " + (dir / "shell.out").string() + " 2> " + (dir / "shell.err").string()).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(dir / "shell.out"), Slurp(dir / "shell.err")};
}

bool WaitFor(double seconds, const std::function<bool()>& done) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return done();
}

// A Slack incoming webhook stand-in: records each POST's body.
class WebhookReceiver {
 public:
  WebhookReceiver() {
    server_.Post("/services/hook", [this](const httplib::Request& req, httplib::Response& res) {
      const std::lock_guard lock(mu_);
      bodies_.push_back(req.body);
      res.set_content("ok", "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~WebhookReceiver() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}/services/hook", port_); }
  std::vector<std::string> bodies() {
    const std::lock_guard lock(mu_);
    return bodies_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<std::string> bodies_;
};

// Every target expression of the dashboard's panels, rows' nested panels included.
void CollectQueries(const nlohmann::json& panels, std::vector<std::pair<std::string, std::string>>& out) {
  for (const nlohmann::json& p : panels) {
    if (p.contains("panels")) CollectQueries(p["panels"], out);
    if (!p.contains("targets")) continue;
    for (const nlohmann::json& t : p["targets"]) out.emplace_back(p["title"].get<std::string>(), t["expr"]);
  }
}

// The dashboard's variables as Grafana substitutes them with "All" picked.
std::string Substitute(std::string expr) {
  for (std::size_t at; (at = expr.find("$workload")) != std::string::npos;) expr.replace(at, 9, ".*");
  return expr;
}

class ControllerE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = Scratch("controller");
    tls_ = gpufit::serve::testing::MakeTestTls(dir_.string());
    ASSERT_TRUE(tls_.ok) << "openssl failed";
    std::ofstream(dir_ / "token") << "s3cret-token\n";
  }
  void TearDown() override {
    TerminateAndWait(prometheus_);
    TerminateAndWait(controller_);
  }

  // Starts `gpufit controller` serving /metrics on a free port; the port.
  int StartController(const std::string& webhook) {
    const int port = FreeLoopbackPort();
    std::vector<std::string> argv = {gpufit::test_paths::GpufitBin(), "controller"};
    std::istringstream flags(kPlanFlags + fmt::format(" --interval 1h --out {} --metrics-listen 127.0.0.1:{} "
                                                      "--metrics-tls-cert-file {} --metrics-tls-key-file {} "
                                                      "--metrics-auth-token-file {} --webhook {}",
                                                      (dir_ / "out").string(), port, tls_.server_cert, tls_.server_key,
                                                      (dir_ / "token").string(), webhook));
    for (std::string word; flags >> word;) argv.push_back(word);
    controller_ = SpawnLogged(argv, dir_ / "controller.log");
    return port;
  }

  // Debian's prometheus scraping the controller every second over TLS with the token.
  std::string StartPrometheus(int controller_port) {
    const int port = FreeLoopbackPort();
    std::ofstream(dir_ / "prometheus.yml") << fmt::format(
        "global:\n  scrape_interval: 1h\nscrape_configs:\n  - job_name: gpufit-controller\n    scrape_interval: 1s\n"
        "    scrape_timeout: 1s\n    scheme: https\n    tls_config:\n      insecure_skip_verify: true\n    "
        "authorization:\n"
        "      credentials_file: {}\n    static_configs:\n      - targets: ['127.0.0.1:{}']\n",
        (dir_ / "token").string(), controller_port);
    prometheus_ = SpawnLogged({"prometheus", "--config.file=" + (dir_ / "prometheus.yml").string(),
                               "--storage.tsdb.path=" + (dir_ / "tsdb").string(),
                               fmt::format("--web.listen-address=127.0.0.1:{}", port), "--log.level=warn"},
                              dir_ / "prometheus.log");
    return fmt::format("http://127.0.0.1:{}", port);
  }

  fs::path dir_;
  gpufit::serve::testing::TestTls tls_;
  int controller_ = -1, prometheus_ = -1;
};

nlohmann::json Query(const std::string& url, const std::string& expr) {
  httplib::Client client(url);
  client.set_read_timeout(10, 0);
  const auto res = client.Get("/api/v1/query", httplib::Params{{"query", expr}}, httplib::Headers{});
  if (!res) return {{"status", "no answer"}};
  const nlohmann::json answer = nlohmann::json::parse(res->body, nullptr, false);
  return answer.is_discarded() ? nlohmann::json{{"status", "not json"}, {"body", res->body}} : answer;
}

TEST_F(ControllerE2e, PrometheusScrapesItAndEveryDashboardPanelHasData) {
  if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
  WebhookReceiver hook;
  const auto started = Clock::now();
  const int port = StartController(hook.url());
  ASSERT_GT(controller_, 0);
  // The first run ends with the webhook's POST.
  ASSERT_TRUE(WaitFor(120, [&] { return !hook.bodies().empty(); })) << ReadFileText(dir_ / "controller.log");
  const double cycle_s = std::chrono::duration<double>(Clock::now() - started).count();
  std::printf("controller: first run (start to webhook) %.1f s\n", cycle_s);

  // The plan it wrote, read independently of the controller's own facts.
  const nlohmann::json plan = nlohmann::json::parse(Slurp(dir_ / "out" / "plan.json"));
  const std::int64_t before = plan["totals"]["gpus_before"], after = plan["totals"]["gpus_after"];

  // The Slack JSON: its text names the GPUs before and after; blocks are Block Kit.
  const nlohmann::json payload = nlohmann::json::parse(hook.bodies().front());
  EXPECT_THAT(payload["text"].get<std::string>(), HasSubstr(fmt::format("gpufit: {} -> {} GPUs", before, after)));
  ASSERT_TRUE(payload["blocks"].is_array());
  EXPECT_EQ(payload["blocks"][0]["type"], "header");

  // /metrics: no token, a wrong one: 401; the right one: the plan's figures.
  httplib::Client metrics(fmt::format("https://127.0.0.1:{}", port));
  // The fixture's server certificate names CN gpufit-serve; what is checked here is the token.
  metrics.enable_server_certificate_verification(false);
  const auto anonymous = metrics.Get("/metrics");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  const auto wrong = metrics.Get("/metrics", httplib::Headers{{"Authorization", "Bearer nope"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  const auto ok = metrics.Get("/metrics", httplib::Headers{{"Authorization", "Bearer s3cret-token"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_THAT(ok->body, HasSubstr(fmt::format("gpufit_plan_gpus{{when=\"before\"}} {}\n", before)));
  EXPECT_THAT(ok->body, HasSubstr("gpufit_last_run_success 1\n"));
  // Prometheus' own linter of the exposition format (names, HELP/TYPE, counters' _total).
  std::ofstream(dir_ / "metrics.txt") << ok->body;
  const CliRun lint = Shell("promtool check metrics < " + (dir_ / "metrics.txt").string(), dir_);
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
  EXPECT_EQ(lint.out + lint.err, "");
  const auto health = metrics.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);

  // Prometheus scrapes it with the token (the job's target up, the plan's series stored).
  const std::string prom = StartPrometheus(port);
  ASSERT_TRUE(WaitFor(60, [&] {
    const nlohmann::json r = Query(prom, "gpufit_runs_total");
    return r.value("status", "") == "success" && r["data"]["result"].size() == 2;
  })) << ReadFileText(dir_ / "prometheus.log");
  const nlohmann::json up = Query(prom, "up{job=\"gpufit-controller\"}");
  ASSERT_EQ(up["data"]["result"].size(), 1u);
  EXPECT_EQ(up["data"]["result"][0]["value"][1], "1");
  const nlohmann::json gpus = Query(prom, "gpufit_plan_gpus{when=\"after\"}");
  ASSERT_EQ(gpus["data"]["result"].size(), 1u);
  EXPECT_EQ(gpus["data"]["result"][0]["value"][1], std::to_string(after));
  const nlohmann::json caps = Query(prom, "count(gpufit_workload_memory_cap_mib)");
  EXPECT_EQ(caps["data"]["result"][0]["value"][1], std::to_string(plan["workload_profiles"]["workloads"].size()));

  // Every panel's query of the dashboard: status success and a non-empty result.
  const nlohmann::json dashboard =
      nlohmann::json::parse(Slurp(fs::path(gpufit::test_paths::SourceDir()) / "deploy/grafana/gpufit-dashboard.json"));
  EXPECT_GE(dashboard["schemaVersion"].get<int>(), 39);
  std::vector<std::pair<std::string, std::string>> queries;
  CollectQueries(dashboard["panels"], queries);
  ASSERT_GE(queries.size(), 10u);
  for (const auto& [title, expr] : queries) {
    SCOPED_TRACE(title + ": " + expr);
    const nlohmann::json r = Query(prom, Substitute(expr));
    EXPECT_EQ(r.value("status", ""), "success") << r.dump();
    EXPECT_FALSE(r["data"]["result"].empty()) << r.dump();
  }
  std::printf("dashboard: %zu panel queries checked against Prometheus\n", queries.size());

  // SIGTERM: a clean stop.
  kill(controller_, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(controller_, &status, 0), controller_);
  controller_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFileText(dir_ / "controller.log");
}

// Per GenTD26 pod, its largest GPU memory sample (MiB) of the trace's last hour: read from
// the CSV here, apart from gpufit's reader (grid samples t_last - 59 min .. t_last at 60 s).
std::map<std::string, double> LastHourPeaksMib() {
  std::ifstream csv(GenTd26() + "/pod_gpu_memory_used_bytes_anon.csv");
  std::string line;
  std::getline(csv, line);  // timestamp_anon,value,container_ip
  std::vector<std::tuple<double, double, std::string>> rows;
  double last = 0;
  while (std::getline(csv, line)) {
    std::istringstream fields(line);
    std::string t, v, pod;
    std::getline(fields, t, ',');
    std::getline(fields, v, ',');
    std::getline(fields, pod, ',');
    rows.emplace_back(std::stod(t), std::stod(v) / (1024.0 * 1024.0), pod);
    last = std::max(last, std::stod(t));
  }
  std::map<std::string, double> peaks;
  for (const auto& [t, mib, pod] : rows)
    if (t > last - 3600) peaks[pod] = std::max(peaks[pod], mib);
  return peaks;
}

// The drift rules against a previous plan in --out that the test wrote: every cap and fitted
// peak set to 1 MiB, one pod left out. The run names that pod's workload as new, every other
// pod with memory in the last hour as over its envelope, and every such workload's peak as
// drifted (recent / 1 MiB > 1.2), in its log, the webhook's JSON and the plan it writes.
TEST(ControllerDrift, ThePreviousPlanInOutIsComparedWithTheCluster) {
  if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("controller-drift");
  const std::string out = (dir / "out").string();
  ASSERT_EQ(Gpufit("controller --once" + kPlanFlags + " --out " + out, dir).exit_code, 0);
  nlohmann::json previous = nlohmann::json::parse(Slurp(dir / "out" / "plan.json"));
  const std::string left_out = previous["pods"][0]["pod"];
  previous["pods"].erase(0);
  for (nlohmann::json& pod : previous["pods"]) pod["right_sizing"]["required_mib"] = 1;
  for (nlohmann::json& g : previous["groups"]) g.erase("memory_caps_mib");
  for (nlohmann::json& w : previous["workload_profiles"]["workloads"]) w["memory_peak_mib"] = 1;
  std::ofstream(dir / "out" / "plan.json") << previous.dump();

  std::size_t over = 0, drifted = 0;
  for (const auto& [pod, peak] : LastHourPeaksMib()) {
    if (pod == left_out) continue;
    over += peak > 1 ? 1 : 0;
    drifted += peak > 1.2 ? 1 : 0;
  }
  ASSERT_GT(over, 10u);  // the trace's last hour has running pods

  WebhookReceiver hook;
  const CliRun r = Gpufit("controller --once" + kPlanFlags + " --out " + out + " --webhook " + hook.url(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string summary =
      fmt::format("drift: {} pods over their envelope, 1 new workloads, {} peaks drifted", over, drifted);
  EXPECT_THAT(r.err, HasSubstr(summary));
  ASSERT_EQ(hook.bodies().size(), 1u);
  const nlohmann::json payload = nlohmann::json::parse(hook.bodies()[0]);
  EXPECT_THAT(payload["text"].get<std::string>(), HasSubstr(summary));
  EXPECT_THAT(payload["blocks"][2]["text"]["text"].get<std::string>(),
              HasSubstr("*New workloads:* 1 (pod/" + left_out + ")"));
  // The run's own plan replaced the test's: the next run compares with it.
  const nlohmann::json written = nlohmann::json::parse(Slurp(dir / "out" / "plan.json"));
  EXPECT_EQ(written["pods"].size(), previous["pods"].size() + 1);
}

// The same rules with the telemetry from a real Prometheus (the Prometheus reader, as `plan
// --prometheus` reads it): a GenTD26 slice of 12 pods over 3 hours (tests/support/dcgm_fixture.h),
// a previous plan with every cap at 1 MiB. Pods over their envelope: those with a GPU memory
// sample above 1 MiB in the slice's last hour, counted from the fixture's CSV of the same samples.
TEST(ControllerDrift, PodsOverTheirEnvelopeFromPrometheus) {
  if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("controller-drift-prometheus");
  const gpufit::Result<gpufit::testing::DcgmFixture> fixture = gpufit::testing::MakeDcgmFixture(GenTd26(), 12, 3);
  ASSERT_TRUE(fixture.has_value()) << fixture.error().message;
  fs::create_directories(dir / "prometheus");
  auto server = gpufit::testing::PrometheusServer::Start(fixture->openmetrics, (dir / "prometheus").string());
  ASSERT_TRUE(server.has_value()) << server.error().message;
  const std::string flags = fmt::format(" --prometheus {} --since {} --until {} --step 60s --gpu h100-80gb --out {}",
                                        (*server)->url(), fixture->since_s, fixture->until_s, (dir / "out").string());
  ASSERT_EQ(Gpufit("controller --once" + flags, dir).exit_code, 0);
  nlohmann::json previous = nlohmann::json::parse(Slurp(dir / "out" / "plan.json"));
  for (nlohmann::json& pod : previous["pods"]) pod["right_sizing"]["required_mib"] = 1;
  for (nlohmann::json& g : previous["groups"]) g.erase("memory_caps_mib");
  std::ofstream(dir / "out" / "plan.json") << previous.dump();

  std::map<std::string, double> peaks;  // timestamp_s,pod,metric,value,...
  std::istringstream csv(fixture->long_csv);
  std::string line;
  std::getline(csv, line);
  while (std::getline(csv, line)) {
    std::istringstream fields(line);
    std::string t, pod, metric, value;
    std::getline(fields, t, ',');
    std::getline(fields, pod, ',');
    std::getline(fields, metric, ',');
    std::getline(fields, value, ',');
    if (metric == "DCGM_FI_DEV_FB_USED" && std::stod(t) > fixture->until_s - 3600)
      peaks[pod] = std::max(peaks[pod], std::stod(value));
  }
  std::size_t over = 0;
  for (const auto& [pod, peak] : peaks) over += peak > 1 ? 1 : 0;
  // 8 of the 12: the Job pods and the pods that end two thirds in have no sample in the last hour.
  ASSERT_GT(over, 3u);
  ASSERT_LT(over, static_cast<std::size_t>(fixture->pods));

  const CliRun r = Gpufit("controller --once" + flags, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr(fmt::format("drift: {} pods over their envelope, 0 new workloads", over)));
}

TEST(ControllerBadInput, AnUnreachableWebhookIsLoggedAndTheRunSucceeds) {
  if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("controller-webhook-down");
  const int nobody = FreeLoopbackPort();
  const CliRun r = Gpufit("controller --once" + kPlanFlags + " --webhook-timeout 2 --out " + (dir / "out").string() +
                              fmt::format(" --webhook http://127.0.0.1:{}/hook", nobody),
                          dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr(fmt::format("warning: the webhook was not delivered (the run goes on): webhook "
                                           "http://127.0.0.1:{}/hook: request failed",
                                           nobody)));
  const nlohmann::json plan = nlohmann::json::parse(Slurp(dir / "out" / "plan.json"));
  EXPECT_EQ(plan["schema_version"], 1);
}

TEST(ControllerBadInput, PlainHttpOffLoopbackIsRefused) {
  const fs::path dir = Scratch("controller-insecure");
  const CliRun r = Gpufit("controller" + kPlanFlags + " --metrics-listen 0.0.0.0:0 --metrics-insecure-http", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--metrics-insecure-http only on a loopback address (127.0.0.1, ::1, localhost), "
                               "got 0.0.0.0"));
}

TEST(ControllerBadInput, NoAuthenticationIsRefusedBeforeAnyRun) {
  const fs::path dir = Scratch("controller-noauth");
  const CliRun r = Gpufit("controller" + kPlanFlags + " --out " + (dir / "out").string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("/metrics needs authentication"));
  EXPECT_FALSE(fs::exists(dir / "out" / "plan.json"));
}

TEST(ControllerBadInput, AWebhookOverPlainHttpToAnotherHostIsRefused) {
  const fs::path dir = Scratch("controller-http-hook");
  const CliRun r = Gpufit("controller --once" + kPlanFlags + " --webhook http://hooks.example.com/x", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--webhook http://hooks.example.com/x: plain http only to a loopback address"));
}

}  // namespace
