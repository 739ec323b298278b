// Issue 20: the HTML report in headless Chromium (Debian's chromium, driven by playwright-core:
// tools/report/check-report.mjs). Each report loads from file:// with no request elsewhere and
// no console error, every chart draws an SVG with shapes, the expected sections are there, and
// each section's screenshot is a real PNG.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"
#include "test_paths.h"

namespace gpufit::e2e {
namespace {

struct Check {
  int exit_code = -1;
  nlohmann::json summary;
  std::string err;
};

// Runs the headless check on `report`, screenshots into `shots`.
Check CheckReport(const fs::path& report, const std::vector<std::string>& expect, const fs::path& shots) {
  std::string sections;
  for (const std::string& s : expect) sections += (sections.empty() ? "" : ",") + s;
  const fs::path out = shots.parent_path() / (shots.filename().string() + ".json");
  const fs::path err = shots.parent_path() / (shots.filename().string() + ".err");
  const std::string cmd = "node " + gpufit::test_paths::SourcePath("tools/report/check-report.mjs") + " " +
                          report.string() + " --expect " + sections + " --screenshots " + shots.string() + " > " +
                          out.string() + " 2> " + err.string();
  const int status = std::system(cmd.c_str());
  Check c{WIFEXITED(status) ? WEXITSTATUS(status) : -1, nullptr, Slurp(err)};
  c.summary = nlohmann::json::parse(Slurp(out), nullptr, false);
  return c;
}

// A PNG: its 8-byte signature, and more than a blank strip's bytes.
void ExpectScreenshots(const fs::path& shots, const std::vector<std::string>& sections) {
  for (const std::string& s : sections) {
    const fs::path png = shots / (s + ".png");
    ASSERT_TRUE(fs::exists(png)) << png;
    const std::string bytes = Slurp(png);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << png;
    EXPECT_GT(bytes.size(), 4000u) << png;
  }
}

int Charts(const nlohmann::json& summary) {
  int n = 0;
  for (const nlohmann::json& s : summary["sections"]) n += s["charts"].get<int>();
  return n;
}

TEST(Report, DemoShowsEveryStrategy) {
  const fs::path dir = Scratch("report-demo");
  const fs::path report = dir / "demo.html";
  const CliRun run = Gpufit("demo --report " + report.string() + " --out " + (dir / "out").string(), dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("report written to " + report.string()), std::string::npos) << run.err;
  const nlohmann::json plan = nlohmann::json::parse(Slurp(dir / "out" / "plan.json"));
  for (const char* key : {"backtest", "training", "inference", "ancillary", "mig_isolation", "summary"})
    EXPECT_FALSE(plan[key].is_null()) << key;
  EXPECT_EQ(plan["inference"]["services"].size(), 2u);
  EXPECT_EQ(plan["training"]["jobs"].size(), 3u);
  const std::vector<std::string> sections = {"headline", "cost",     "backtest", "gpu-memory", "duty",
                                             "rightsizing", "mig",  "replicas", "training",  "lending"};
  const Check c = CheckReport(report, sections, dir / "shots");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_TRUE(c.summary["requests"].empty());
  EXPECT_EQ(Charts(c.summary), 9);  // one chart a section, two for replicas; the headline and table none
  ExpectScreenshots(dir / "shots", sections);
  // The Markdown leads with the saving in dollars and percent, then the actions.
  const std::string md = Slurp(dir / "out" / "plan.md");
  EXPECT_EQ(md.find("# gpufit plan\n\n**Saving: $"), 0u) << md.substr(0, 300);
  EXPECT_NE(md.find("Recommended:\n1. "), std::string::npos);
  // The backtest's guarantee is said once in each document: the page's headline, and the
  // bold paragraph under plan.md's summary (not again in its backtest section).
  const std::string guarantee = plan["backtest"]["guarantee"];
  EXPECT_EQ(c.summary["guarantee_count"], 1) << c.summary.dump();
  std::size_t in_md = 0;
  for (std::size_t at = md.find(guarantee); at != std::string::npos; at = md.find(guarantee, at + 1)) ++in_md;
  EXPECT_EQ(in_md, 1u) << md;
  EXPECT_LT(md.find(guarantee), md.find("## Backtest"));
}

// The demo's page with its data cut to one backtest split and two hours of the lending
// curve without a sample (null): the one split still draws its counts, each labelled (a 0
// reads "0"), and its collision share beside the allowed one; the hours without data are
// labelled "no data", not drawn as 0 GPUs; no table needs the page wider than it is.
TEST(Report, OneSplitAndHoursWithoutData) {
  const fs::path dir = Scratch("report-one-split");
  const fs::path demo = dir / "demo.html";
  const CliRun run = Gpufit("demo --report " + demo.string() + " -f json", dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string page = Slurp(demo);
  const std::string open = "<script type=\"application/json\" id=\"gpufit-data\">";
  const std::size_t from = page.find(open);
  ASSERT_NE(from, std::string::npos);
  const std::size_t begin = from + open.size(), end = page.find("</script>", begin);
  nlohmann::json data = nlohmann::json::parse(page.substr(begin, end - begin));
  nlohmann::json& splits = data["result"]["backtest"]["splits"];
  ASSERT_GE(splits.size(), 1u);
  splits = nlohmann::json::array({splits[0]});
  nlohmann::json& hours = data["result"]["ancillary"]["time_multiplexing"]["gpus_needed_by_hour_utc"];
  ASSERT_EQ(hours.size(), 24u);
  hours[0] = nullptr;
  hours[5] = nullptr;
  std::string text = data.dump();
  for (std::size_t at = text.find('<'); at != std::string::npos; at = text.find('<', at))
    text.replace(at, 1, "\\u003c");
  page.replace(begin, end - begin, text);
  const fs::path report = dir / "one-split.html";
  std::ofstream(report) << page;
  const Check c = CheckReport(report, {"backtest", "lending"}, dir / "shots");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const auto section = [&](const std::string& id) {
    for (const nlohmann::json& s : c.summary["sections"])
      if (s["id"] == id) return s;
    return nlohmann::json();
  };
  const nlohmann::json backtest = section("backtest"), lending = section("lending");
  ASSERT_EQ(backtest["svg_text"].size(), 1u);
  const std::string drawn = backtest["svg_text"][0];
  // The worst GPU's collision share, labelled in percent as the page writes it (two decimals,
  // trailing zeros dropped), and the allowed share beside it.
  std::ostringstream share;
  share << std::fixed << std::setprecision(2) << splits[0]["colocation"]["max_collision_share"].get<double>() * 100;
  std::string worst = share.str();
  while (worst.back() == '0') worst.pop_back();
  if (worst.back() == '.') worst.pop_back();
  for (const std::string& label : std::vector<std::string>{
           "on the hold-out of " + splits[0]["split"].get<std::string>(), "|worst GPU|allowed|", "|" + worst + "%|"})
    EXPECT_NE(drawn.find(label), std::string::npos) << label << " not in " << drawn;
  EXPECT_FALSE(backtest["table_scrolls"].get<bool>());
  EXPECT_FALSE(backtest["overflows"].get<bool>());
  const std::string curve = lending["svg_text"][0];
  std::size_t gaps = 0;
  for (std::size_t at = curve.find("no data"); at != std::string::npos; at = curve.find("no data", at + 1)) ++gaps;
  EXPECT_EQ(gaps, 2u) << curve;
}

TEST(Report, GenTd26PlanUnderFiveMegabytes) {
  if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("report-gentd26");
  const fs::path report = dir / "gentd26.html";
  const CliRun run = Gpufit("plan --telemetry " + GenTd26() + " --gpu a100-80gb --report " + report.string() +
                                " --out " + (dir / "out").string(),
                            dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_LT(fs::file_size(report), 5u * 1000 * 1000);
  const std::vector<std::string> sections = {"headline", "cost", "backtest", "gpu-memory", "duty", "rightsizing"};
  const Check c = CheckReport(report, sections, dir / "shots");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  ExpectScreenshots(dir / "shots", sections);
  // Every GenTD26 pod is a row of the right-sizing table (the first view: pods).
  int rows = -1;
  for (const nlohmann::json& s : c.summary["sections"]) {
    if (s["id"] == "rightsizing") rows = s["rows"].get<int>();
    // The backtest's table fits the page (its headers wrap): no column behind the right edge.
    if (s["id"] == "backtest") {
      EXPECT_FALSE(s["table_scrolls"].get<bool>()) << s.dump();
    }
  }
  EXPECT_EQ(rows, 143);
  EXPECT_EQ(c.summary["guarantee_count"], 1) << c.summary.dump();
  // The GPUs tile says when the saving leaves the co-location out (its backtest's verdict from
  // the plan JSON), so "143 -> 109 GPUs" never sits beside a saving that does not count them.
  const nlohmann::json plan = nlohmann::json::parse(Slurp(dir / "out" / "plan.json"));
  const std::string verdict = plan["backtest"]["status"]["colocation"]["status"];
  std::string gpus_label;
  for (const nlohmann::json& s : c.summary["sections"])
    if (s["id"] == "headline")
      for (const nlohmann::json& card : s["cards"])
        if (card["label"].get<std::string>().rfind("GPUs", 0) == 0) gpus_label = card["label"];
  EXPECT_EQ(gpus_label, verdict == "held" ? std::string("GPUs") : "GPUs if co-located (" + verdict + ")");
}

TEST(Report, InferenceStudy) {
  const fs::path dir = Scratch("report-inference");
  const std::string data = gpufit::test_paths::DataDir();
  if (!fs::exists(data + "/azure-llm-2023")) GTEST_SKIP() << "no " << data << "/azure-llm-2023";
  std::ofstream(dir / "services.yaml") << "services:\n  - name: chat\n    namespace: llm\n    requests: {format: azure-llm, path: "
                                       << data << "/azure-llm-2023/AzureLLMInferenceTrace_conv.csv}\n"
                                       << "    gpu: a100-80gb\n    llm: {model: llama-2-13b}\n"
                                       << "    cold_start: {load_gb_per_s: 1.0, init_s: 30}\n"
                                       << "    slo: {metric: ttft, seconds: 2, target: 0.99}\n";
  const fs::path report = dir / "inference.html";
  const CliRun run = Gpufit("inference --services " + (dir / "services.yaml").string() + " --report " + report.string(), dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const Check c = CheckReport(report, {"replicas"}, dir / "shots");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  ExpectScreenshots(dir / "shots", {"replicas"});
  EXPECT_EQ(Charts(c.summary), 2);
}

std::string Openb(const std::string& file) { return gpufit::test_paths::DataDir() + "/openb/" + file; }

TEST(Report, SimulateAndSpotStudy) {
  if (!fs::exists(Openb(""))) GTEST_SKIP() << "no " << Openb("");
  const fs::path dir = Scratch("report-openb");
  const std::string nodes = "--openb-nodes " + Openb("openb_node_list_gpu_node.csv");
  CliRun run = Gpufit("simulate " + nodes + " --openb-pods " + Openb("openb_pod_list_default.csv") +
                          " --policy fgd,best-fit --seeds 42 --report " + (dir / "sim.html").string(),
                      dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Check c = CheckReport(dir / "sim.html", {"simulate"}, dir / "sim-shots");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(Charts(c.summary), 2);
  ExpectScreenshots(dir / "sim-shots", {"simulate"});
  run = Gpufit("training study " + nodes + " --openb-pods " + Openb("openb_pod_list_gpuspec33.csv") + " --report " +
                   (dir / "study.html").string(),
               dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  c = CheckReport(dir / "study.html", {"study"}, dir / "study-shots");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  ExpectScreenshots(dir / "study-shots", {"study"});
}

TEST(Formats, YamlCsvAndHtmlOfOnePlan) {
  if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("formats");
  const std::string plan_args = "plan --telemetry " + GenTd26() + " --gpu a100-80gb --report " + (dir / "r.html").string();
  const CliRun json = Gpufit(plan_args + " --format json", dir);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json plan = nlohmann::json::parse(json.out);
  // YAML: the same document.
  const CliRun yaml = Gpufit(plan_args + " -f yaml", dir);
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  const YAML::Node y = YAML::Load(yaml.out);
  EXPECT_EQ(y["totals"]["gpus_after"].as<int>(), plan["totals"]["gpus_after"].get<int>());
  EXPECT_EQ(y["pods"].size(), plan["pods"].size());
  EXPECT_EQ(y["summary"]["actions"][0].as<std::string>(), plan["summary"]["actions"][0].get<std::string>());
  // A time such as 11:00 is quoted: a YAML 1.1 reader (PyYAML) would read 11:00 as 660.
  const std::string start = plan["ancillary"]["time_multiplexing"]["night_window"]["start_utc"].get<std::string>();
  EXPECT_NE(yaml.out.find("start_utc: \"" + start + "\""), std::string::npos) << start;
  // CSV: a header and one row per pod, each with the header's 16 fields.
  const CliRun csv = Gpufit(plan_args + " -f csv", dir);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::istringstream lines(csv.out);
  std::string line;
  std::size_t rows = 0;
  while (std::getline(lines, line)) {
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 15) << line;
    if (rows == 0) {
      EXPECT_EQ(line.rfind("pod,namespace,workload,", 0), 0u);
    }
    ++rows;
  }
  EXPECT_EQ(rows, plan["pods"].size() + 1);
  // HTML on stdout: the report itself.
  const CliRun html = Gpufit(plan_args + " -f html", dir);
  ASSERT_EQ(html.exit_code, 0) << html.err;
  EXPECT_EQ(html.out.rfind("<!doctype html>", 0), 0u);
  EXPECT_EQ(html.out, Slurp(dir / "r.html"));
  // csv and html only where the command has them.
  EXPECT_EQ(Gpufit("analyze --telemetry " + GenTd26() + " -f html", dir).exit_code, 2);
}

TEST(Report, PathThatIsADirectoryIsBadInputAndWritesNothing) {
  const fs::path dir = Scratch("report-dir");
  fs::create_directories(dir / "taken");
  const CliRun r = Gpufit("demo --report " + (dir / "taken").string() + " --out " + (dir / "out").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--report " + (dir / "taken").string() + ": is a directory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
  EXPECT_TRUE(fs::is_empty(dir / "taken"));
}

TEST(Report, CheckFailsOnABrokenPage) {
  // The check itself can fail: a page whose script throws and draws nothing is refused.
  const fs::path dir = Scratch("report-broken");
  std::ofstream(dir / "broken.html") << "<!doctype html><html><body><main id=\"report\"></main><script>"
                                     << "window.gpufitReport={ready:true,errors:[],sections:[]};"
                                     << "throw new Error('boom');</script></body></html>";
  const Check c = CheckReport(dir / "broken.html", {"headline"}, dir / "shots");
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.err.find("boom"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("no section headline"), std::string::npos) << c.err;
}

}  // namespace
}  // namespace gpufit::e2e
