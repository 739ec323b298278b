// Where and how to reach a Kubernetes API server: a kubeconfig file, or the pod's own service
// account, resolved into one KubeConnection (server, TLS trust, client credentials), the way
// kubectl and client-go (tools/clientcmd, rest.InClusterConfig) resolve them.
//
// Resolution (KubeconfigRequest):
//   1. `path` "in-cluster": the service account (KUBERNETES_SERVICE_HOST and _PORT, the token
//      and ca.crt under /var/run/secrets/kubernetes.io/serviceaccount).
//   2. `path` set: that file.
//   3. $KUBECONFIG: a colon-separated list. client-go merges every file; here the first
//      existing file that has the context asked for is used (with no `context`, the first
//      existing file that names a current-context, else the first existing file).
//   4. ~/.kube/config.
//   5. Else in-cluster, when KUBERNETES_SERVICE_HOST is set; else an error saying what was tried.
// `context` picks the context (default: the file's current-context). Of the context, the
// cluster and the user are used; its namespace is not (gpufit lists every namespace).
//
// Cluster fields: server, certificate-authority (file), certificate-authority-data (base64
// PEM), insecure-skip-tls-verify, tls-server-name. User fields: client-certificate(-data),
// client-key(-data), token, tokenFile, exec. A relative file path (certificate-authority,
// client-certificate, client-key, tokenFile, and an exec command with a '/') resolves against
// the folder of the kubeconfig that holds it, as client-go's ResolvePaths does. The *-data field
// wins over its file field, and token over tokenFile, as in client-go.
//
// exec credential plugins (client.authentication.k8s.io/v1 and v1beta1): the command runs with
// its args, the process environment plus its `env`, and KUBERNETES_EXEC_INFO set to the
// ExecCredential request JSON (spec.interactive false; spec.cluster when provideClusterInfo),
// as kubectl runs it; its stdout must be an ExecCredential of the same apiVersion whose status
// has a token, or clientCertificateData and clientKeyData (PEM). Its stderr goes to ours. The
// plugin runs once per resolution: status.expirationTimestamp is ignored (a gpufit run is
// short; `serve` resolves again on each re-list).
//
// auth-provider (gcp, azure, oidc) and username/password are not supported: an error says so.
//
// Errors are kInvalidArgument (kNotFound for a missing file) and name the file and the field:
//   /home/a/.kube/config: users[admin].user.client-key-data: not base64
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "gpufit/core/result.h"

namespace gpufit::kube_api {

// The process environment the resolution reads, injected so tests need no global state.
struct KubeEnvironment {
  std::optional<std::string> kubeconfig;    // $KUBECONFIG
  std::optional<std::string> home;          // $HOME
  std::optional<std::string> service_host;  // $KUBERNETES_SERVICE_HOST
  std::optional<std::string> service_port;  // $KUBERNETES_SERVICE_PORT
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";

  static KubeEnvironment FromProcess();  // reads getenv
};

struct KubeconfigRequest {
  std::string path;     // "" = $KUBECONFIG, ~/.kube/config, in-cluster; "in-cluster" = the service account
  std::string context;  // "" = the current-context
};

// What a client needs to talk to one API server. PEM text, never file names: files are read
// at resolution, so every error about them names the kubeconfig field.
struct KubeConnection {
  std::string server;   // "https://host:port" or with a path prefix; http:// is allowed
  std::string source;   // the kubeconfig file, or "in-cluster"
  std::string context;  // the context used ("" in-cluster)
  std::string ca_pem;   // trusted CAs; "" = the system's
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // the name the server's certificate is checked against; "" = server's host
  std::string client_cert_pem, client_key_pem;  // both or neither
  std::string token;                            // bearer token; "" = none

  // "https://host:port (context NAME)" or "https://host:port (in-cluster)".
  std::string Describe() const;
};

// Resolves `request` as said at the top of this file.
Result<KubeConnection> ResolveKubeconfig(const KubeconfigRequest& request, const KubeEnvironment& env);

// Standard base64 (RFC 4648, with or without padding; whitespace skipped); nullopt if malformed.
std::optional<std::string> DecodeBase64(const std::string& text);

}  // namespace gpufit::kube_api
