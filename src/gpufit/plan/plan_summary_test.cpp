#include "gpufit/plan/plan_summary.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gpufit {
namespace {

using nlohmann::json;

json Pod(const std::string& name, json group, double usd_now, json usd_rec, double peak, double duty, double running) {
  return {{"pod", name},
          {"workload", nullptr},
          {"group", group},
          {"profile",
           {{"fb_used_mib", {{"peak", peak}}},
            {"gpu_util_pct", {{"mean", duty}}},
            {"running_samples", running},
            {"gpu_hours_used", running / 100},
            {"gpu_hours_allocated", running / 10}}},
          {"right_sizing", {{"usd_per_month_current", usd_now}, {"usd_per_month_recommended", usd_rec}}}};
}

json Plan() {
  return {
      {"target_gpu", {{"id", "h100-80gb"}}},
      {"totals",
       {{"gpus_before", 4},
        {"gpus_after", 2},
        {"usd_per_month_before", 1000},
        {"usd_per_month_after", 400},
        {"usd_per_month_saved", 600}}},
      {"groups", {{{"pods", {"ml/web-7d4b9c8f6d-x2x9q", "ml/web-7d4b9c8f6d-abcde"}}}, {{"pods", {"db/pg-0"}}}}},
      {"pods",
       {Pod("ml/web-7d4b9c8f6d-x2x9q", 0, 300, 100, 1000, 10, 100),
        Pod("ml/web-7d4b9c8f6d-abcde", 0, 300, nullptr, 3000, 40, 300), Pod("db/pg-0", 1, 250, 150, 500, 50, 100),
        Pod("bare", nullptr, 150, 150, 100, 0, 100)}},
      {"backtest",
       {{"safe", true},
        {"status",
         {{"colocation", {{"status", "held"}, {"why", "7 splits replayed"}}},
          {"lending", {{"status", "held"}, {"why", "300 lending samples"}}}}}}},
      {"inference",
       {{"services",
         {{{"duration_s", 3600},
           {"policies", {{{"policy", "static peak"}, {"cost_usd", 10}}, {{"policy", "gpufit"}, {"cost_usd", 4}}}}}}}}},
      {"ancillary",
       {{"containers",
         {{{"usd_per_month_now", 100}, {"usd_per_month_recommended", 60}},
          {{"usd_per_month_now", 50}, {"usd_per_month_recommended", 70}},
          {{"usd_per_month_now", nullptr}, {"usd_per_month_recommended", 70}}}},
        {"duplicated_agents", {{{"usd_per_month_saving", 5}}}},
        {"model_loading", {{"cache_usd_per_month_saving", 7}}}}},
      {"training",
       {{"totals", {{"expected_on_demand_cost_usd", 1000}, {"expected_recommended_cost_usd", 400}}},
        {"jobs", {{{"recommendation", "spot"}}, {{"recommendation", "on-demand"}}}}}}};
}

TEST(PlanSummary, SumsTheMonthlyStrategiesByHand) {
  const json s = json::parse(PlanSummaryJson(Plan().dump()));
  // Monthly rows with both figures: co-location 1000 -> 400; inference 10 -> 4 USD over one
  // hour, x 730 = 7300 -> 2920; containers 150 -> 130 (the one without a figure is left out).
  EXPECT_DOUBLE_EQ(s["usd_per_month_before"].get<double>(), 1000 + 7300 + 150);
  // Savings: 600 + 20, agents 5, cache 7; training (per run) apart. The inference schedule's
  // 4380 is replayed on the requests it was fitted to: not tested, so not in the saving.
  EXPECT_DOUBLE_EQ(s["usd_per_month_saved"].get<double>(), 600 + 20 + 5 + 7);
  EXPECT_DOUBLE_EQ(s["usd_per_month_after"].get<double>(), 8450 - 632);
  EXPECT_NEAR(s["saved_pct"].get<double>(), 632.0 / 8450 * 100, 1e-9);
  EXPECT_EQ(s["strategies"][1]["strategy"], "inference replicas");
  EXPECT_EQ(s["strategies"][1]["status"], "not tested");
  ASSERT_EQ(s["strategies"].size(), 6u);
  EXPECT_EQ(s["strategies"][5]["strategy"], "training on spot");
  EXPECT_EQ(s["strategies"][5]["unit"], "usd_per_run");
  EXPECT_DOUBLE_EQ(s["strategies"][5]["usd_saved"].get<double>(), 600);
  EXPECT_TRUE(s["strategies"][3]["usd_before"].is_null());  // duplicated agents: a saving only
}

TEST(PlanSummary, ActionsLeadWithTheLargestSaving) {
  const json s = json::parse(PlanSummaryJson(Plan().dump()));
  ASSERT_GE(s["actions"].size(), 4u);
  EXPECT_NE(s["actions"][0].get<std::string>().find(
                "Co-locate the pods on 2 GPUs of h100-80gb instead of 4 (1 of them shared)"),
            std::string::npos);
  EXPECT_NE(s["actions"][0].get<std::string>().find("the backtest held"), std::string::npos);
  ASSERT_EQ(s["not_recommended"].size(), 1u);
  EXPECT_NE(s["not_recommended"][0].get<std::string>().find("Not tested: scale the inference services"),
            std::string::npos);
  const std::string lead = PlanSummaryLead(s.dump());
  EXPECT_EQ(lead.rfind("**Saving: $632 per month (7.5%)**: $8,450 → $7,818 per month", 0), 0u) << lead;
  EXPECT_EQ(lead.find("inference replicas $"), std::string::npos) << lead;
  EXPECT_NE(lead.find("Run 1 of the 2 training jobs on spot"), std::string::npos);
}

// A provisional co-location is neither in the headline saving nor among the recommended
// actions: it is listed apart with why, and its saving is reported as provisional.
TEST(PlanSummary, ProvisionalCoLocationIsNotPromised) {
  json plan = Plan();
  plan["backtest"]["status"]["colocation"] = {{"status", "provisional"}, {"why", "fitted on at most 17.1 h"}};
  const json s = json::parse(PlanSummaryJson(plan.dump()));
  EXPECT_DOUBLE_EQ(s["usd_per_month_saved"].get<double>(), 20 + 5 + 7);
  EXPECT_DOUBLE_EQ(s["usd_per_month_provisional"].get<double>(), 600);
  EXPECT_EQ(s["strategies"][0]["status"], "provisional");
  for (const json& a : s["actions"]) EXPECT_EQ(a.get<std::string>().find("Co-locate"), std::string::npos) << a;
  ASSERT_EQ(s["provisional"].size(), 1u);
  EXPECT_NE(s["provisional"][0].get<std::string>().find("Why provisional: fitted on at most 17.1 h."),
            std::string::npos);
  const std::string lead = PlanSummaryLead(s.dump());
  EXPECT_NE(lead.find("Provisional, not in the saving until proven on held-out days: $600 per month more."),
            std::string::npos)
      << lead;
}

// Each strategy has its own verdict: a lending failure leaves the co-location recommended
// (it held) and moves lending, and only lending, to "not recommended".
TEST(PlanSummary, AFailedLendingCheckFailsLendingAlone) {
  json plan = Plan();
  plan["backtest"]["status"]["lending"] = {{"status", "did not hold"}, {"why", "3 of 300 lending samples"}};
  plan["ancillary"]["time_multiplexing"] = {{"gpus_lent", 2}, {"night_window", {{"start_utc", "01:00"}, {"hours", 5}}}};
  const json s = json::parse(PlanSummaryJson(plan.dump()));
  bool colocate = false;
  for (const json& a : s["actions"]) {
    colocate = colocate || a.get<std::string>().find("Co-locate") != std::string::npos;
    EXPECT_EQ(a.get<std::string>().find("Lend"), std::string::npos) << a;
  }
  EXPECT_TRUE(colocate);
  ASSERT_EQ(s["not_recommended"].size(), 2u);  // the inference schedule (not tested) and lending
  EXPECT_EQ(s["not_recommended"][1],
            "Did not hold: Lend 2 idle GPUs to training from 01:00 UTC for 5 h a night. (3 of "
            "300 lending samples)");
  EXPECT_DOUBLE_EQ(s["usd_per_month_saved"].get<double>(), 600 + 20 + 5 + 7);
}

TEST(PlanSummary, RollsUpByWorkloadAndNamespace) {
  const json s = json::parse(PlanSummaryJson(Plan().dump()));
  const json& w = s["rollups"]["by_workload"];
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0]["key"], "ml/web");  // 600 USD now, the most
  EXPECT_EQ(w[0]["pods"], 2);
  EXPECT_EQ(w[0]["gpus_shared"], 2);
  EXPECT_EQ(w[0]["peak_fb_used_mib"], 3000);
  EXPECT_DOUBLE_EQ(w[0]["mean_duty_pct"].get<double>(), (10.0 * 100 + 40.0 * 300) / 400);
  EXPECT_DOUBLE_EQ(w[0]["usd_per_month_right_sized"].get<double>(), 100 + 300);  // no recommendation: its current
  EXPECT_DOUBLE_EQ(w[0]["gpu_hours_allocated"].get<double>(), 40);
  EXPECT_EQ(w[1]["key"], "db/pg");
  EXPECT_EQ(w[1]["gpus_shared"], 0);  // alone in its group
  EXPECT_EQ(s["rollups"]["workload_of"]["ml/web-7d4b9c8f6d-abcde"], "ml/web");
  const json& n = s["rollups"]["by_namespace"];
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[2]["key"], "(no namespace)");
  const std::string md = PlanRollupsMarkdown(s.dump(), 1);
  EXPECT_NE(md.find("| ml | 2 | 2 | 3,000 | 32.5 | 4.0 / 40.0 | $600 | $400 |"), std::string::npos) << md;
  EXPECT_NE(md.find("2 more in plan.json"), std::string::npos);
}

TEST(PlanSummary, WorkloadFromPodName) {
  EXPECT_EQ(WorkloadFromPodName("ml/web-7d4b9c8f6d-x2x9q"), "ml/web");
  EXPECT_EQ(WorkloadFromPodName("ml/web-7d4b9c8f6d-x2x9q[1]"), "ml/web");
  EXPECT_EQ(WorkloadFromPodName("db/pg-12@2"), "db/pg");
  EXPECT_EQ(WorkloadFromPodName("ml/trainer"), "ml/trainer");
  EXPECT_EQ(WorkloadFromPodName("ml/web-7d4b9c8f6d-x2x9"), "ml/web-7d4b9c8f6d-x2x9");  // a 4-letter suffix: no ReplicaSet
  EXPECT_EQ(WorkloadFromPodName("ml/web-ABCDE-x2x9q"), "ml/web-ABCDE-x2x9q");          // upper case: not a hash
  EXPECT_EQ(WorkloadFromPodName("-0"), "-0");
  EXPECT_EQ(WorkloadFromPodName("gen-ai-0"), "gen-ai");
  EXPECT_THROW(PlanSummaryJson("[1]"), std::invalid_argument);
}

}  // namespace
}  // namespace gpufit

namespace gpufit {
namespace {

TEST(PlanPodsCsv, OneQuotedRowPerPod) {
  nlohmann::json plan = Plan();
  plan["pods"][3]["pod"] = "odd,\"name\"";
  const std::string csv = PlanPodsCsv(plan.dump());
  std::vector<std::string> lines;
  for (std::size_t at = 0, next; (next = csv.find("\r\n", at)) != std::string::npos; at = next + 2)
    lines.push_back(csv.substr(at, next - at));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0].substr(0, 30), "pod,namespace,workload,current");
  EXPECT_EQ(lines[1], "ml/web-7d4b9c8f6d-x2x9q,ml,ml/web,,,,1000.0,,10.0,,,10.0,1.0,0,300.0,100");
  EXPECT_EQ(lines[2].substr(lines[2].size() - 7), ",300.0,");  // no recommendation: empty
  EXPECT_EQ(lines[4].substr(0, 16), "\"odd,\"\"name\"\"\",,");
}

}  // namespace
}  // namespace gpufit
