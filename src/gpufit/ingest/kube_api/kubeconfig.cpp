#include "gpufit/ingest/kube_api/kubeconfig.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "gpufit/core/yaml_nesting.h"

extern char** environ;

namespace gpufit::kube_api {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

std::optional<std::string> Env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::optional<std::string> ReadWhole(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

// One kubeconfig file: its path (as named in errors), folder and YAML.
struct ConfigFile {
  std::string path;
  fs::path dir;
  YAML::Node root;

  Error Bad(const std::string& field, const std::string& why) const {
    return InvalidArgument("{}: {}: {}", path, field, why);
  }
  // A relative path resolves against the kubeconfig's folder (client-go clientcmd ResolvePaths).
  std::string Resolve(const std::string& p) const {
    if (p.empty() || fs::path(p).is_absolute()) return p;
    return (dir / p).lexically_normal().string();
  }
};

Result<ConfigFile> LoadConfig(const std::string& path) {
  const std::optional<std::string> text = ReadWhole(path);
  if (!text) return NotFound("{}: no such kubeconfig file", path);
  ConfigFile f{.path = path, .dir = fs::absolute(fs::path(path)).parent_path(), .root = {}};
  if (Result<void> ok = CheckYamlNesting(*text, path); !ok) return ok.error();
  try {
    f.root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument("{}: not YAML (line {}, column {}): {}", path, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
  if (f.root.IsNull()) f.root = YAML::Node(YAML::NodeType::Map);
  if (!f.root.IsMap()) return f.Bad("top level", "expected a mapping (apiVersion v1, kind Config)");
  return f;
}

// A string field of `node` ("" when absent or null); `field` names it in errors.
Result<std::string> Str(const ConfigFile& f, const YAML::Node& node, const char* key, const std::string& field) {
  const YAML::Node v = node[key];
  if (!v.IsDefined() || v.IsNull()) return std::string();
  if (!v.IsScalar()) return f.Bad(field + "." + key, "expected a string");
  return v.Scalar();
}

// The entry `name` of the named list `list` (clusters, users, contexts): its `inner` mapping.
Result<std::optional<YAML::Node>> Named(const ConfigFile& f, const char* list, const std::string& name,
                                        const char* inner) {
  const YAML::Node items = f.root[list];
  if (!items.IsDefined() || items.IsNull()) return std::optional<YAML::Node>();
  if (!items.IsSequence()) return f.Bad(list, "expected a list");
  for (std::size_t i = 0; i < items.size(); ++i) {
    const YAML::Node item = items[i];
    if (!item.IsMap())
      return f.Bad(fmt::format("{}[{}]", list, i), "expected a mapping with name and " + std::string(inner));
    const YAML::Node item_name = item["name"];
    if (!item_name.IsDefined() || !item_name.IsScalar() || item_name.Scalar() != name) continue;
    const YAML::Node body = item[inner];
    if (body.IsDefined() && !body.IsNull() && !body.IsMap())
      return f.Bad(fmt::format("{}[{}].{}", list, name, inner), "expected a mapping");
    return std::optional<YAML::Node>(body.IsMap() ? body : YAML::Node(YAML::NodeType::Map));
  }
  return std::optional<YAML::Node>();
}

bool HasContext(const ConfigFile& f, const std::string& name) {
  const Result<std::optional<YAML::Node>> c = Named(f, "contexts", name, "context");
  return c && c->has_value();
}

// `field` (a *-data field, base64) or else `file_field` (a path): the PEM or token text.
Result<std::string> DataOrFile(const ConfigFile& f, const YAML::Node& node, const std::string& where,
                               const char* data_key, const char* file_key) {
  Result<std::string> data = Str(f, node, data_key, where);
  if (!data) return data.error();
  if (!data->empty()) {
    std::optional<std::string> decoded = DecodeBase64(*data);
    if (!decoded) return f.Bad(where + "." + data_key, "not base64");
    return std::move(*decoded);
  }
  Result<std::string> file = Str(f, node, file_key, where);
  if (!file) return file.error();
  if (file->empty()) return std::string();
  const std::string path = f.Resolve(*file);
  std::optional<std::string> text = ReadWhole(path);
  if (!text) return f.Bad(where + "." + file_key, fmt::format("cannot read '{}'", path));
  return std::move(*text);
}

struct ExecOutput {
  std::string out;
  int status = 0;
};

// Runs argv with `env` (NAME=VALUE entries) as its whole environment, stdin from /dev/null and
// stderr ours; its stdout is captured. Bounded: a plugin (with whatever it started: it leads a
// process group of its own) that has not closed its output within kPluginTimeoutS, or that
// writes more than 1 MiB (an ExecCredential is a few KiB), is killed and is an error.
constexpr int kPluginTimeoutS = 60;
Result<ExecOutput> RunPlugin(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Internal("pipe: {}", std::strerror(errno));
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return Internal("fork: {}", std::strerror(errno));
  }
  if (pid == 0) {  // only async-signal-safe calls from here
    ::setpgid(0, 0);
    ::dup2(pipe_fds[1], 1);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::execvpe(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever runs first
  ::close(pipe_fds[1]);
  ExecOutput result;
  std::string failure;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kPluginTimeoutS);
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{.fd = pipe_fds[0], .events = POLLIN, .revents = 0};
    const int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      failure = fmt::format("did not finish within {} s", kPluginTimeoutS);
      break;
    }
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n > 0) {
      result.out.append(buf, static_cast<std::size_t>(n));
      if (result.out.size() > (1u << 20)) {
        failure = "wrote more than 1 MiB";
        break;
      }
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(pipe_fds[0]);
  if (!failure.empty()) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!failure.empty()) return Unavailable("'{}' {}: killed", argv.front(), failure);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return result;
}

// The exec credential plugin of users[name].user.exec: its token or client certificate.
Result<void> RunExec(const ConfigFile& f, const YAML::Node& exec, const std::string& where,
                     const KubeConnection& cluster, const std::string& cluster_ca_data, KubeConnection& out) {
  if (!exec.IsMap()) return f.Bad(where, "expected a mapping");
  Result<std::string> api = Str(f, exec, "apiVersion", where);
  if (!api) return api.error();
  if (*api != "client.authentication.k8s.io/v1" && *api != "client.authentication.k8s.io/v1beta1")
    return f.Bad(where + ".apiVersion",
                 fmt::format("'{}' is not supported (client.authentication.k8s.io/v1 or v1beta1)", *api));
  Result<std::string> command = Str(f, exec, "command", where);
  if (!command) return command.error();
  if (command->empty()) return f.Bad(where + ".command", "missing");
  // client-go resolves a command with a path separator against the kubeconfig's folder; a bare
  // name is looked up in PATH.
  std::vector<std::string> argv{command->find('/') != std::string::npos ? f.Resolve(*command) : *command};
  if (const YAML::Node args = exec["args"]; args.IsDefined() && !args.IsNull()) {
    if (!args.IsSequence()) return f.Bad(where + ".args", "expected a list of strings");
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (!args[i].IsScalar()) return f.Bad(fmt::format("{}.args[{}]", where, i), "expected a string");
      argv.push_back(args[i].Scalar());
    }
  }
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (!std::string_view(*e).starts_with("KUBERNETES_EXEC_INFO=")) env.emplace_back(*e);
  if (const YAML::Node vars = exec["env"]; vars.IsDefined() && !vars.IsNull()) {
    if (!vars.IsSequence()) return f.Bad(where + ".env", "expected a list of {name, value}");
    for (std::size_t i = 0; i < vars.size(); ++i) {
      const std::string at = fmt::format("{}.env[{}]", where, i);
      if (!vars[i].IsMap()) return f.Bad(at, "expected {name, value}");
      Result<std::string> name = Str(f, vars[i], "name", at);
      if (!name) return name.error();
      Result<std::string> value = Str(f, vars[i], "value", at);
      if (!value) return value.error();
      if (name->empty()) return f.Bad(at + ".name", "missing");
      std::erase_if(env, [&](const std::string& e) { return e.starts_with(*name + "="); });
      env.push_back(*name + "=" + *value);
    }
  }
  Json spec{{"interactive", false}};
  if (const YAML::Node p = exec["provideClusterInfo"]; p.IsDefined() && p.IsScalar() && p.Scalar() == "true") {
    Json c{{"server", cluster.server}};
    if (!cluster_ca_data.empty()) c["certificate-authority-data"] = cluster_ca_data;
    if (cluster.insecure_skip_tls_verify) c["insecure-skip-tls-verify"] = true;
    if (!cluster.tls_server_name.empty()) c["tls-server-name"] = cluster.tls_server_name;
    spec["cluster"] = c;
  }
  const Json info{{"apiVersion", *api}, {"kind", "ExecCredential"}, {"spec", spec}};
  env.push_back("KUBERNETES_EXEC_INFO=" + info.dump());
  Result<ExecOutput> ran = RunPlugin(argv, env);
  if (!ran) return f.Bad(where + ".command", ran.error().message);
  if (ran->status == 127 && ran->out.empty())
    return f.Bad(where + ".command", fmt::format("cannot run '{}'", argv.front()));
  if (ran->status != 0)
    return f.Bad(where + ".command", fmt::format("'{}' exited with status {}", argv.front(), ran->status));
  const std::string got = fmt::format("the ExecCredential that '{}' printed", argv.front());
  Json cred;
  try {
    cred = Json::parse(ran->out);
  } catch (const Json::exception& e) {
    return f.Bad(where, fmt::format("{} is not JSON: {}", got, e.what()));
  }
  if (!cred.is_object() || cred.value("kind", "") != "ExecCredential")
    return f.Bad(where, fmt::format("{}: .kind must be ExecCredential", got));
  if (cred.value("apiVersion", "") != *api)
    return f.Bad(
        where, fmt::format("{}: .apiVersion '{}' is not the requested '{}'", got, cred.value("apiVersion", ""), *api));
  const Json status = cred.contains("status") && cred["status"].is_object() ? cred["status"] : Json::object();
  auto text = [&](const char* key) {
    const auto it = status.find(key);
    return it != status.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string token = text("token"), cert = text("clientCertificateData"), key = text("clientKeyData");
  if (cert.empty() != key.empty())
    return f.Bad(where, fmt::format("{}: .status needs both clientCertificateData and clientKeyData", got));
  if (token.empty() && cert.empty())
    return f.Bad(where, fmt::format("{}: .status has neither a token nor clientCertificateData", got));
  if (!token.empty()) out.token = token;
  if (!cert.empty()) {
    out.client_cert_pem = cert;
    out.client_key_pem = key;
  }
  return {};
}

Result<KubeConnection> FromFileFields(const ConfigFile& f, const std::string& context_asked) {
  KubeConnection out;
  out.source = f.path;
  out.context = context_asked;
  if (out.context.empty()) {
    Result<std::string> current = Str(f, f.root, "current-context", "");
    if (!current) return current.error();
    if (current->empty()) return f.Bad("current-context", "not set: give --context");
    out.context = *current;
  }
  Result<std::optional<YAML::Node>> ctx = Named(f, "contexts", out.context, "context");
  if (!ctx) return ctx.error();
  if (!*ctx) return f.Bad("contexts", fmt::format("no context named '{}'", out.context));
  const std::string ctx_where = fmt::format("contexts[{}].context", out.context);
  Result<std::string> cluster_name = Str(f, **ctx, "cluster", ctx_where);
  if (!cluster_name) return cluster_name.error();
  Result<std::string> user_name = Str(f, **ctx, "user", ctx_where);
  if (!user_name) return user_name.error();
  if (cluster_name->empty()) return f.Bad(ctx_where + ".cluster", "missing");

  Result<std::optional<YAML::Node>> cluster = Named(f, "clusters", *cluster_name, "cluster");
  if (!cluster) return cluster.error();
  if (!*cluster) return f.Bad("clusters", fmt::format("no cluster named '{}' (of {})", *cluster_name, ctx_where));
  const std::string cw = fmt::format("clusters[{}].cluster", *cluster_name);
  Result<std::string> server = Str(f, **cluster, "server", cw);
  if (!server) return server.error();
  if (!server->starts_with("https://") && !server->starts_with("http://"))
    return f.Bad(cw + ".server", fmt::format("expected https://host[:port], got '{}'", *server));
  out.server = *server;
  Result<std::string> ca = DataOrFile(f, **cluster, cw, "certificate-authority-data", "certificate-authority");
  if (!ca) return ca.error();
  out.ca_pem = std::move(*ca);
  Result<std::string> ca_data = Str(f, **cluster, "certificate-authority-data", cw);
  if (!ca_data) return ca_data.error();
  if (const YAML::Node insecure = (**cluster)["insecure-skip-tls-verify"]; insecure.IsDefined() && !insecure.IsNull()) {
    bool value = false;
    if (!insecure.IsScalar() || !YAML::convert<bool>::decode(insecure, value))
      return f.Bad(cw + ".insecure-skip-tls-verify", "expected true or false");
    out.insecure_skip_tls_verify = value;
  }
  // client-go refuses the two together ("specifying a root certificates file with the insecure
  // flag is not allowed"): one of them is a mistake, and verification would be off.
  if (out.insecure_skip_tls_verify && !out.ca_pem.empty())
    return f.Bad(cw + ".insecure-skip-tls-verify",
                 "true together with a certificate-authority: give one (client-go refuses both)");
  Result<std::string> sni = Str(f, **cluster, "tls-server-name", cw);
  if (!sni) return sni.error();
  out.tls_server_name = *sni;

  if (user_name->empty()) return out;  // no credentials: anonymous
  Result<std::optional<YAML::Node>> user = Named(f, "users", *user_name, "user");
  if (!user) return user.error();
  if (!*user) return f.Bad("users", fmt::format("no user named '{}' (of {})", *user_name, ctx_where));
  const std::string uw = fmt::format("users[{}].user", *user_name);
  const YAML::Node& u = **user;
  if (u["auth-provider"].IsDefined() && !u["auth-provider"].IsNull())
    return f.Bad(uw + ".auth-provider",
                 "auth-provider plugins are not supported (removed from kubectl too): use an exec credential plugin "
                 "(e.g. gke-gcloud-auth-plugin, kubelogin)");
  if ((u["username"].IsDefined() && !u["username"].IsNull()) || (u["password"].IsDefined() && !u["password"].IsNull()))
    return f.Bad(uw + ".username",
                 "basic authentication (username/password) is not supported: use a token, a client "
                 "certificate or an exec plugin");
  Result<std::string> cert = DataOrFile(f, u, uw, "client-certificate-data", "client-certificate");
  if (!cert) return cert.error();
  Result<std::string> key = DataOrFile(f, u, uw, "client-key-data", "client-key");
  if (!key) return key.error();
  if (cert->empty() != key->empty())
    return f.Bad(uw + (cert->empty() ? ".client-certificate" : ".client-key"),
                 "missing: a client certificate needs both client-certificate(-data) and client-key(-data)");
  out.client_cert_pem = std::move(*cert);
  out.client_key_pem = std::move(*key);
  Result<std::string> token = Str(f, u, "token", uw);
  if (!token) return token.error();
  if (token->empty()) {
    Result<std::string> token_file = Str(f, u, "tokenFile", uw);
    if (!token_file) return token_file.error();
    if (!token_file->empty()) {
      const std::string path = f.Resolve(*token_file);
      const std::optional<std::string> text = ReadWhole(path);
      if (!text) return f.Bad(uw + ".tokenFile", fmt::format("cannot read '{}'", path));
      *token = Trimmed(*text);
      if (token->empty()) return f.Bad(uw + ".tokenFile", fmt::format("'{}' is empty", path));
    }
  }
  out.token = std::move(*token);
  if (const YAML::Node exec = u["exec"]; exec.IsDefined() && !exec.IsNull()) {
    if (Result<void> ok = RunExec(f, exec, uw + ".exec", out, *ca_data, out); !ok) return ok.error();
  }
  // The token goes into an Authorization header: a control character (a CR/LF would end the
  // header and start others) is refused, as Go's net/http refuses it.
  for (const char c : out.token)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return f.Bad(uw + (u["exec"].IsDefined() ? ".exec" : ".token"), "the token holds a control character");
  return out;
}

Result<KubeConnection> FromFile(const ConfigFile& f, const std::string& context_asked) {
  try {
    return FromFileFields(f, context_asked);
  } catch (const YAML::Exception& e) {  // a shape the accessors above did not expect
    return InvalidArgument("{}: line {}: {}", f.path, e.mark.line + 1, e.msg);
  }
}

Result<KubeConnection> InCluster(const KubeEnvironment& env) {
  if (!env.service_host || env.service_host->empty() || !env.service_port || env.service_port->empty())
    return InvalidArgument(
        "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not running in a pod?)");
  const std::string host =
      env.service_host->find(':') != std::string::npos ? "[" + *env.service_host + "]" : *env.service_host;
  KubeConnection out;
  out.server = "https://" + host + ":" + *env.service_port;
  out.source = "in-cluster";
  const std::string token_path = env.service_account_dir + "/token";
  const std::optional<std::string> token = ReadWhole(token_path);
  if (!token) return InvalidArgument("in-cluster: cannot read the service account token {}", token_path);
  out.token = Trimmed(*token);
  if (out.token.empty()) return InvalidArgument("in-cluster: {} is empty", token_path);
  const std::string ca_path = env.service_account_dir + "/ca.crt";
  const std::optional<std::string> ca = ReadWhole(ca_path);
  if (!ca) return InvalidArgument("in-cluster: cannot read the cluster's CA {}", ca_path);
  out.ca_pem = *ca;
  return out;
}

}  // namespace

KubeEnvironment KubeEnvironment::FromProcess() {
  KubeEnvironment env;
  env.kubeconfig = Env("KUBECONFIG");
  env.home = Env("HOME");
  env.service_host = Env("KUBERNETES_SERVICE_HOST");
  env.service_port = Env("KUBERNETES_SERVICE_PORT");
  return env;
}

std::string KubeConnection::Describe() const {
  return context.empty() ? fmt::format("{} (in-cluster)", server) : fmt::format("{} (context {})", server, context);
}

std::optional<std::string> DecodeBase64(const std::string& text) {
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0, pad = 0;
  for (const char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad > 0) return std::nullopt;  // data after padding
    int v = -1;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '+')
      v = 62;
    else if (c == '/')
      v = 63;
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (pad > 2 || bits >= 6) return std::nullopt;  // 6 leftover bits: one character too many
  return out;
}

Result<KubeConnection> ResolveKubeconfig(const KubeconfigRequest& request, const KubeEnvironment& env) {
  if (request.path == "in-cluster") {
    if (!request.context.empty()) return InvalidArgument("--context {}: in-cluster has no contexts", request.context);
    return InCluster(env);
  }
  if (!request.path.empty()) {
    Result<ConfigFile> f = LoadConfig(request.path);
    if (!f) return f.error();
    return FromFile(*f, request.context);
  }
  std::vector<std::string> tried;
  if (env.kubeconfig && !env.kubeconfig->empty()) {
    std::optional<ConfigFile> first;
    std::stringstream list(*env.kubeconfig);
    for (std::string path; std::getline(list, path, ':');) {
      if (path.empty()) continue;
      tried.push_back(path);
      std::error_code ec;
      if (!fs::is_regular_file(path, ec)) continue;
      Result<ConfigFile> f = LoadConfig(path);
      if (!f) return f.error();
      const YAML::Node current = f->root["current-context"];
      const bool fits = request.context.empty() ? current.IsDefined() && current.IsScalar() && !current.Scalar().empty()
                                                : HasContext(*f, request.context);
      if (fits) return FromFile(*f, request.context);
      if (!first) first = std::move(*f);
    }
    if (first && request.context.empty()) return FromFile(*first, request.context);
    if (first)
      return InvalidArgument("$KUBECONFIG ({}): no file has a context named '{}'", *env.kubeconfig, request.context);
  } else if (env.home && !env.home->empty()) {
    const std::string path = *env.home + "/.kube/config";
    tried.push_back(path);
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) {
      Result<ConfigFile> f = LoadConfig(path);
      if (!f) return f.error();
      return FromFile(*f, request.context);
    }
  }
  if (env.service_host && !env.service_host->empty() && request.context.empty()) return InCluster(env);
  return InvalidArgument(
      "no kubeconfig: tried {}{}; give --kubeconfig PATH (or in-cluster in a pod)",
      tried.empty() ? std::string("nothing ($KUBECONFIG and $HOME unset)") : fmt::format("{}", fmt::join(tried, ", ")),
      env.service_host ? "" : " and not in a pod (KUBERNETES_SERVICE_HOST unset)");
}

}  // namespace gpufit::kube_api
