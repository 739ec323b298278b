#include "gpufit/ingest/kube_api/kubeconfig.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/kube_api/kube_client.h"

namespace gpufit::kube_api {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

constexpr const char* kCertPem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
// base64 of kCertPem
std::string B64(const std::string& s) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < s.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(s[i]) << 16) | (static_cast<unsigned char>(s[i + 1]) << 8) |
                       static_cast<unsigned char>(s[i + 2]);
    out += {abc[v >> 18], abc[(v >> 12) & 63], abc[(v >> 6) & 63], abc[v & 63]};
  }
  if (s.size() - i == 1) {
    const unsigned v = static_cast<unsigned char>(s[i]) << 16;
    out += {abc[v >> 18], abc[(v >> 12) & 63], '=', '='};
  } else if (s.size() - i == 2) {
    const unsigned v = (static_cast<unsigned char>(s[i]) << 16) | (static_cast<unsigned char>(s[i + 1]) << 8);
    out += {abc[v >> 18], abc[(v >> 12) & 63], abc[(v >> 6) & 63], '='};
  }
  return out;
}

// A kubeconfig with one cluster "c", one context "ctx" and the user body `user` (YAML lines
// indented by 4), plus `extra` at the end.
std::string Config(const std::string& cluster, const std::string& user, const std::string& current = "ctx",
                   const std::string& context = "ctx") {
  return fmt::format(R"(apiVersion: v1
kind: Config
current-context: {}
clusters:
- name: c
  cluster:
{}
contexts:
- name: {}
  context:
    cluster: c
    user: u
users:
- name: u
  user:
{}
)",
                     current, cluster, context, user);
}

const std::string kServer = "    server: https://10.1.2.3:6443";

KubeEnvironment NoEnv() { return {}; }

KubeConnection Conn(const std::string& server, const std::string& ca_pem = "") {
  KubeConnection c;
  c.server = server;
  c.source = "k";
  c.context = "c";
  c.ca_pem = ca_pem;
  return c;
}

Result<KubeConnection> Resolve(const std::string& path, const std::string& context = "",
                               const KubeEnvironment& env = NoEnv()) {
  return ResolveKubeconfig({.path = path, .context = context}, env);
}

TEST(DecodeBase64, DecodesPaddedAndUnpaddedAndRejectsJunk) {
  EXPECT_EQ(DecodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(DecodeBase64("aGVsbG8"), "hello");
  EXPECT_EQ(DecodeBase64("aGVs\nbG8="), "hello");
  EXPECT_EQ(DecodeBase64(B64(kCertPem)), kCertPem);
  EXPECT_FALSE(DecodeBase64("aGVs*G8=").has_value());
  EXPECT_FALSE(DecodeBase64("aGVsbG8=x").has_value());
}

TEST(ResolveKubeconfig, ClientCertificateDataAndCaData) {
  TempDir d;
  const std::string path = d.Write(
      "config", Config(kServer + "\n    certificate-authority-data: " + B64("CA-PEM"),
                       "    client-certificate-data: " + B64(kCertPem) + "\n    client-key-data: " + B64("KEY-PEM")));
  const Result<KubeConnection> c = Resolve(path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->server, "https://10.1.2.3:6443");
  EXPECT_EQ(c->context, "ctx");
  EXPECT_EQ(c->source, path);
  EXPECT_EQ(c->ca_pem, "CA-PEM");
  EXPECT_EQ(c->client_cert_pem, kCertPem);
  EXPECT_EQ(c->client_key_pem, "KEY-PEM");
  EXPECT_EQ(c->token, "");
  EXPECT_EQ(c->Describe(), "https://10.1.2.3:6443 (context ctx)");
}

TEST(ResolveKubeconfig, RelativeFilesResolveAgainstTheKubeconfigsFolder) {
  TempDir d;
  std::filesystem::create_directories(d.path() + "/kube/pki");
  d.Write("kube/pki/ca.crt", "CA-FROM-FILE");
  d.Write("kube/pki/client.crt", "CERT-FROM-FILE");
  d.Write("kube/pki/client.key", "KEY-FROM-FILE");
  d.Write("kube/token", "tok-from-file\n");
  const std::string path =
      d.Write("kube/config", Config(kServer + "\n    certificate-authority: pki/ca.crt",
                                    "    client-certificate: pki/client.crt\n    client-key: pki/client.key\n"
                                    "    tokenFile: token"));
  const Result<KubeConnection> c = Resolve(path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->ca_pem, "CA-FROM-FILE");
  EXPECT_EQ(c->client_cert_pem, "CERT-FROM-FILE");
  EXPECT_EQ(c->client_key_pem, "KEY-FROM-FILE");
  EXPECT_EQ(c->token, "tok-from-file");
}

TEST(ResolveKubeconfig, TokenWinsOverTokenFileAndClusterTlsFieldsAreKept) {
  TempDir d;
  const std::string path =
      d.Write("config", Config(kServer + "\n    insecure-skip-tls-verify: true\n    tls-server-name: api.internal",
                               "    token: abc\n    tokenFile: /nonexistent"));
  const Result<KubeConnection> c = Resolve(path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->token, "abc");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->tls_server_name, "api.internal");
}

TEST(ResolveKubeconfig, ContextFlagPicksTheContext) {
  TempDir d;
  std::string text = Config(kServer, "    token: abc", "ctx");
  text += R"(- name: other
  user:
    token: other-token
)";
  // A second context "prod" on the same cluster with user "other".
  text.replace(text.find("users:"), 0, "- name: prod\n  context:\n    cluster: c\n    user: other\n");
  const std::string path = d.Write("config", text);
  const Result<KubeConnection> current = Resolve(path);
  ASSERT_TRUE(current) << current.error().message;
  EXPECT_EQ(current->token, "abc");
  const Result<KubeConnection> prod = Resolve(path, "prod");
  ASSERT_TRUE(prod) << prod.error().message;
  EXPECT_EQ(prod->token, "other-token");
  EXPECT_EQ(prod->context, "prod");
  const Result<KubeConnection> none = Resolve(path, "staging");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, path + ": contexts: no context named 'staging'");
}

TEST(ResolveKubeconfig, KubeconfigListTakesTheFirstFileWithTheContext) {
  TempDir d;
  const std::string a = d.Write("a", Config(kServer, "    token: from-a", "one", "one"));
  const std::string b = d.Write("b", Config("    server: https://b:6443", "    token: from-b", "two", "two"));
  KubeEnvironment env;
  env.kubeconfig = d.path() + "/missing:" + a + ":" + b;
  env.home = d.path();
  const Result<KubeConnection> two = ResolveKubeconfig({.path = "", .context = "two"}, env);
  ASSERT_TRUE(two) << two.error().message;
  EXPECT_EQ(two->server, "https://b:6443");
  EXPECT_EQ(two->source, b);
  const Result<KubeConnection> current = ResolveKubeconfig({}, env);
  ASSERT_TRUE(current) << current.error().message;
  EXPECT_EQ(current->token, "from-a");
  const Result<KubeConnection> three = ResolveKubeconfig({.path = "", .context = "three"}, env);
  ASSERT_FALSE(three);
  EXPECT_THAT(three.error().message, HasSubstr("no file has a context named 'three'"));
}

TEST(ResolveKubeconfig, HomeKubeConfigThenInCluster) {
  TempDir d;
  std::filesystem::create_directories(d.path() + "/home/.kube");
  d.Write("home/.kube/config", Config(kServer, "    token: home"));
  std::filesystem::create_directories(d.path() + "/sa");
  d.Write("sa/token", "sa-token\n");
  d.Write("sa/ca.crt", "SA-CA");
  KubeEnvironment env{.kubeconfig = std::nullopt,
                      .home = d.path() + "/home",
                      .service_host = "10.96.0.1",
                      .service_port = "443",
                      .service_account_dir = d.path() + "/sa"};
  const Result<KubeConnection> home = ResolveKubeconfig({}, env);
  ASSERT_TRUE(home) << home.error().message;
  EXPECT_EQ(home->token, "home");
  env.home = d.path() + "/nobody";
  const Result<KubeConnection> pod = ResolveKubeconfig({}, env);
  ASSERT_TRUE(pod) << pod.error().message;
  EXPECT_EQ(pod->server, "https://10.96.0.1:443");
  EXPECT_EQ(pod->token, "sa-token");
  EXPECT_EQ(pod->ca_pem, "SA-CA");
  EXPECT_EQ(pod->Describe(), "https://10.96.0.1:443 (in-cluster)");
  env.service_host = "fd00::1";
  const Result<KubeConnection> v6 = ResolveKubeconfig({.path = "in-cluster", .context = ""}, env);
  ASSERT_TRUE(v6) << v6.error().message;
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");
  env.service_host.reset();
  const Result<KubeConnection> nothing = ResolveKubeconfig({}, env);
  ASSERT_FALSE(nothing);
  EXPECT_THAT(nothing.error().message, HasSubstr("no kubeconfig: tried " + d.path() + "/nobody/.kube/config"));
  const Result<KubeConnection> explicit_in_cluster = ResolveKubeconfig({.path = "in-cluster", .context = ""}, env);
  ASSERT_FALSE(explicit_in_cluster);
  EXPECT_THAT(explicit_in_cluster.error().message, HasSubstr("KUBERNETES_SERVICE_HOST"));
}

// Writes an executable script.
std::string Script(const TempDir& d, const std::string& name, const std::string& body) {
  const std::string path = d.Write(name, "#!/bin/sh\n" + body);
  ::chmod(path.c_str(), 0755);
  return path;
}

TEST(ResolveKubeconfig, ExecPluginV1TokenGetsExecInfoAndEnv) {
  TempDir d;
  Script(d, "plugin.sh", R"(printf '%s' "$KUBERNETES_EXEC_INFO" > "$(dirname "$0")/info.json"
printf '%s %s' "$1" "$GREETING" > "$(dirname "$0")/seen.txt"
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-token","expirationTimestamp":"2030-01-01T00:00:00Z"}}'
)");
  const std::string path = d.Write("config", Config(kServer, R"(    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./plugin.sh
      args: [--flag]
      env:
      - name: GREETING
        value: hi
      interactiveMode: Never)"));
  const Result<KubeConnection> c = Resolve(path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->token, "exec-token");
  std::ifstream info(d.path() + "/info.json");
  const nlohmann::json request = nlohmann::json::parse(info);
  EXPECT_EQ(request["apiVersion"], "client.authentication.k8s.io/v1");
  EXPECT_EQ(request["kind"], "ExecCredential");
  EXPECT_EQ(request["spec"]["interactive"], false);
  std::ifstream seen(d.path() + "/seen.txt");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(seen), {}), "--flag hi");
}

TEST(ResolveKubeconfig, ExecPluginV1beta1ClientCertificate) {
  TempDir d;
  Script(
      d, "plugin.sh",
      R"(echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"clientCertificateData":"CERT","clientKeyData":"KEY"}}'
)");
  const std::string path = d.Write("config", Config(kServer, R"(    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: ./plugin.sh)"));
  const Result<KubeConnection> c = Resolve(path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
}

TEST(ResolveKubeconfig, ErrorsNameTheFileAndTheField) {
  TempDir d;
  Script(d, "fails.sh", "exit 3\n");
  Script(
      d, "wrong.sh",
      R"(echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}}')");
  Script(d, "empty.sh",
         R"(echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}')");
  Script(d, "chatty.sh", "head -c 2000000 /dev/zero\n");
  struct Case {
    std::string name, cluster, user, message;
  };
  const std::vector<Case> cases = {
      {"key data not base64", kServer, "    client-certificate-data: " + B64(kCertPem) + "\n    client-key-data: '%%%'",
       "users[u].user.client-key-data: not base64"},
      {"ca data not base64", kServer + "\n    certificate-authority-data: '!!'", "    token: t",
       "clusters[c].cluster.certificate-authority-data: not base64"},
      {"missing ca file", kServer + "\n    certificate-authority: nope.crt", "    token: t",
       "clusters[c].cluster.certificate-authority: cannot read '" + d.path() + "/nope.crt'"},
      {"cert without key", kServer, "    client-certificate-data: " + B64(kCertPem),
       "users[u].user.client-key: missing"},
      {"auth-provider", kServer, "    auth-provider:\n      name: gcp", "users[u].user.auth-provider: auth-provider"},
      {"basic auth", kServer, "    username: admin\n    password: secret",
       "users[u].user.username: basic authentication"},
      {"no server scheme", "    server: 10.0.0.1:6443", "    token: t",
       "clusters[c].cluster.server: expected https://"},
      {"bad insecure", kServer + "\n    insecure-skip-tls-verify: maybe", "    token: t",
       "clusters[c].cluster.insecure-skip-tls-verify: expected true or false"},
      {"exec fails", kServer, "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./fails.sh",
       "users[u].user.exec.command: '" + d.path() + "/fails.sh' exited with status 3"},
      {"exec not found", kServer,
       "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: no-such-plugin-gpufit",
       "users[u].user.exec.command: cannot run 'no-such-plugin-gpufit'"},
      {"exec wrong version", kServer,
       "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./wrong.sh",
       "users[u].user.exec: the ExecCredential that '" + d.path() +
           "/wrong.sh' printed: .apiVersion 'client.authentication.k8s.io/v1beta1' is not the requested"},
      {"exec no credential", kServer,
       "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./empty.sh",
       "users[u].user.exec: the ExecCredential that '" + d.path() +
           "/empty.sh' printed: .status has neither a token nor clientCertificateData"},
      {"exec writes too much", kServer,
       "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./chatty.sh",
       "users[u].user.exec.command: '" + d.path() + "/chatty.sh' wrote more than 1 MiB: killed"},
      // A CR/LF would end the Authorization header and start others (header injection).
      {"token with a newline", kServer, "    token: \"abc\\r\\nX-Injected: yes\"",
       "users[u].user.token: the token holds a control character"},
      {"insecure with a CA",
       kServer + "\n    insecure-skip-tls-verify: true\n    certificate-authority-data: " + B64(kCertPem),
       "    token: t", "clusters[c].cluster.insecure-skip-tls-verify: true together with a certificate-authority"},
      {"exec old version", kServer,
       "    exec:\n      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: x",
       "users[u].user.exec.apiVersion: 'client.authentication.k8s.io/v1alpha1' is not supported"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = d.Write("config", Config(c.cluster, c.user));
    const Result<KubeConnection> got = Resolve(path);
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code, Code::kInvalidArgument);
    EXPECT_THAT(got.error().message, HasSubstr(path + ": " + c.message));
  }
}

TEST(ResolveKubeconfig, MissingFileAndNoCurrentContext) {
  TempDir d;
  const Result<KubeConnection> missing = Resolve(d.path() + "/absent");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Code::kNotFound);
  EXPECT_THAT(missing.error().message, HasSubstr(d.path() + "/absent: no such kubeconfig file"));
  const std::string path = d.Write("config", Config(kServer, "    token: t", "\"\""));
  const Result<KubeConnection> no_current = Resolve(path);
  ASSERT_FALSE(no_current);
  EXPECT_EQ(no_current.error().message, path + ": current-context: not set: give --context");
}

TEST(KubeClient, RejectsBadServerUrlsAndNonPemMaterial) {
  EXPECT_FALSE(KubeClient::Make(Conn("ftp://x")));
  EXPECT_FALSE(KubeClient::Make(Conn("https://x:99999")));
  const Result<KubeClient> ca = KubeClient::Make(Conn("https://x", "junk"));
  ASSERT_FALSE(ca);
  EXPECT_THAT(ca.error().message, HasSubstr("k: the certificate authority of https://x holds no PEM certificate"));
  EXPECT_TRUE(KubeClient::Make(Conn("https://[::1]:6443/prefix/")));
}

TEST(KubeClient, UnreachableServerNamesTheServerAndPath) {
  // Port 1 on loopback: nothing listens.
  const Result<KubeClient> c =
      KubeClient::Make(Conn("https://127.0.0.1:1"), {.connect_timeout_s = 2, .read_timeout_s = 2, .page_limit = 500});
  ASSERT_TRUE(c) << c.error().message;
  const Result<nlohmann::json> got = c->List("/api/v1/nodes");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, Code::kUnavailable);
  EXPECT_THAT(got.error().message, HasSubstr("https://127.0.0.1:1/api/v1/nodes?limit=500: cannot connect"));
}

}  // namespace
}  // namespace gpufit::kube_api
