// What a container is, from its image and name: the application, or one of the sidecar
// and agent kinds that ride along with it and that right-sizing reports separately.
//
// Recognized (case-insensitive; the image's repository path without registry host, tag or
// digest, and the container name, are searched for these tokens, first match wins):
//  * authentication / authorization proxy (checked first: "opa-envoy" is not the mesh's
//    Envoy): oauth2-proxy (quay.io/oauth2-proxy/oauth2-proxy; bitly's older oauth2_proxy;
//    OpenShift's oauth-proxy), Open Policy Agent (openpolicyagent/opa, whose `-envoy` tags
//    are opa-envoy-plugin, the Envoy External Authorization gRPC server; containers named
//    opa, opa-envoy, opa-istio), Envoy ext_authz servers (ext-authz, ext_authz, extauthz:
//    Istio's samples/extauthz names its container ext-authz). Sources: the
//    open-policy-agent/opa-envoy-plugin README and quick_start.yaml (container opa-envoy,
//    image openpolicyagent/opa:latest-envoy); github.com/oauth2-proxy/oauth2-proxy;
//    github.com/openshift/oauth-proxy (contrib/sidecar.yaml); istio/istio samples/extauthz;
//  * service-mesh proxy: istio-proxy, istio/proxyv2, envoy (envoyproxy/envoy), linkerd-proxy
//    (cr.l5d.io/linkerd/proxy);
//  * API server: uvicorn, fastapi, gunicorn, tiangolo/uvicorn-gunicorn-fastapi;
//  * log agent: fluent-bit, fluentbit, fluentd, promtail, filebeat, vector (timberio/vector), logstash;
//  * metrics agent: dcgm-exporter, node-exporter, datadog-agent (datadog/agent), telegraf,
//    otel-collector / opentelemetry-collector, Prometheus exporters (images under prom/ or
//    prometheuscommunity/), cadvisor;
//  * everything else: application.
// A name is one signal; an image another: "envoy" in either is enough. A container that
// holds a GPU is the application whatever its name (an inference server behind FastAPI):
// callers pass holds_gpu.
#pragma once

#include <string>
#include <string_view>

namespace gpufit {

enum class ContainerKind { kApplication, kServiceMeshProxy, kApiServer, kLogAgent, kMetricsAgent, kAuthProxy };

ContainerKind ClassifyContainer(std::string_view container_name, std::string_view image, bool holds_gpu = false);

// The repository path of an image reference, lower case, without registry host, tag or
// digest (the Docker reference grammar: a first component with a '.' or ':' or "localhost"
// is a host): "docker.io/istio/proxyv2:1.23.0" -> "istio/proxyv2".
std::string ImageRepository(std::string_view image);

// "application", "service-mesh-proxy", "api-server", "log-agent", "metrics-agent", "auth-proxy".
std::string ToString(ContainerKind kind);

// Log and metrics agents: one per node (a DaemonSet) serves every pod on it.
inline bool IsNodeAgent(ContainerKind k) { return k == ContainerKind::kLogAgent || k == ContainerKind::kMetricsAgent; }

}  // namespace gpufit
