#include "gpufit/analyze/container_kind.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpufit {
namespace {

struct Case {
  std::string name, container, image;
  ContainerKind kind;
};

// Container names and images as their projects' own manifests spell them.
TEST(ClassifyContainer, AuthenticationSidecarsAreAuthProxies) {
  const std::vector<Case> cases = {
      // oauth2-proxy's image on quay.io, a pinned tag and a digest.
      {"oauth2-proxy", "oauth2-proxy", "quay.io/oauth2-proxy/oauth2-proxy:v7.6.0", ContainerKind::kAuthProxy},
      {"oauth2-proxy by digest", "auth", "quay.io/oauth2-proxy/oauth2-proxy@sha256:0123abcd",
       ContainerKind::kAuthProxy},
      // OpenShift's fork, as in its contrib/sidecar.yaml.
      {"openshift oauth-proxy", "oauth-proxy", "openshift/oauth-proxy:latest", ContainerKind::kAuthProxy},
      // opa-envoy-plugin's quick_start.yaml: container opa-envoy, image openpolicyagent/opa:latest-envoy.
      // Its name holds "envoy": it is the authorization server, not the mesh proxy.
      {"opa-envoy", "opa-envoy", "openpolicyagent/opa:latest-envoy", ContainerKind::kAuthProxy},
      {"opa by image only", "policy", "openpolicyagent/opa:0.68.0-envoy-static", ContainerKind::kAuthProxy},
      {"opa by name only", "opa", "registry.example/policy:1", ContainerKind::kAuthProxy},
      // Istio's samples/extauthz: container ext-authz.
      {"istio ext-authz sample", "ext-authz", "gcr.io/istio-testing/ext-authz:1.23.0", ContainerKind::kAuthProxy},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ClassifyContainer(c.container, c.image), c.kind);
    EXPECT_EQ(ToString(ClassifyContainer(c.container, c.image)), "auth-proxy");
  }
}

TEST(ClassifyContainer, MeshEnvoyAndLookalikesStayWhatTheyAre) {
  const std::vector<Case> cases = {
      // The Envoy beside opa-envoy in the same quick start is the proxy, not the authorizer.
      {"envoy of the opa quick start", "envoy", "envoyproxy/envoy:v1.33-latest", ContainerKind::kServiceMeshProxy},
      {"istio-proxy", "istio-proxy", "docker.io/istio/proxyv2:1.23.0", ContainerKind::kServiceMeshProxy},
      // OPA Gatekeeper is an admission controller, not a sidecar of the pod: its image is not opa's.
      {"gatekeeper", "manager", "openpolicyagent/gatekeeper:v3.17.0", ContainerKind::kApplication},
      // "opa" inside another word is not Open Policy Agent.
      {"opaque name", "opaque-store", "registry.example/store:2", ContainerKind::kApplication},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ClassifyContainer(c.container, c.image), c.kind);
  }
}

TEST(ClassifyContainer, AGpuContainerIsTheApplicationWhateverItsName) {
  EXPECT_EQ(ClassifyContainer("oauth2-proxy", "quay.io/oauth2-proxy/oauth2-proxy:v7.6.0", /*holds_gpu=*/true),
            ContainerKind::kApplication);
}

}  // namespace
}  // namespace gpufit
