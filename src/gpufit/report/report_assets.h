// The HTML report's static assets, embedded into the binary at build time so that a report
// is one self-contained file with nothing fetched at view time:
//  * Apache ECharts 6.1.0 (dist/echarts.min.js of the npm package `echarts`, Apache-2.0,
//    https://echarts.apache.org; pinned in tools/report/package-lock.json and installed by
//    scripts/bootstrap);
//  * gpufit's own page script and style sheet (tools/report/src/report.js, report.css),
//    which draw the report from its data object (html_report.h).
// Each view is the file's bytes, unchanged (UTF-8 text). The files are placed in the
// object file's read-only data by the assembler's .incbin (report_assets.cpp).
#pragma once

#include <string_view>

namespace gpufit::report {

std::string_view EchartsJs();  // echarts.min.js
std::string_view ReportJs();   // report.js
std::string_view ReportCss();  // report.css

}  // namespace gpufit::report
