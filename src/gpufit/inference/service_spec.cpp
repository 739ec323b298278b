#include "gpufit/inference/service_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gpufit/core/yaml_nesting.h"
#include "gpufit/ingest/internal/yaml_fields.h"

namespace gpufit {
namespace {

using internal::Fields;

std::string Resolve(const std::string& path, const std::filesystem::path& folder) {
  constexpr std::string_view kData = "$GPUFIT_DATA/";
  if (path.rfind(kData, 0) == 0) {
    const char* env = std::getenv("GPUFIT_DATA");
    return (std::filesystem::path(env && *env ? env : "../shared/data") / path.substr(kData.size())).string();
  }
  const std::filesystem::path p(path);
  return p.is_absolute() ? path : (folder / p).lexically_normal().string();
}

// A Kubernetes object name as a DNS-1123 label: 1-63 lowercase letters, digits or '-',
// starting and ending with a letter or digit (kubernetes.io/docs/concepts/overview/
// working-with-objects/names/). It also names the manifest files.
Result<void> CheckDnsLabel(const std::string& value, const std::string& where, const char* field) {
  const auto ok_char = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; };
  const bool ok = !value.empty() && value.size() <= 63 && std::all_of(value.begin(), value.end(), ok_char) &&
                  value.front() != '-' && value.back() != '-';
  if (!ok) {
    return InvalidArgument("{}: {} '{}' must be a DNS-1123 label (1-63 of a-z, 0-9, '-', alphanumeric at both ends)",
                           where, field, value);
  }
  return {};
}

// A whole number in [min, max].
Result<long long> Integer(const Fields& f, const char* key, std::optional<double> fallback, double min, double max) {
  GPUFIT_TRY(x, f.Number(key, fallback, min));
  if (x > max || x != std::floor(x)) {
    return InvalidArgument("{}: field '{}' must be a whole number from {} to {}, got {}", f.where(), key, min, max, x);
  }
  return static_cast<long long>(x);
}

constexpr double kMostPerReplica = 100000;  // concurrency and sequences per replica

Result<InferenceServiceSpec> ParseService(const YAML::Node& node, const std::string& where,
                                          const std::filesystem::path& folder) {
  const Fields f(node, where);
  GPUFIT_CHECK(f.Only({"name", "namespace", "deployment", "requests", "seed", "gpu", "llm", "service_time",
                       "concurrency", "cold_start", "slo", "window_s", "hpa"}));
  InferenceServiceSpec s;
  GPUFIT_TRY(name, f.Text("name"));
  s.name = name;
  const std::string at = where + " '" + name + "'";
  GPUFIT_TRY(ns, f.Text("namespace", std::string("default")));
  GPUFIT_TRY(deployment, f.Text("deployment", name));
  GPUFIT_CHECK(CheckDnsLabel(name, where, "name"));
  GPUFIT_CHECK(CheckDnsLabel(ns, at, "namespace"));
  GPUFIT_CHECK(CheckDnsLabel(deployment, at, "deployment"));
  GPUFIT_TRY(gpu, f.Text("gpu", s.gpu));
  GPUFIT_TRY(seed, Integer(f, "seed", 1, 0, 9007199254740991.0));
  GPUFIT_TRY(window, f.Number("window_s", 60));
  s.kube_namespace = ns;
  s.deployment = deployment;
  s.gpu = gpu;
  s.seed = static_cast<std::uint64_t>(seed);
  // KEDA cron triggers, which carry the schedule, have a granularity of one minute.
  if (window < 60)
    return InvalidArgument("{}: window_s must be >= 60 (cron triggers are per minute), got {}", at, window);
  s.window_s = window;

  if (!f.Has("requests")) return InvalidArgument("{}: missing field 'requests'", at);
  const Fields r(node["requests"], at + ": requests");
  GPUFIT_CHECK(r.Only({"format", "path", "request_type"}));
  GPUFIT_TRY(format, r.Text("format"));
  GPUFIT_TRY(path, r.Text("path"));
  GPUFIT_TRY(type, r.Text("request_type", s.request_type));
  if (format == "azure-llm") {
    s.format = RequestFormat::kAzureLlm;
  } else if (format == "generic") {
    s.format = RequestFormat::kGeneric;
  } else if (format == "gentd26-qps") {
    s.format = RequestFormat::kGenTd26Qps;
  } else {
    return InvalidArgument("{}: requests.format must be azure-llm, generic or gentd26-qps, got '{}'", at, format);
  }
  s.requests_path = Resolve(path, folder);
  s.request_type = type;

  if (f.Has("llm") && (f.Has("service_time") || f.Has("concurrency"))) {
    return InvalidArgument("{}: give either llm, or service_time and concurrency, not both", at);
  }
  if (f.Has("llm")) {
    const Fields l(node["llm"], at + ": llm");
    GPUFIT_CHECK(l.Only({"model", "prefill_mfu", "decode_mbu", "memory_utilization", "max_num_seqs",
                         "prefill_tokens_per_s", "tpot_ms", "max_concurrent_sequences"}));
    const bool roofline =
        l.Has("prefill_mfu") || l.Has("decode_mbu") || l.Has("memory_utilization") || l.Has("max_num_seqs");
    const bool direct = l.Has("prefill_tokens_per_s") || l.Has("tpot_ms") || l.Has("max_concurrent_sequences");
    if ((l.Has("model") && direct) || (!l.Has("model") && roofline)) {
      return InvalidArgument(
          "{}: llm: give model (with prefill_mfu, decode_mbu, memory_utilization, max_num_seqs), or "
          "prefill_tokens_per_s, tpot_ms and max_concurrent_sequences, not a mix",
          at);
    }
    if (l.Has("model")) {
      GPUFIT_TRY(model, l.Text("model"));
      if (!FindLlmArchitecture(model)) return InvalidArgument("{}: {}", at, FindLlmArchitecture(model).error().message);
      s.llm_model = model;
      GPUFIT_TRY(mfu, l.Number("prefill_mfu", s.llm_params.prefill_mfu));
      GPUFIT_TRY(mbu, l.Number("decode_mbu", s.llm_params.decode_mbu));
      GPUFIT_TRY(util, l.Number("memory_utilization", s.llm_params.memory_utilization));
      GPUFIT_TRY(seqs, Integer(l, "max_num_seqs", s.llm_params.max_num_seqs, 1, kMostPerReplica));
      s.llm_params = {
          .prefill_mfu = mfu, .decode_mbu = mbu, .memory_utilization = util, .max_num_seqs = static_cast<int>(seqs)};
    } else {
      GPUFIT_TRY(rate, l.Number("prefill_tokens_per_s"));
      GPUFIT_TRY(tpot, l.Number("tpot_ms"));
      GPUFIT_TRY(seqs, Integer(l, "max_concurrent_sequences", std::nullopt, 1, kMostPerReplica));
      if (rate <= 0 || tpot <= 0) return InvalidArgument("{}: llm.prefill_tokens_per_s and tpot_ms must be > 0", at);
      s.llm_direct = LlmServiceModel{
          .prefill_tokens_per_s = rate, .tpot_s = tpot / 1000, .max_concurrent_sequences = static_cast<int>(seqs)};
    }
  } else {
    if (!f.Has("service_time")) return InvalidArgument("{}: give 'llm' or 'service_time'", at);
    const Fields t(node["service_time"], at + ": service_time");
    GPUFIT_CHECK(t.Only({"samples_path", "seconds"}));
    if (t.Has("samples_path") == t.Has("seconds")) {
      return InvalidArgument("{}: service_time: give exactly one of samples_path, seconds", at);
    }
    if (t.Has("samples_path")) {
      GPUFIT_TRY(samples, t.Text("samples_path"));
      s.service_samples_path = Resolve(samples, folder);
    } else {
      GPUFIT_TRY(seconds, t.Number("seconds"));
      if (seconds <= 0) return InvalidArgument("{}: service_time.seconds must be > 0", at);
      s.service_s = seconds;
    }
    GPUFIT_TRY(concurrency, Integer(f, "concurrency", 1, 1, kMostPerReplica));
    s.concurrency = static_cast<int>(concurrency);
  }

  if (!f.Has("cold_start")) return InvalidArgument("{}: missing field 'cold_start'", at);
  const Fields c(node["cold_start"], at + ": cold_start");
  GPUFIT_CHECK(c.Only({"seconds", "samples_path", "load_gb_per_s", "init_s"}));
  const int ways = (c.Has("seconds") ? 1 : 0) + (c.Has("samples_path") ? 1 : 0) + (c.Has("load_gb_per_s") ? 1 : 0);
  if (ways != 1) return InvalidArgument("{}: cold_start: give exactly one of seconds, samples_path, load_gb_per_s", at);
  if (c.Has("seconds")) {
    GPUFIT_TRY(seconds, c.Number("seconds"));
    s.cold_start_s = seconds;
  } else if (c.Has("samples_path")) {
    GPUFIT_TRY(samples, c.Text("samples_path"));
    s.cold_start_samples_path = Resolve(samples, folder);
  } else {
    if (!s.llm_model) return InvalidArgument("{}: cold_start.load_gb_per_s needs llm.model (the weights' size)", at);
    GPUFIT_TRY(bw, c.Number("load_gb_per_s"));
    GPUFIT_TRY(init, c.Number("init_s", 0));
    if (bw <= 0) return InvalidArgument("{}: cold_start.load_gb_per_s must be > 0", at);
    s.load_gb_per_s = bw;
    s.init_s = init;
  }

  if (!f.Has("slo")) return InvalidArgument("{}: missing field 'slo'", at);
  const Fields o(node["slo"], at + ": slo");
  GPUFIT_CHECK(o.Only({"metric", "seconds", "target"}));
  GPUFIT_TRY(metric, o.Text("metric"));
  GPUFIT_TRY(seconds, o.Number("seconds"));
  GPUFIT_TRY(target, o.Number("target", 0.99));
  if (metric == "ttft") {
    s.slo.metric = SloMetric::kTtft;
  } else if (metric == "latency") {
    s.slo.metric = SloMetric::kLatency;
  } else if (metric == "wait") {
    s.slo.metric = SloMetric::kWait;
  } else {
    return InvalidArgument("{}: slo.metric must be ttft, latency or wait, got '{}'", at, metric);
  }
  if (s.slo.metric == SloMetric::kTtft && !s.IsLlm()) return InvalidArgument("{}: slo.metric ttft needs an LLM", at);
  if (seconds <= 0 || target <= 0 || target >= 1) {
    return InvalidArgument("{}: slo.seconds must be > 0 and slo.target in (0, 1)", at);
  }
  s.slo.seconds = seconds;
  s.slo.target = target;

  if (f.Has("hpa")) {
    const Fields h(node["hpa"], at + ": hpa");
    GPUFIT_CHECK(h.Only({"target_utilization", "stabilization_s"}));
    GPUFIT_TRY(u, h.Number("target_utilization", s.hpa.target_utilization));
    GPUFIT_TRY(stab, h.Number("stabilization_s", s.hpa.stabilization_s));
    if (u <= 0 || u > 1) return InvalidArgument("{}: hpa.target_utilization must be in (0, 1]", at);
    s.hpa.target_utilization = u;
    s.hpa.stabilization_s = stab;
  }
  return s;
}

}  // namespace

Result<std::vector<InferenceServiceSpec>> ReadInferenceServices(const std::string& path) {
  if (std::filesystem::is_directory(path)) return InvalidArgument("{}: is a directory, not a services file", path);
  YAML::Node root;
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("{}: cannot read the file", path);
  std::stringstream text;
  text << in.rdbuf();
  if (Result<void> ok = CheckYamlNesting(text.str(), path); !ok) return ok.error();
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    return InvalidArgument("{}:{}: {}", path, e.mark.line + 1, e.msg);
  }
  const Fields top(root, path);
  GPUFIT_CHECK(top.Only({"services"}));
  const YAML::Node list = root["services"];
  if (!list || !list.IsSequence() || list.size() == 0)
    return InvalidArgument("{}: 'services' must be a non-empty list", path);
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  std::vector<InferenceServiceSpec> services;
  for (std::size_t i = 0; i < list.size(); ++i) {
    Result<InferenceServiceSpec> s = ParseService(list[i], fmt::format("{}: services[{}]", path, i), folder);
    if (!s) return s.error();
    for (const InferenceServiceSpec& other : services) {
      if (other.name == s->name) return InvalidArgument("{}: service '{}' appears twice", path, s->name);
    }
    services.push_back(*std::move(s));
  }
  return services;
}

}  // namespace gpufit
