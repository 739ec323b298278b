// Issue 19's scale check: ReadPrometheusTelemetry over 7 days at 60 s of 5,000 pods' DCGM
// series, from a real VictoriaMetrics on loopback (tests/support/victoria_metrics_server.h).
// Not a google-benchmark (one run of minutes, not a loop); not run by ctest.
//
// The load: per pod, DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_GPU_UTIL with the labels
// dcgm-exporter --kubernetes writes (gpu, UUID, pci_bus_id, device, modelName, Hostname,
// DCGM_FI_DRIVER_VERSION, container, namespace, pod; ../shared/reference/formats.md (a)) plus
// the scrape's instance and job, and kube-state-metrics' kube_pod_created; pods spread over
// --namespaces namespaces, 8 per node; one sample a minute from 2026-01-01T00:00:00Z. It is
// streamed in chunks of --chunk-pods pods to /api/v1/import (VictoriaMetrics' JSON lines:
// one line per series, labels once; docs.victoriametrics.com "How to import data in JSON
// line format"), about 21 bytes a sample where the text format needs about 300.
//
// Printed: the load's time and size; the query's wall time, its HTTP requests to
// /api/v1/query_range (the server's own vm_http_requests_total), the peak RSS of this process
// and of the server; and the outcome: the pods read, or the exact error (before query
// splitting: the 256 MiB answer cap of ingest/prometheus/client.h).
//
// Run: build/bench/prometheus_split_bench [--pods 5000] [--days 7] [--namespaces 20]
//      [--chunk-pods 50] [--data DIR]
// With --data, the server's directory is DIR and is kept: a second run with the same
// --pods/--days skips the load (minutes) and measures the read alone.
#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <string_view>
#include <thread>

#include "bench_util.h"
#include "gpufit/ingest/dcgm_devices.h"
#include "gpufit/ingest/prometheus/telemetry.h"
#include "victoria_metrics_server.h"

namespace {

using namespace gpufit;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr long long kT0 = 1767225600;  // 2026-01-01T00:00:00Z

struct Args {
  int pods = 5000, days = 7, namespaces = 20, chunk_pods = 50;
  std::string data;  // --data DIR: the server's directory, kept (a rerun with the same load skips it)
};

double ElapsedS(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// One JSON line of /api/v1/import: {"metric":{...},"values":[...],"timestamps":[...]}.
template <class Value>
void AppendSeries(std::string& out, std::string_view labels, int points, Value value) {
  fmt::format_to(std::back_inserter(out), R"({{"metric":{{{}}},"values":[)", labels);
  for (int k = 0; k < points; ++k) fmt::format_to(std::back_inserter(out), "{}{}", k ? "," : "", value(k));
  out += R"(],"timestamps":[)";
  for (int k = 0; k < points; ++k)
    fmt::format_to(std::back_inserter(out), "{}{}", k ? "," : "", (kT0 + 60LL * k) * 1000);
  out += "]}\n";
}

void AppendPod(std::string& out, int p, const Args& a, int points) {
  const int node = p / 8, gpu = p % 8;
  const std::string ns = fmt::format("team-{:02}", p % a.namespaces), pod = fmt::format("train-{}-{:05}", p % 97, p);
  const std::string dcgm =
      fmt::format(R"("gpu":"{}","UUID":"GPU-{:08x}-0000-4000-8000-{:012x}","pci_bus_id":"00000000:{:02X}:00.0",)"
                  R"("device":"nvidia{}","modelName":"NVIDIA H100 80GB HBM3","Hostname":"gpu-node-{}",)"
                  R"("DCGM_FI_DRIVER_VERSION":"570.124.06","container":"main","namespace":"{}","pod":"{}",)"
                  R"("instance":"10.{}.{}.{}:9400","job":"nvidia-dcgm-exporter")",
                  gpu, p, p, 0x18 + 0x10 * gpu, gpu, node, ns, pod, node / 65536, node / 256 % 256, node % 256);
  AppendSeries(out, fmt::format(R"("__name__":"{}",{})", kDcgmFbUsed, dcgm), points,
               [&](int k) { return 1000 + (p * 7919 + k * 37) % 70000; });
  AppendSeries(out, fmt::format(R"("__name__":"{}",{})", kDcgmGpuUtil, dcgm), points,
               [&](int k) { return (p * 13 + k * 7) % 101; });
  AppendSeries(out,
               fmt::format(R"("__name__":"kube_pod_created","namespace":"{}","pod":"{}","uid":"uid-{}",)"
                           R"("instance":"10.255.0.1:8080","job":"kube-state-metrics")",
                           ns, pod, p),
               points, [&](int) { return kT0 - 3600 - p; });
}

// A counter or gauge from the server's /metrics: the first line starting with `prefix`.
double ServerMetric(const std::string& url, std::string_view prefix) {
  httplib::Client client(url);
  const auto res = client.Get("/metrics");
  if (!res) return -1;
  for (std::size_t pos = 0; pos < res->body.size();) {
    std::size_t eol = res->body.find('\n', pos);
    if (eol == std::string::npos) eol = res->body.size();
    const std::string_view line(res->body.data() + pos, eol - pos);
    if (line.substr(0, prefix.size()) == prefix) return std::strtod(line.data() + line.rfind(' ') + 1, nullptr);
    pos = eol + 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (flag == "--data")
      a.data = argv[i + 1];
    else if (flag == "--pods")
      a.pods = v;
    else if (flag == "--days")
      a.days = v;
    else if (flag == "--namespaces")
      a.namespaces = v;
    else if (flag == "--chunk-pods")
      a.chunk_pods = v;
    else {
      fmt::print(stderr, "unknown flag {}\n", flag);
      return 2;
    }
  }
  const int points = a.days * 24 * 60;
  const fs::path dir =
      a.data.empty() ? fs::temp_directory_path() / fmt::format("gpufit-split-bench-{}", ::getpid()) : fs::path(a.data);
  fs::create_directories(dir);
  auto server = gpufit::testing::VictoriaMetricsServer::Start("", dir.string());
  if (!server) {
    fmt::print(stderr, "{}\n", server.error().message);
    return 1;
  }
  fmt::print("{} pods in {} namespaces, {} days at 60 s ({} points a series), VictoriaMetrics at {}\n", a.pods,
             a.namespaces, a.days, points, (*server)->url());

  // Load, in chunks: the next chunk is written while the server ingests the last one.
  const Result<std::size_t> held = (*server)->SeriesCount();
  const bool loaded = held && *held == 3 * static_cast<std::size_t>(a.pods);
  if (loaded) fmt::print("load: skipped, {} already holds the {} series\n", dir.string(), *held);
  const auto load_start = Clock::now();
  double bytes = 0;
  std::string chunk, sending;
  std::future<Result<void>> sent;
  for (int p0 = 0; !loaded && p0 < a.pods; p0 += a.chunk_pods) {
    chunk.clear();
    for (int p = p0; p < std::min(a.pods, p0 + a.chunk_pods); ++p) AppendPod(chunk, p, a, points);
    bytes += static_cast<double>(chunk.size());
    if (sent.valid())
      if (Result<void> r = sent.get(); !r) {
        fmt::print(stderr, "{}\n", r.error().message);
        return 1;
      }
    std::swap(chunk, sending);
    sent = std::async(std::launch::async, [&] { return (*server)->Import(sending, "/api/v1/import"); });
  }
  if (sent.valid())
    if (Result<void> r = sent.get(); !r) {
      fmt::print(stderr, "{}\n", r.error().message);
      return 1;
    }
  if (Result<void> r = (*server)->Flush(); !r) {
    fmt::print(stderr, "{}\n", r.error().message);
    return 1;
  }
  const Result<std::size_t> series = (*server)->SeriesCount();
  const double load_s = ElapsedS(load_start);
  if (!loaded)
    fmt::print("load: {:.1f} s, {:.0f} MiB of JSON lines, {} samples, {} series held\n", load_s, bytes / (1 << 20),
               3.0 * a.pods * points, series ? *series : 0);

  // Read.
  PrometheusOptions o;
  o.url = (*server)->url();
  o.timeout_s = 600;
  o.retries = 0;
  const TelemetryRange range{.since_s = static_cast<double>(kT0) - 60,
                             .until_s = static_cast<double>(kT0) + 60.0 * (points - 1),
                             .step_s = 60};
  const std::string requests_metric = R"(vm_http_requests_total{path="/api/v1/query_range"})";
  const double requests_before = ServerMetric(o.url, requests_metric);
  const auto read_start = Clock::now();
  const Result<Telemetry> tel = ReadPrometheusTelemetry(o, range);
  const double read_s = ElapsedS(read_start);
  // The server counts a request once it has answered, a moment after the client has read it.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double requests = ServerMetric(o.url, requests_metric) - requests_before;
  fmt::print("read: {:.1f} s wall, {:.0f} query_range requests, peak RSS {:.0f} MiB (gpufit), {:.0f} MiB (server)\n",
             read_s, requests, bench::PeakRssMiB(),
             ServerMetric(o.url, "process_resident_memory_peak_bytes") / (1 << 20));
  if (tel)
    fmt::print("outcome: OK, {} pods on a grid of {} samples\n", tel->pods.size(), tel->samples);
  else
    fmt::print("outcome: FAILED: {}\n", tel.error().message);
  server->reset();
  if (a.data.empty()) fs::remove_all(dir);
  return tel ? 0 : 1;
}
