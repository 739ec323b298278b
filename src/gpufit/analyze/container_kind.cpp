#include "gpufit/analyze/container_kind.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace gpufit {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::string ImageRepository(std::string_view image) {
  std::string s = Lower(image);
  if (const auto at = s.find('@'); at != std::string::npos) s.resize(at);
  const auto slash = s.rfind('/');
  if (const auto colon = s.rfind(':'); colon != std::string::npos && (slash == std::string::npos || colon > slash))
    s.resize(colon);
  if (const auto first = s.find('/'); first != std::string::npos) {
    const std::string_view host(s.data(), first);
    // A registry host has a dot or a port, or is localhost (the Docker reference grammar).
    if (host.find('.') != std::string_view::npos || host.find(':') != std::string_view::npos || host == "localhost")
      s.erase(0, first + 1);
  }
  return s;
}

namespace {

constexpr std::array<std::pair<std::string_view, ContainerKind>, 34> kTokens = {{
    {"oauth2-proxy", ContainerKind::kAuthProxy},
    {"oauth2_proxy", ContainerKind::kAuthProxy},
    {"oauth-proxy", ContainerKind::kAuthProxy},
    {"openpolicyagent/opa", ContainerKind::kAuthProxy},
    {"opa-envoy", ContainerKind::kAuthProxy},
    {"opa-istio", ContainerKind::kAuthProxy},
    {"ext-authz", ContainerKind::kAuthProxy},
    {"ext_authz", ContainerKind::kAuthProxy},
    {"extauthz", ContainerKind::kAuthProxy},
    {"istio-proxy", ContainerKind::kServiceMeshProxy},
    {"istio/proxy", ContainerKind::kServiceMeshProxy},
    {"linkerd-proxy", ContainerKind::kServiceMeshProxy},
    {"linkerd/proxy", ContainerKind::kServiceMeshProxy},
    {"envoy", ContainerKind::kServiceMeshProxy},
    {"uvicorn", ContainerKind::kApiServer},
    {"fastapi", ContainerKind::kApiServer},
    {"gunicorn", ContainerKind::kApiServer},
    {"fluent-bit", ContainerKind::kLogAgent},
    {"fluentbit", ContainerKind::kLogAgent},
    {"fluentd", ContainerKind::kLogAgent},
    {"promtail", ContainerKind::kLogAgent},
    {"filebeat", ContainerKind::kLogAgent},
    {"timberio/vector", ContainerKind::kLogAgent},
    {"logstash", ContainerKind::kLogAgent},
    {"dcgm-exporter", ContainerKind::kMetricsAgent},
    {"node-exporter", ContainerKind::kMetricsAgent},
    {"datadog/agent", ContainerKind::kMetricsAgent},
    {"datadog-agent", ContainerKind::kMetricsAgent},
    {"telegraf", ContainerKind::kMetricsAgent},
    {"otel-collector", ContainerKind::kMetricsAgent},
    {"opentelemetry-collector", ContainerKind::kMetricsAgent},
    {"cadvisor", ContainerKind::kMetricsAgent},
    {"prom/", ContainerKind::kMetricsAgent},
    {"prometheuscommunity/", ContainerKind::kMetricsAgent},
}};

}  // namespace

ContainerKind ClassifyContainer(std::string_view container_name, std::string_view image, bool holds_gpu) {
  if (holds_gpu) return ContainerKind::kApplication;
  const std::string name = Lower(container_name), repo = ImageRepository(image);
  for (const auto& [token, kind] : kTokens) {
    if (name.find(token) != std::string::npos || repo.find(token) != std::string::npos) return kind;
  }
  // "vector" and "opa" alone are too common for a substring search; as the container name
  // they are the log agent and Open Policy Agent.
  if (name == "vector") return ContainerKind::kLogAgent;
  if (name == "opa") return ContainerKind::kAuthProxy;
  return ContainerKind::kApplication;
}

std::string ToString(ContainerKind kind) {
  switch (kind) {
    case ContainerKind::kApplication:
      return "application";
    case ContainerKind::kServiceMeshProxy:
      return "service-mesh-proxy";
    case ContainerKind::kApiServer:
      return "api-server";
    case ContainerKind::kLogAgent:
      return "log-agent";
    case ContainerKind::kMetricsAgent:
      return "metrics-agent";
    case ContainerKind::kAuthProxy:
      return "auth-proxy";
  }
  return "application";
}

}  // namespace gpufit
