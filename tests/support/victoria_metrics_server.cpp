#include "victoria_metrics_server.h"

#include <fast_float/fast_float.h>
#include <fmt/format.h>
#include <httplib.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unordered_set>

#include "child_process.h"
#include "prometheus_server.h"

namespace gpufit::testing {
namespace {

namespace fs = std::filesystem;

// The end of a sample line's name{labels}: past the closing brace (label values may hold
// spaces, braces and escaped quotes), or the first blank without labels.
std::size_t SeriesEnd(std::string_view line) {
  const std::size_t blank = line.find_first_of(" \t");
  const std::size_t brace = line.find('{');
  if (brace == std::string_view::npos || (blank != std::string_view::npos && blank < brace)) return blank;
  bool quoted = false;
  for (std::size_t i = brace + 1; i < line.size(); ++i) {
    if (quoted && line[i] == '\\') {
      ++i;
    } else if (line[i] == '"') {
      quoted = !quoted;
    } else if (!quoted && line[i] == '}') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

}  // namespace

Result<PrometheusImportText> ToPrometheusImportText(std::string_view openmetrics) {
  PrometheusImportText out;
  out.text.reserve(openmetrics.size() + openmetrics.size() / 8);
  std::unordered_set<std::string_view> series;
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos < openmetrics.size();) {
    std::size_t eol = openmetrics.find('\n', pos);
    if (eol == std::string_view::npos) eol = openmetrics.size();
    const std::string_view line = openmetrics.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const std::size_t end = SeriesEnd(line);
    if (end == std::string_view::npos) return InvalidArgument("OpenMetrics line {}: no value: {}", line_no, line);
    // The rest is " value timestamp" (an exemplar, "# {...}", is not expected in fixtures).
    const std::string_view rest = line.substr(end);
    const std::size_t last_blank = rest.find_last_of(" \t");
    const std::size_t value_at = rest.find_first_not_of(" \t");
    if (value_at == std::string_view::npos || last_blank == std::string_view::npos || last_blank < value_at)
      return InvalidArgument("OpenMetrics line {}: a sample without a timestamp: {}", line_no, line);
    const std::string_view stamp = rest.substr(last_blank + 1);
    double seconds = 0;
    const auto r = fast_float::from_chars(stamp.data(), stamp.data() + stamp.size(), seconds);
    if (r.ec != std::errc() || r.ptr != stamp.data() + stamp.size() || !std::isfinite(seconds))
      return InvalidArgument("OpenMetrics line {}: timestamp '{}' is not a number of seconds", line_no, stamp);
    series.insert(line.substr(0, end));
    out.text.append(line.substr(0, end + last_blank + 1));
    fmt::format_to(std::back_inserter(out.text), "{}\n", std::llround(seconds * 1000));
  }
  out.series = series.size();
  return out;
}

Result<std::unique_ptr<VictoriaMetricsServer>> VictoriaMetricsServer::Start(const std::string& openmetrics,
                                                                            const std::string& dir) {
  const fs::path root(dir);
  Result<PrometheusImportText> text = ToPrometheusImportText(openmetrics);
  if (!text) return text.error();
  const int port = FreeLoopbackPort();
  std::unique_ptr<VictoriaMetricsServer> server(new VictoriaMetricsServer());
  server->log_ = (root / "victoria-metrics.log").string();
  server->pid_ =
      SpawnLogged({"victoria-metrics", "-storageDataPath=" + (root / "victoria-metrics-data").string(),
                   fmt::format("-httpListenAddr=127.0.0.1:{}", port), "-retentionPeriod=100y", "-loggerLevel=WARN"},
                  server->log_);
  if (server->pid_ < 0)
    return FailedPrecondition("cannot run victoria-metrics: install Debian's victoria-metrics with scripts/bootstrap");
  server->url_ = fmt::format("http://127.0.0.1:{}", port);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    int status = 0;
    if (waitpid(server->pid_, &status, WNOHANG) == server->pid_) {
      server->pid_ = -1;
      return FailedPrecondition("victoria-metrics exited at start: {}", ReadFileText(server->log_));
    }
    httplib::Client client(server->url_);
    client.set_connection_timeout(1, 0);
    if (const auto res = client.Get("/health"); res && res->status == 200) break;
    if (std::chrono::steady_clock::now() > deadline)
      return FailedPrecondition("victoria-metrics was not healthy within 60 s: {}", ReadFileText(server->log_));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (text->series == 0) return server;
  std::ofstream(root / "fixture.prom") << text->text;  // what was imported, for a failing test's reader
  if (Result<void> r = server->Import(text->text); !r) return r.error();
  for (;;) {
    if (Result<void> r = server->Flush(); !r) return r.error();
    const Result<std::size_t> count = server->SeriesCount();
    if (!count) return count.error();
    if (*count >= text->series) return server;
    if (std::chrono::steady_clock::now() > deadline)
      return FailedPrecondition("victoria-metrics holds {} of the fixture's {} series after 60 s: {}", *count,
                                text->series, ReadFileText(server->log_));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

VictoriaMetricsServer::~VictoriaMetricsServer() { TerminateAndWait(pid_); }

Result<void> VictoriaMetricsServer::Import(std::string_view body, std::string_view path) const {
  httplib::Client client(url_);
  client.set_read_timeout(300, 0);
  client.set_write_timeout(300, 0);
  const auto res = client.Post(std::string(path), body.data(), body.size(), "text/plain");
  if (!res) return FailedPrecondition("victoria-metrics {}: {}", path, httplib::to_string(res.error()));
  if (res->status != 204 && res->status != 200)
    return FailedPrecondition("victoria-metrics {}: HTTP {}: {} (log: {})", path, res->status, res->body,
                              ReadFileText(log_));
  return {};
}

Result<void> VictoriaMetricsServer::Flush() const {
  httplib::Client client(url_);
  client.set_read_timeout(300, 0);
  const auto res = client.Get("/internal/force_flush");
  if (!res || res->status != 200)
    return FailedPrecondition("victoria-metrics /internal/force_flush failed: {}",
                              res ? res->body : httplib::to_string(res.error()));
  return {};
}

Result<std::size_t> VictoriaMetricsServer::SeriesCount() const {
  httplib::Client client(url_);
  const auto res = client.Get("/api/v1/series/count");
  // {"status":"success","data":[N]}
  const std::size_t open = res ? res->body.find("\"data\":[") : std::string::npos;
  if (!res || res->status != 200 || open == std::string::npos)
    return FailedPrecondition("victoria-metrics /api/v1/series/count: {}",
                              res ? res->body : httplib::to_string(res.error()));
  return static_cast<std::size_t>(std::strtoull(res->body.c_str() + open + 8, nullptr, 10));
}

}  // namespace gpufit::testing
