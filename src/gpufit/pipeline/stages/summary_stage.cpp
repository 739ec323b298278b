// The summary stage: the document. The sections merge under the co-location plan's JSON; in
// the Markdown the saving and the actions lead, then the backtest's guarantee, the plan, its
// backtest table, the sections, and the rollups close it.
#include <nlohmann/json.hpp>

#include "gpufit/pipeline/internal/stages.h"
#include "gpufit/plan/plan_summary.h"
#include "gpufit/plan/plan_writers.h"
#include "gpufit/report/report_series.h"

namespace gpufit::pipeline::internal {

Result<void> SummaryStage::Run(PlanContext& c) const {
  PlanDocument& doc = c.document;
  doc.has_plan = c.plan.has_value();
  if (!c.plan && c.sections.size() == 1) {  // one section alone: as it is
    doc.json = c.sections[0].second.first;
    doc.markdown = c.sections[0].second.second;
    return {};
  }
  std::string json = c.plan ? PlanToJson(*c.plan) : "{}", md = c.plan ? PlanToMarkdown(*c.plan) : "";
  nlohmann::json merged = nlohmann::json::parse(json);
  if (c.backtest) {
    merged["backtest"] = nlohmann::json::parse(BacktestToJson(*c.backtest));
    // The guarantee leads the summary (under the title); the table follows the plan.
    const std::size_t title = md.find("# gpufit plan\n\n");
    if (title != std::string::npos)
      md.insert(title + 15, "**" + c.backtest->Guarantee() +
                                "** (`gpufit backtest` also runs the reversed split of a short "
                                "window and the GPUs-vs-overflow trade-off.)\n\n");
    md += BacktestToMarkdown(*c.backtest, nullptr, GuaranteeAt::kSummaryLead);
  } else if (!c.backtest_note.empty()) {
    md += "\n" + c.backtest_note + "\n";
  }
  for (const auto& [key, section] : c.sections) {
    merged[key] = nlohmann::json::parse(section.first);
    md += (md.empty() ? "" : "\n") + section.second;
  }
  if (c.plan) {
    // The saving and the actions lead (above the guarantee); the rollups close the summary.
    const std::string summary = PlanSummaryJson(merged.dump());
    merged["summary"] = nlohmann::json::parse(summary);
    const std::size_t title_at = md.find("# gpufit plan\n\n");
    if (title_at != std::string::npos) md.insert(title_at + 15, PlanSummaryLead(summary));
    md += PlanRollupsMarkdown(summary);
  }
  doc.json = merged.dump(2) + "\n";
  doc.markdown = std::move(md);
  if (c.plan && c.in.want_csv) doc.csv = PlanPodsCsv(doc.json);
  if (c.plan && c.in.want_report_series) doc.series_json = report::ReportSeriesJson(*c.in.telemetry, doc.json);
  return {};
}

}  // namespace gpufit::pipeline::internal
