#include "gpufit/report/html_report.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "gpufit/report/report_assets.h"

namespace gpufit::report {
namespace {

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

nlohmann::json ParseOrThrow(std::string_view text, const char* what) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw std::invalid_argument(std::string("report: the ") + what + " is not JSON");
  return j;
}

}  // namespace

std::string RenderHtmlReport(std::string_view title, std::string_view data_json) {
  const std::string_view echarts = EchartsJs(), script = ReportJs(), css = ReportCss();
  std::string page;
  page.reserve(echarts.size() + script.size() + css.size() + data_json.size() * 11 / 10 + 1024);
  page += "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<title>" + EscapeHtml(title) + "</title>\n<style>\n";
  page += css;
  page += "</style>\n</head>\n<body>\n<main id=\"report\"><h1>" + EscapeHtml(title) +
          "</h1><p class=\"loading\">Drawing the report&hellip; (needs JavaScript)</p></main>\n";
  page += "<script type=\"application/json\" id=\"gpufit-data\">";
  for (char c : data_json) {
    if (c == '<')
      page += "\\u003c";  // '<' occurs only inside JSON strings, where \u003c means the same
    else
      page += c;
  }
  page += "</script>\n<script>\n";
  page += echarts;
  page += "\n</script>\n<script>\n";
  page += script;
  page += "\n</script>\n</body>\n</html>\n";
  return page;
}

std::string ReportData(std::string_view command, std::string_view title, std::string_view source,
                       std::string_view generator, std::string_view result_json,
                       std::string_view series_json) {
  nlohmann::json data = {{"command", command},
                         {"title", title},
                         {"source", source},
                         {"gpufit_version", generator},
                         {"result", ParseOrThrow(result_json, "result")}};
  if (!series_json.empty()) data["series"] = ParseOrThrow(series_json, "series");
  return data.dump();
}

}  // namespace gpufit::report
