// The HTML report: one self-contained page (no network at view time) that draws a command's
// result with Apache ECharts (report_assets.h). The page script (tools/report/src/report.js)
// reads the data object below from a <script type="application/json" id="gpufit-data">
// element and draws the sections the result has; it sets window.gpufitReport.ready = true
// and lists the sections it drew in window.gpufitReport.sections (what the headless-Chromium
// check reads: tools/report/check-report.mjs).
//
// The data object (a JSON object, UTF-8):
//   command        "plan", "demo", "simulate", "inference" or "training study"
//   title          the page's heading
//   source         what the result was computed from (a path, a URL and range, "demo ...")
//   gpufit_version the version line of the binary that wrote it
//   result         the command's own JSON (plan.json for plan and demo: docs/plan-json.md)
//   series         optional, plan with telemetry: report_series.h
#pragma once

#include <string>
#include <string_view>

namespace gpufit::report {

// The page for `data_json` (the object above, as JSON text). Every '<' of the JSON is
// written as \u003c, so no string in it can end the script element that carries it. The
// title is HTML-escaped. Throws nothing; the JSON is not parsed here.
std::string RenderHtmlReport(std::string_view title, std::string_view data_json);

// The data object above from its parts (`generator`: the version line; result_json,
// series_json: JSON text; series may be empty for none). Errors: a result or series that is not JSON is a logic error of the
// caller (std::invalid_argument).
std::string ReportData(std::string_view command, std::string_view title, std::string_view source,
                       std::string_view generator, std::string_view result_json, std::string_view series_json = {});

}  // namespace gpufit::report
