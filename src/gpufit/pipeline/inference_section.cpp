#include "gpufit/pipeline/inference_section.h"

#include <fast_float/fast_float.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>

#include "gpufit/inference/serving_services.h"
#include "gpufit/ingest/prometheus/serving.h"
#include "gpufit/plan/inference_plan.h"

namespace gpufit::pipeline {
namespace {

Result<double> Number(const std::string& text, const std::string& what) {
  double x = 0;
  const auto r = fast_float::from_chars(text.data(), text.data() + text.size(), x);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || !std::isfinite(x))
    return InvalidArgument("--serving-slo: {} '{}' is not a number", what, text);
  return x;
}

// METRIC:SECONDS[:TARGET].
Result<InferenceSlo> ParseSlo(const std::string& text) {
  const std::size_t a = text.find(':');
  const std::size_t b = a == std::string::npos ? a : text.find(':', a + 1);
  if (a == std::string::npos)
    return InvalidArgument("--serving-slo '{}': expected METRIC:SECONDS[:TARGET] (ttft:2:0.99)", text);
  InferenceSlo slo;
  const std::string metric = text.substr(0, a);
  if (metric == "ttft") {
    slo.metric = SloMetric::kTtft;
  } else if (metric == "latency") {
    slo.metric = SloMetric::kLatency;
  } else if (metric == "wait") {
    slo.metric = SloMetric::kWait;
  } else {
    return InvalidArgument("--serving-slo '{}': the metric must be ttft, latency or wait", text);
  }
  const Result<double> seconds = Number(text.substr(a + 1, b == std::string::npos ? b : b - a - 1), "SECONDS");
  if (!seconds) return seconds.error();
  slo.seconds = *seconds;
  if (b != std::string::npos) {
    const Result<double> target = Number(text.substr(b + 1), "TARGET");
    if (!target) return target.error();
    slo.target = *target;
  }
  if (!(slo.seconds > 0) || !(slo.target > 0 && slo.target < 1))
    return InvalidArgument("--serving-slo '{}': SECONDS must be > 0 and TARGET in (0, 1)", text);
  return slo;
}

// A DNS-1123 label: lower case letters, digits and '-', starting and ending with a letter or
// digit, 1 to 63 characters (Kubernetes' object names and namespaces).
bool IsDnsLabel(std::string_view s) {
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

// "name" or "namespace/name".
bool IsWorkloadName(std::string_view s) {
  const std::size_t slash = s.find('/');
  if (slash == std::string_view::npos) return IsDnsLabel(s);
  return IsDnsLabel(s.substr(0, slash)) && IsDnsLabel(s.substr(slash + 1));
}

}  // namespace

Result<InferenceSectionOutput> InferenceSection(const std::string& services_path, const GpuCatalog& catalog,
                                                const AutoscalerOptions& autoscaler) {
  return InferenceSection(services_path, {}, {}, catalog, autoscaler);
}

Result<InferenceSectionOutput> InferenceSection(const std::string& services_path, std::vector<PreparedService> found,
                                                std::vector<std::string> notes, const GpuCatalog& catalog,
                                                const AutoscalerOptions& autoscaler) {
  if (Result<void> ok = CheckAutoscalerOptions(autoscaler); !ok) return ok.error();
  std::vector<InferenceServiceSpec> given;
  if (!services_path.empty()) {
    Result<std::vector<InferenceServiceSpec>> specs = ReadInferenceServices(services_path);
    if (!specs) return specs.error();
    given = std::move(*specs);
  }
  std::vector<InferenceStudy> studies;
  for (const InferenceServiceSpec& spec : given) {
    Result<PreparedService> service = PrepareService(spec, catalog);
    if (!service)  // "FILE: service 'NAME': FIELD: what is wrong"
      return Error{service.error().code, fmt::format("{}: {}", services_path, service.error().message)};
    studies.push_back(RunInferenceStudy(*std::move(service)));
  }
  for (PreparedService& p : found) {
    const auto same = [&](const InferenceServiceSpec& g) {
      return g.name == p.spec.name || (g.kube_namespace == p.spec.kube_namespace && g.deployment == p.spec.deployment);
    };
    if (const auto g = std::find_if(given.begin(), given.end(), same); g != given.end()) {
      notes.push_back(fmt::format("{}/{}: the services file's '{}' is used instead of the serving metrics",
                                  p.spec.kube_namespace, p.spec.name, g->name));
      continue;
    }
    studies.push_back(RunInferenceStudy(std::move(p)));
  }
  std::string json = InferencePlanToJson(studies, autoscaler), md = InferencePlanToMarkdown(studies, autoscaler);
  if (!notes.empty()) {
    nlohmann::json j = nlohmann::json::parse(json);
    j["notes"] = notes;
    json = j.dump(2) + "\n";
    md += "\nServices in the serving metrics not studied from them:\n\n";
    for (const std::string& n : notes) md += "- " + n + "\n";
  }
  InferenceSectionOutput out{.json = std::move(json), .markdown = std::move(md), .manifests = {}};
  for (const InferenceStudy& s : studies) out.manifests.push_back(AutoscalerManifest(s, autoscaler));
  return out;
}

Result<std::optional<InferenceSectionOutput>> PlanInferenceSection(const std::string& services_path,
                                                                   const TelemetryOrigin& telemetry,
                                                                   const ServingMetricsOptions& flags,
                                                                   const std::string& gpu, const GpuCatalog& catalog,
                                                                   const AutoscalerOptions& autoscaler) {
  const bool from_server = !telemetry.prometheus.empty() && !flags.off && !gpu.empty();
  if ((!flags.queries.empty() || !flags.latencies.empty()) && telemetry.prometheus.empty())
    return InvalidArgument("--serving-query and --serving-latency need --prometheus");
  if (flags.off && (!flags.queries.empty() || !flags.latencies.empty() || flags.slo_given))
    return InvalidArgument(
        "--no-serving: --serving-query, --serving-latency and --serving-slo read serving metrics; "
        "give those or --no-serving, not both");
  const Result<InferenceSlo> slo = ParseSlo(flags.slo);
  if (!slo) return slo.error();
  std::vector<ServingQuery> queries;
  for (const std::string& q : flags.queries) {
    const auto named = ParseNamedQuery("--serving-query", q);
    if (!named) return named.error();
    if (!IsWorkloadName(named->first))
      return InvalidArgument(
          "--serving-query '{}': NAME '{}' must be a deployment or namespace/deployment, each a "
          "DNS-1123 label (lower case letters, digits and '-', starting and ending with a letter "
          "or digit, at most 63)",
          q, named->first);
    if (std::any_of(queries.begin(), queries.end(), [&](const ServingQuery& x) { return x.name == named->first; }))
      return InvalidArgument("--serving-query '{}': NAME '{}' is given twice", q, named->first);
    queries.push_back({.name = named->first, .requests_per_s = named->second, .latency_s = ""});
  }
  for (const std::string& l : flags.latencies) {
    const auto named = ParseNamedQuery("--serving-latency", l);
    if (!named) return named.error();
    const auto q =
        std::find_if(queries.begin(), queries.end(), [&](const ServingQuery& x) { return x.name == named->first; });
    if (q == queries.end())
      return InvalidArgument("--serving-latency '{}': no --serving-query names '{}'", l, named->first);
    if (!q->latency_s.empty())
      return InvalidArgument("--serving-latency '{}': NAME '{}' is given twice", l, named->first);
    q->latency_s = named->second;
  }
  ServingServices found;
  if (from_server) {
    Result<std::vector<ServingWorkload>> workloads = ReadPrometheusServing(telemetry.server, telemetry.range, queries);
    if (!workloads) return workloads.error();
    // A --serving-query naming a workload its engine's metrics already found is an error: two
    // sections and two autoscalers for one Deployment (docs/inference.md).
    for (const ServingQuery& q : queries) {
      const std::size_t slash = q.name.find('/');
      const std::string ns = slash == std::string::npos ? "default" : q.name.substr(0, slash);
      const std::string name = slash == std::string::npos ? q.name : q.name.substr(slash + 1);
      for (const ServingWorkload& w : *workloads)
        if (w.engine != ServingEngine::kQuery && w.kube_namespace == ns && w.owner_name == name)
          return InvalidArgument(
              "--serving-query '{}={}': {}/{} is already found from its {} metrics; drop the "
              "--serving-query (or give the service in the services YAML, --inference, to "
              "override it)",
              q.name, q.requests_per_s, ns, name, ServingEngineName(w.engine));
    }
    Result<ServingServices> s = PrepareServingServices(
        *workloads, {.gpu = gpu, .slo = *slo, .seed = 1, .load_gb_per_s = 1, .init_s = 30, .cold_start_s = 60},
        catalog);
    if (!s) return s.error();
    found = std::move(*s);
  }
  if (services_path.empty() && found.services.empty() && found.skipped.empty())
    return std::optional<InferenceSectionOutput>{};
  Result<InferenceSectionOutput> section =
      InferenceSection(services_path, std::move(found.services), std::move(found.skipped), catalog, autoscaler);
  if (!section) return section.error();
  return std::optional<InferenceSectionOutput>(*std::move(section));
}

}  // namespace gpufit::pipeline
