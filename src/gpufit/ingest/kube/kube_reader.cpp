#include "gpufit/ingest/kube/kube_reader.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>
#include <tuple>
#include <utility>

#include "gpufit/core/input_file.h"
#include "gpufit/core/json_input.h"
#include "gpufit/core/rfc3339.h"
#include "gpufit/ingest/kube/k8s_quantity.h"

namespace gpufit {
namespace {

using Json = nlohmann::json;

// Where in the file an error is: "pods.json: items[3] (ml/llm-ft-0)".
struct Where {
  std::string prefix;
  Error Bad(std::string_view path, std::string_view what) const {
    return InvalidArgument("{}: {}: {}", prefix, path, what);
  }
};

// A map key as a JSON path step: `.cpu`, or `["nvidia.com/gpu"]` when it is not a plain word.
std::string Step(std::string_view key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  return plain ? fmt::format(".{}", key) : fmt::format("[\"{}\"]", key);
}

// The field `key` of the object `parent`, or nullptr when absent or null.
const Json* Field(const Json& parent, const char* key) {
  const auto it = parent.find(key);
  return it == parent.end() || it->is_null() ? nullptr : &*it;
}

// An optional object or array field: nullptr when absent, an error when of another type.
Result<const Json*> Typed(const Where& w, const Json& parent, const char* key, const std::string& path,
                          Json::value_t type) {
  const Json* v = Field(parent, key);
  if (v == nullptr || v->type() == type) return v;
  return w.Bad(path, fmt::format("expected {}, got {}", type == Json::value_t::object ? "an object" : "an array",
                                 v->type_name()));
}
Result<const Json*> Object(const Where& w, const Json& parent, const char* key, const std::string& path) {
  return Typed(w, parent, key, path, Json::value_t::object);
}
Result<const Json*> Array(const Where& w, const Json& parent, const char* key, const std::string& path) {
  return Typed(w, parent, key, path, Json::value_t::array);
}

// An optional string field: "" when absent.
Result<std::string> String(const Where& w, const Json& parent, const char* key, const std::string& path) {
  const Json* v = Field(parent, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return w.Bad(path, fmt::format("expected a string, got {}", v->type_name()));
  return v->get<std::string>();
}

// An optional map of strings (labels, nodeSelector): empty when absent.
Result<std::map<std::string, std::string>> StringMap(const Where& w, const Json& parent, const char* key,
                                                     const std::string& path) {
  const Result<const Json*> obj = Object(w, parent, key, path);
  if (!obj) return obj.error();
  std::map<std::string, std::string> out;
  if (*obj == nullptr) return out;
  for (const auto& [k, v] : (*obj)->items()) {
    if (!v.is_string()) return w.Bad(path + Step(k), fmt::format("expected a string, got {}", v.type_name()));
    out.emplace(k, v.get<std::string>());
  }
  return out;
}

// An optional RFC 3339 time field in Unix seconds.
Result<std::optional<double>> Time(const Where& w, const Json& parent, const char* key, const std::string& path) {
  const Result<std::string> text = String(w, parent, key, path);
  if (!text) return text.error();
  if (text->empty()) return std::optional<double>();
  const Result<double> t = ParseRfc3339(*text);
  if (!t) return w.Bad(path, t.error().message);
  return std::optional<double>(*t);
}

// A resource list (requests, limits, capacity, allocatable, overhead). Quantities are
// strings in kubectl's output; a bare JSON number is accepted as its text.
struct ResourceList {
  std::optional<MilliCpu> cpu;
  std::optional<MiB> memory;
  std::map<std::string, int> devices;  // names with a '/': extended resources
};

// `rounding`: kUp for what a pod asks, kDown for what a node has (k8s_quantity.h).
Result<ResourceList> Resources(const Where& w, const Json& parent, const char* key, const std::string& path,
                               MemoryRounding rounding = MemoryRounding::kUp) {
  const Result<const Json*> obj = Object(w, parent, key, path);
  if (!obj) return obj.error();
  ResourceList out;
  if (*obj == nullptr) return out;
  for (const auto& [name, v] : (*obj)->items()) {
    const std::string at = path + Step(name);
    const bool device = name.find('/') != std::string::npos;
    if (name != "cpu" && name != "memory" && !device) continue;  // pods, ephemeral-storage, hugepages-*
    std::string text;
    if (v.is_string()) {
      text = v.get<std::string>();
    } else if (v.is_number()) {
      text = v.dump();
    } else {
      return w.Bad(at, fmt::format("expected a quantity string, got {}", v.type_name()));
    }
    if (name == "cpu") {
      const Result<MilliCpu> q = CpuQuantity(text);
      if (!q) return w.Bad(at, q.error().message);
      out.cpu = *q;
    } else if (name == "memory") {
      const Result<MiB> q = MemoryQuantity(text, rounding);
      if (!q) return w.Bad(at, q.error().message);
      out.memory = *q;
    } else {
      const Result<int> q = DeviceQuantity(text);
      if (!q) return w.Bad(at, q.error().message);
      out.devices[name] = *q;
    }
  }
  return out;
}

// The request defaults to the limit; a request above the limit is invalid in Kubernetes.
template <class Q>
Result<std::optional<Q>> Request(const Where& w, const std::optional<Q>& request, const std::optional<Q>& limit,
                                 const std::string& path, std::string_view unit) {
  if (!request) return limit;
  if (limit && *request > *limit) {
    return w.Bad(path, fmt::format("request {}{} is above the limit {}{}", request->value, unit, limit->value, unit));
  }
  return request;
}

Result<KubeContainer> ParseContainer(const Where& w, const Json& c, const std::string& path, bool init) {
  if (!c.is_object()) return w.Bad(path, fmt::format("expected an object, got {}", c.type_name()));
  KubeContainer out;
  const Result<std::string> name = String(w, c, "name", path + ".name");
  const Result<std::string> image = String(w, c, "image", path + ".image");
  const Result<std::string> restart = String(w, c, "restartPolicy", path + ".restartPolicy");
  if (!name) return name.error();
  if (!image) return image.error();
  if (!restart) return restart.error();
  out.name = *name;
  out.image = *image;
  for (const auto& [key, list] : {std::pair{"command", &out.command}, std::pair{"args", &out.args}}) {
    const Result<const Json*> a = Array(w, c, key, path + "." + key);
    if (!a) return a.error();
    for (std::size_t i = 0; *a != nullptr && i < (*a)->size(); ++i) {
      if (!(**a)[i].is_string())
        return w.Bad(fmt::format("{}.{}[{}]", path, key, i),
                     fmt::format("expected a string, got {}", (**a)[i].type_name()));
      list->push_back((**a)[i].get<std::string>());
    }
  }
  out.kind = !init ? KubeContainer::Kind::kApp
                   : (*restart == "Always" ? KubeContainer::Kind::kSidecar : KubeContainer::Kind::kInit);

  const std::string res_path = path + ".resources";
  const Result<const Json*> res = Object(w, c, "resources", res_path);
  if (!res) return res.error();
  if (*res == nullptr) return out;
  const std::string req_path = res_path + ".requests", lim_path = res_path + ".limits";
  const Result<ResourceList> requests = Resources(w, **res, "requests", req_path);
  if (!requests) return requests.error();
  const Result<ResourceList> limits = Resources(w, **res, "limits", lim_path);
  if (!limits) return limits.error();

  ContainerResources& r = out.resources;
  r.cpu_limit = limits->cpu;
  r.memory_limit = limits->memory;
  const Result<std::optional<MilliCpu>> cpu = Request(w, requests->cpu, limits->cpu, req_path + ".cpu", "m");
  if (!cpu) return cpu.error();
  const Result<std::optional<MiB>> memory = Request(w, requests->memory, limits->memory, req_path + ".memory", " MiB");
  if (!memory) return memory.error();
  r.cpu_request = *cpu;
  r.memory_request = *memory;

  // Extended resources cannot be overcommitted: requests equal limits when both are given.
  r.devices = limits->devices;
  for (const auto& [dev, n] : requests->devices) {
    const auto it = limits->devices.find(dev);
    if (it == limits->devices.end()) {
      r.devices[dev] = n;
    } else if (it->second != n) {
      return w.Bad(req_path + Step(dev),
                   fmt::format("requests {} != limits {}: extended resources cannot be overcommitted", n, it->second));
    }
  }
  return out;
}

// The pod's top-level workload (see WorkloadRef).
Result<WorkloadRef> Owner(const Where& w, const Json& meta, const std::string& pod_name,
                          const std::map<std::string, std::string>& labels) {
  const std::string path = ".metadata.ownerReferences";
  const Result<const Json*> refs = Array(w, meta, "ownerReferences", path);
  if (!refs) return refs.error();
  if (*refs == nullptr || (*refs)->empty()) return WorkloadRef{.kind = "Pod", .name = pod_name};
  std::size_t pick = 0;
  for (std::size_t i = 0; i < (*refs)->size(); ++i) {
    const Json& ref = (**refs)[i];
    if (!ref.is_object()) {
      return w.Bad(fmt::format("{}[{}]", path, i), fmt::format("expected an object, got {}", ref.type_name()));
    }
    const Json* controller = Field(ref, "controller");
    if (controller != nullptr && controller->is_boolean() && controller->get<bool>()) {
      pick = i;
      break;
    }
  }
  const Json& ref = (**refs)[pick];
  const std::string at = fmt::format("{}[{}]", path, pick);
  Result<std::string> kind = String(w, ref, "kind", at + ".kind");
  Result<std::string> name = String(w, ref, "name", at + ".name");
  if (!kind) return kind.error();
  if (!name) return name.error();
  WorkloadRef out{.kind = std::move(*kind), .name = std::move(*name)};
  if (out.kind == "ReplicaSet") {
    // Deployment controller names its ReplicaSets `<deployment>-<pod-template-hash>`.
    const auto hash = labels.find("pod-template-hash");
    if (hash != labels.end() && !hash->second.empty() && out.name.size() > hash->second.size() + 1 &&
        out.name.ends_with("-" + hash->second)) {
      out = WorkloadRef{.kind = "Deployment", .name = out.name.substr(0, out.name.size() - hash->second.size() - 1)};
    }
  }
  return out;
}

// The latest `.state.terminated.finishedAt` of `.status.containerStatuses[]`; nullopt when
// no container has terminated.
Result<std::optional<double>> FinishedAt(const Where& w, const Json& status) {
  const Result<const Json*> list = Array(w, status, "containerStatuses", ".status.containerStatuses");
  if (!list) return list.error();
  std::optional<double> latest;
  if (*list == nullptr) return latest;
  for (std::size_t i = 0; i < (*list)->size(); ++i) {
    const std::string at = fmt::format(".status.containerStatuses[{}]", i);
    const Json& c = (**list)[i];
    if (!c.is_object()) return w.Bad(at, fmt::format("expected an object, got {}", c.type_name()));
    const Result<const Json*> state = Object(w, c, "state", at + ".state");
    if (!state) return state.error();
    if (*state == nullptr) continue;
    const Result<const Json*> terminated = Object(w, **state, "terminated", at + ".state.terminated");
    if (!terminated) return terminated.error();
    if (*terminated == nullptr) continue;
    const Result<std::optional<double>> t = Time(w, **terminated, "finishedAt", at + ".state.terminated.finishedAt");
    if (!t) return t.error();
    if (*t && (!latest || **t > *latest)) latest = *t;
  }
  return latest;
}

Result<KubePod> ParsePod(const Where& w, const Json& item, const Json& meta, KubePod pod) {
  const Result<std::string> uid = String(w, meta, "uid", ".metadata.uid");
  if (!uid) return uid.error();
  pod.uid = *uid;
  Result<std::map<std::string, std::string>> labels = StringMap(w, meta, "labels", ".metadata.labels");
  if (!labels) return labels.error();
  pod.labels = std::move(*labels);
  Result<std::map<std::string, std::string>> annotations = StringMap(w, meta, "annotations", ".metadata.annotations");
  if (!annotations) return annotations.error();
  pod.annotations = std::move(*annotations);
  Result<WorkloadRef> owner = Owner(w, meta, pod.name, pod.labels);
  if (!owner) return owner.error();
  pod.owner = std::move(*owner);
  const Result<std::optional<double>> created = Time(w, meta, "creationTimestamp", ".metadata.creationTimestamp");
  if (!created) return created.error();
  const Result<std::optional<double>> deleted = Time(w, meta, "deletionTimestamp", ".metadata.deletionTimestamp");
  if (!deleted) return deleted.error();
  pod.created_s = *created;
  pod.deleted_s = *deleted;

  const Result<const Json*> spec = Object(w, item, "spec", ".spec");
  if (!spec) return spec.error();
  if (*spec == nullptr) return w.Bad(".spec.containers", "missing");
  const Json& s = **spec;
  const Result<std::string> node = String(w, s, "nodeName", ".spec.nodeName");
  if (!node) return node.error();
  pod.node_name = *node;
  Result<std::map<std::string, std::string>> selector = StringMap(w, s, "nodeSelector", ".spec.nodeSelector");
  if (!selector) return selector.error();
  pod.node_selector = std::move(*selector);
  const Result<ResourceList> overhead = Resources(w, s, "overhead", ".spec.overhead");
  if (!overhead) return overhead.error();
  pod.overhead_cpu = overhead->cpu.value_or(MilliCpu{});
  pod.overhead_memory = overhead->memory.value_or(MiB{});

  for (const bool init : {true, false}) {
    const char* key = init ? "initContainers" : "containers";
    const std::string path = fmt::format(".spec.{}", key);
    const Result<const Json*> list = Array(w, s, key, path);
    if (!list) return list.error();
    if (*list == nullptr || (*list)->empty()) {
      if (init) continue;
      return w.Bad(path, "missing (a pod has at least one container)");
    }
    for (std::size_t i = 0; i < (*list)->size(); ++i) {
      Result<KubeContainer> c = ParseContainer(w, (**list)[i], fmt::format("{}[{}]", path, i), init);
      if (!c) return c.error();
      pod.containers.push_back(std::move(*c));
    }
  }

  const Result<const Json*> status = Object(w, item, "status", ".status");
  if (!status) return status.error();
  if (*status != nullptr) {
    const Result<std::string> phase = String(w, **status, "phase", ".status.phase");
    const Result<std::string> qos = String(w, **status, "qosClass", ".status.qosClass");
    if (!phase) return phase.error();
    if (!qos) return qos.error();
    pod.phase = *phase;
    pod.qos_class = *qos;
    const Result<std::optional<double>> started = Time(w, **status, "startTime", ".status.startTime");
    if (!started) return started.error();
    pod.started_s = *started;
    const Result<std::optional<double>> finished = FinishedAt(w, **status);
    if (!finished) return finished.error();
    if (pod.phase == "Succeeded" || pod.phase == "Failed") pod.finished_s = *finished;
  }
  return pod;
}

// A whole number >= 0 in a label value.
Result<std::int64_t> NumberLabel(const Where& w, const std::map<std::string, std::string>& labels,
                                 const std::string& key) {
  const std::string& text = labels.at(key);
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0 || text.empty()) {
    return w.Bad(".metadata.labels" + Step(key), fmt::format("expected a whole number >= 0, got '{}'", text));
  }
  return v;
}

}  // namespace

std::string CapacityTypeOfLabels(const std::map<std::string, std::string>& labels) {
  const auto get = [&](const char* key) -> std::optional<std::string> {
    const auto it = labels.find(key);
    return it == labels.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  if (const auto v = get("karpenter.sh/capacity-type")) {
    return *v == "spot" || *v == "on-demand" || *v == "reserved" ? *v : "";
  }
  if (const auto v = get("eks.amazonaws.com/capacityType")) {
    if (*v == "SPOT") return "spot";
    if (*v == "ON_DEMAND") return "on-demand";
    if (*v == "CAPACITY_BLOCK") return "reserved";
    return "";
  }
  if (get("cloud.google.com/gke-spot") == "true" || get("cloud.google.com/gke-preemptible") == "true") return "spot";
  if (const auto v = get("kubernetes.azure.com/scalesetpriority")) {
    if (*v == "spot") return "spot";
    if (*v == "regular") return "on-demand";
  }
  return "";
}

namespace {

Result<KubeNode> ParseNode(const Where& w, const Json& item, const Json& meta, KubeNode node) {
  Result<std::map<std::string, std::string>> labels = StringMap(w, meta, "labels", ".metadata.labels");
  if (!labels) return labels.error();
  node.labels = std::move(*labels);
  Result<std::map<std::string, std::string>> annotations = StringMap(w, meta, "annotations", ".metadata.annotations");
  if (!annotations) return annotations.error();
  node.annotations = std::move(*annotations);

  const Result<const Json*> spec = Object(w, item, "spec", ".spec");
  if (!spec) return spec.error();
  if (*spec != nullptr) {
    const Json* unschedulable = Field(**spec, "unschedulable");
    if (unschedulable != nullptr) {
      if (!unschedulable->is_boolean()) {
        return w.Bad(".spec.unschedulable", fmt::format("expected a boolean, got {}", unschedulable->type_name()));
      }
      node.unschedulable = unschedulable->get<bool>();
    }
    const Result<const Json*> taints = Array(w, **spec, "taints", ".spec.taints");
    if (!taints) return taints.error();
    for (std::size_t i = 0; *taints != nullptr && i < (*taints)->size(); ++i) {
      const Json& t = (**taints)[i];
      const std::string at = fmt::format(".spec.taints[{}]", i);
      if (!t.is_object()) return w.Bad(at, fmt::format("expected an object, got {}", t.type_name()));
      const Result<std::string> key = String(w, t, "key", at + ".key");
      const Result<std::string> value = String(w, t, "value", at + ".value");
      const Result<std::string> effect = String(w, t, "effect", at + ".effect");
      if (!key) return key.error();
      if (!value) return value.error();
      if (!effect) return effect.error();
      node.taints.push_back({.key = *key, .value = *value, .effect = *effect});
    }
  }

  const Result<const Json*> status = Object(w, item, "status", ".status");
  if (!status) return status.error();
  if (*status != nullptr) {
    const Result<ResourceList> capacity = Resources(w, **status, "capacity", ".status.capacity", MemoryRounding::kDown);
    if (!capacity) return capacity.error();
    const Result<ResourceList> allocatable =
        Resources(w, **status, "allocatable", ".status.allocatable", MemoryRounding::kDown);
    if (!allocatable) return allocatable.error();
    node.cpu_capacity = capacity->cpu.value_or(MilliCpu{});
    node.memory_capacity = capacity->memory.value_or(MiB{});
    node.devices_capacity = capacity->devices;
    node.cpu_allocatable = allocatable->cpu.value_or(MilliCpu{});
    node.memory_allocatable = allocatable->memory.value_or(MiB{});
    node.devices_allocatable = allocatable->devices;
  }

  const auto text = [&](const char* key) {
    const auto it = node.labels.find(key);
    return it == node.labels.end() ? std::string() : it->second;
  };
  node.gpu_product = text("nvidia.com/gpu.product");
  node.mig_strategy = text("nvidia.com/mig.strategy");
  node.mig_config = text("nvidia.com/mig.config");
  node.sharing_strategy = text("nvidia.com/gpu.sharing-strategy");
  node.capacity_type = CapacityTypeOfLabels(node.labels);
  if (node.labels.contains("nvidia.com/gpu.memory")) {
    const Result<std::int64_t> mib = NumberLabel(w, node.labels, "nvidia.com/gpu.memory");
    if (!mib) return mib.error();
    node.gpu_memory = MiB{*mib};
  }
  const auto count_label = [&](const char* key, int& out) -> Result<void> {
    if (!node.labels.contains(key)) return {};
    const Result<std::int64_t> n = NumberLabel(w, node.labels, key);
    if (!n) return n.error();
    if (*n > 1'000'000) return w.Bad(".metadata.labels" + Step(key), fmt::format("{} is too large", *n));
    out = static_cast<int>(*n);
    return {};
  };
  const auto gpus = node.devices_capacity.find("nvidia.com/gpu");
  if (gpus != node.devices_capacity.end()) node.gpu_count = gpus->second;
  if (Result<void> ok = count_label("nvidia.com/gpu.count", node.gpu_count); !ok) return ok.error();
  if (Result<void> ok = count_label("nvidia.com/gpu.replicas", node.gpu_replicas); !ok) return ok.error();
  return node;
}

// Whether `text` reads as kubectl's YAML (-o yaml) rather than JSON: its first line that is
// not blank or a comment is "---" or starts with a key kubectl writes first.
bool LooksLikeKubectlYaml(std::string_view text) {
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t' || line.front() == '\r'))
      line.remove_prefix(1);
    if (!line.empty() && line.front() != '#')
      return line.starts_with("---") || line.starts_with("apiVersion:") || line.starts_with("kind:") ||
             line.starts_with("items:") || line.starts_with("metadata:");
    if (eol == std::string_view::npos) break;
    text.remove_prefix(eol + 1);
  }
  return false;
}

// `kubectl_get`: the command that writes the file as JSON ("kubectl get pods -A -o json").
Result<void> Load(const std::string& path, Json& out, std::string_view kubectl_get) {
  if (Result<void> ok = CheckInputFile(path); !ok) return ok.error();
  const Result<std::string> text = ReadJsonText(path);
  if (!text) return text.error();
  Result<Json> doc = ParseJson(*text, path);
  // YAML is named, not read: a YAML 1.1 reader (yaml-cpp) types unquoted scalars by guesswork
  // (on/yes as booleans, 0755 as octal) where kubectl's JSON says what each value is.
  if (!doc && LooksLikeKubectlYaml(*text))
    return InvalidArgument("{}: this is YAML (kubectl -o yaml); gpufit reads kubectl's JSON: write it with {}", path,
                           kubectl_get);
  if (!doc) return doc.error();
  out = std::move(*doc);
  return {};
}

// The objects of a list file (`kind` List or <kind>List, with `items`) or the one object
// of kind `kind`. `single` says which.
Result<std::vector<const Json*>> Items(const std::string& path, const Json& doc, const std::string& kind,
                                       bool& single) {
  const Where w{.prefix = path};
  if (!doc.is_object()) return w.Bad("top level", fmt::format("expected a JSON object, got {}", doc.type_name()));
  const Result<std::string> doc_kind = String(w, doc, "kind", ".kind");
  if (!doc_kind) return doc_kind.error();
  single = *doc_kind == kind;
  if (single) return std::vector<const Json*>{&doc};
  if (*doc_kind != "List" && *doc_kind != kind + "List" && !(doc_kind->empty() && doc.contains("items"))) {
    return w.Bad(".kind", fmt::format("expected {}, {}List or List, got '{}'", kind, kind, *doc_kind));
  }
  const Result<const Json*> items = Array(w, doc, "items", ".items");
  if (!items) return items.error();
  std::vector<const Json*> out;
  if (*items == nullptr) return out;
  for (const Json& item : **items) out.push_back(&item);
  return out;
}

// Every object of `kind` in `doc` (a list or one object; `path` names it in errors):
// `parse(where, item, metadata, name, namespace)`.
template <class T, class Parse>
Result<std::vector<T>> ParseObjects(const std::string& path, const Json& doc, const std::string& kind, Parse parse) {
  bool single = false;
  const Result<std::vector<const Json*>> items = Items(path, doc, kind, single);
  if (!items) return items.error();
  std::vector<T> out;
  out.reserve(items->size());
  std::map<std::string, std::size_t> seen;  // name (pods: namespace/name) -> item index
  for (std::size_t i = 0; i < items->size(); ++i) {
    const Json& item = *(*items)[i];
    Where w{.prefix = single ? path : fmt::format("{}: items[{}]", path, i)};
    if (!item.is_object()) return w.Bad("top level", fmt::format("expected an object, got {}", item.type_name()));
    const Result<const Json*> meta = Object(w, item, "metadata", ".metadata");
    if (!meta) return meta.error();
    if (*meta == nullptr) return w.Bad(".metadata.name", "missing");
    const Result<std::string> name = String(w, **meta, "name", ".metadata.name");
    if (!name) return name.error();
    if (name->empty()) return w.Bad(".metadata.name", "missing");
    Result<std::string> ns = String(w, **meta, "namespace", ".metadata.namespace");
    if (!ns) return ns.error();
    const std::string label = kind == "Pod" ? (ns->empty() ? "default" : *ns) + "/" + *name : *name;
    w.prefix = single ? fmt::format("{}: {}", path, label) : fmt::format("{} ({})", w.prefix, label);
    const Result<std::string> item_kind = String(w, item, "kind", ".kind");
    if (!item_kind) return item_kind.error();
    if (!item_kind->empty() && *item_kind != kind) {
      return w.Bad(".kind", fmt::format("expected {}, got '{}'", kind, *item_kind));
    }
    if (const auto [it, added] = seen.emplace(label, i); !added) {
      return w.Bad(".metadata.name",
                   fmt::format("{} '{}' appears again (first at items[{}])", kind, label, it->second));
    }
    Result<T> obj = parse(w, item, **meta, *name, ns->empty() ? "default" : *ns);
    if (!obj) return obj.error();
    out.push_back(std::move(*obj));
  }
  return out;
}

Result<KubePod> PodOf(const Where& w, const Json& item, const Json& meta, const std::string& name,
                      const std::string& ns) {
  return ParsePod(w, item, meta, KubePod{.namespace_name = ns, .name = name});
}

// The GPUs of one ResourceSlice (resource.k8s.io v1: attributes on the device; v1beta1: under
// `basic`) of the NVIDIA DRA driver, by its node and pool; nullopt for another driver's slice.
struct DraSlice {
  std::string node, pool;
  std::int64_t generation = 0;
  std::map<std::string, std::string> gpus;  // device name -> productName
};

Result<std::optional<DraSlice>> ParseResourceSlice(const std::string& path, std::size_t i, const Json& slice) {
  const std::string where = fmt::format("{}: ResourceSlice {}", path, i);
  const auto bad = [&](const std::string& field, const std::string& what) {
    return InvalidArgument("{}: {}: {}", where, field, what);
  };
  const Json* spec = slice.is_object() ? Field(slice, "spec") : nullptr;
  if (spec == nullptr || !spec->is_object()) return bad(".spec", "missing or not an object");
  const Json* driver = Field(*spec, "driver");
  if (driver == nullptr || !driver->is_string()) return bad(".spec.driver", "missing or not a string");
  if (driver->get<std::string>() != "gpu.nvidia.com") return std::optional<DraSlice>();
  DraSlice out;
  const Json* node_name = Field(*spec, "nodeName");
  if (node_name == nullptr || !node_name->is_string())
    return bad(".spec.nodeName", "missing (a gpu.nvidia.com slice is per node)");
  out.node = node_name->get<std::string>();
  out.pool = out.node;
  if (const Json* pool = Field(*spec, "pool"); pool != nullptr) {
    if (!pool->is_object()) return bad(".spec.pool", "not an object");
    if (const Json* name = Field(*pool, "name"); name != nullptr) {
      if (!name->is_string()) return bad(".spec.pool.name", "not a string");
      out.pool = name->get<std::string>();
    }
    if (const Json* g = Field(*pool, "generation"); g != nullptr) {
      if (!g->is_number_integer()) return bad(".spec.pool.generation", "not a whole number");
      out.generation = g->get<std::int64_t>();
    }
  }
  const Json* devices = Field(*spec, "devices");
  if (devices == nullptr) return std::optional<DraSlice>(std::move(out));
  if (!devices->is_array()) return bad(".spec.devices", "expected an array");
  for (std::size_t k = 0; k < devices->size(); ++k) {
    const Json& d = (*devices)[k];
    const std::string at = fmt::format(".spec.devices[{}]", k);
    if (!d.is_object()) return bad(at, "expected an object");
    const Json* name = Field(d, "name");
    if (name == nullptr || !name->is_string()) return bad(at + ".name", "missing or not a string");
    const Json* basic = Field(d, "basic");
    const Json& holder = basic != nullptr ? *basic : d;
    if (!holder.is_object()) return bad(at + ".basic", "not an object");
    const Json* attributes = Field(holder, "attributes");
    if (attributes == nullptr) continue;
    if (!attributes->is_object()) return bad(at + ".attributes", "not an object");
    // An attribute is an object with one typed value: {"string": "gpu"}.
    const auto text = [&](const char* key) -> Result<std::string> {
      const Json* a = Field(*attributes, key);
      if (a == nullptr) return std::string();
      const Json* v = a->is_object() ? Field(*a, "string") : nullptr;
      if (v == nullptr || !v->is_string())
        return InvalidArgument("{}: {}.attributes.{}: expected {{\"string\": ...}}", where, at, key);
      return v->get<std::string>();
    };
    const Result<std::string> type = text("type");
    if (!type) return type.error();
    if (*type != "gpu") continue;
    const Result<std::string> product = text("productName");
    if (!product) return product.error();
    out.gpus[name->get<std::string>()] = *product;
  }
  return std::optional<DraSlice>(std::move(out));
}

// The slices' GPUs counted onto their nodes: per pool only its newest generation (the driver
// republishes a pool under a higher generation; older slices are stale), each device once.
Result<void> AddResourceSlices(const std::string& path, const Json& slices, std::vector<KubeNode>& nodes) {
  std::map<std::string, DraSlice> newest;  // pool -> its newest generation's devices
  for (std::size_t i = 0; i < slices.size(); ++i) {
    Result<std::optional<DraSlice>> s = ParseResourceSlice(path, i, slices[i]);
    if (!s) return s.error();
    if (!*s) continue;
    if (std::none_of(nodes.begin(), nodes.end(), [&](const KubeNode& n) { return n.name == (*s)->node; }))
      return InvalidArgument("{}: ResourceSlice {}: .spec.nodeName: node '{}' is not in the file", path, i, (*s)->node);
    auto [it, added] = newest.emplace((*s)->pool, **s);
    if (added) continue;
    if ((*s)->generation > it->second.generation) {
      it->second = std::move(**s);
    } else if ((*s)->generation == it->second.generation) {
      it->second.gpus.insert((*s)->gpus.begin(), (*s)->gpus.end());
    }
  }
  for (const auto& entry : newest) {
    const DraSlice& slice = entry.second;
    KubeNode& node = *std::find_if(nodes.begin(), nodes.end(), [&](const KubeNode& n) { return n.name == slice.node; });
    node.dra_gpus += static_cast<int>(slice.gpus.size());
    if (node.dra_product.empty() && !slice.gpus.empty()) node.dra_product = slice.gpus.begin()->second;
  }
  return {};
}

Result<KubeNode> NodeOf(const Where& w, const Json& item, const Json& meta, const std::string& name,
                        const std::string&) {
  return ParseNode(w, item, meta, KubeNode{.name = name});
}

}  // namespace

Result<KubePod> ParseKubePod(const nlohmann::json& pod, const std::string& where) {
  // Go clients encode a Pod without its TypeMeta (kube-scheduler's ExtenderArgs.Pod has no
  // `kind`): a kindless object that is not a list is the Pod itself.
  const auto kind = pod.is_object() ? pod.find("kind") : pod.end();
  if (pod.is_object() && !pod.contains("items") &&
      (kind == pod.end() || kind->is_null() || (kind->is_string() && kind->get<std::string>().empty()))) {
    Json typed = pod;
    typed["kind"] = "Pod";
    return ParseKubePod(typed, where);
  }
  Result<std::vector<KubePod>> pods = ParseObjects<KubePod>(where, pod, "Pod", PodOf);
  if (!pods) return pods.error();
  if (pods->size() != 1) return InvalidArgument("{}: expected one Pod, got a list of {}", where, pods->size());
  return std::move(pods->front());
}

Result<std::vector<KubeNode>> ParseKubeNodes(const nlohmann::json& nodes, const std::string& where) {
  return ParseObjects<KubeNode>(where, nodes, "Node", NodeOf);
}

Result<std::vector<KubeNode>> ParseKubeNodeList(nlohmann::json doc, const std::string& where) {
  // `kubectl get nodes,resourceslices -o json`: the ResourceSlices are taken out of the list
  // and counted onto their nodes.
  Json slices = Json::array();
  if (doc.is_object() && doc.contains("items") && doc["items"].is_array()) {
    Json kept = Json::array();
    for (Json& item : doc["items"]) {
      if (item.is_object() && item.contains("kind") && item["kind"].is_string() && item["kind"] == "ResourceSlice")
        slices.push_back(std::move(item));
      else
        kept.push_back(std::move(item));
    }
    doc["items"] = std::move(kept);
  }
  Result<std::vector<KubeNode>> nodes = ParseObjects<KubeNode>(where, doc, "Node", NodeOf);
  if (!nodes) return nodes;
  if (Result<void> ok = AddResourceSlices(where, slices, *nodes); !ok) return ok.error();
  std::sort(nodes->begin(), nodes->end(), [](const KubeNode& a, const KubeNode& b) { return a.name < b.name; });
  return nodes;
}

Result<std::vector<KubePod>> ParseKubePodList(const nlohmann::json& doc, const std::string& where) {
  Result<std::vector<KubePod>> pods = ParseObjects<KubePod>(where, doc, "Pod", PodOf);
  if (!pods) return pods;
  std::sort(pods->begin(), pods->end(), [](const KubePod& a, const KubePod& b) {
    return std::tie(a.namespace_name, a.name) < std::tie(b.namespace_name, b.name);
  });
  return pods;
}

Result<std::vector<KubeNode>> ReadKubeNodes(const std::string& path) {
  Json doc;
  if (Result<void> ok = Load(path, doc, "kubectl get nodes -o json"); !ok) return ok.error();
  return ParseKubeNodeList(std::move(doc), path);
}

Result<std::vector<KubePod>> ReadKubePods(const std::string& path) {
  Json doc;
  if (Result<void> ok = Load(path, doc, "kubectl get pods -A -o json"); !ok) return ok.error();
  return ParseKubePodList(doc, path);
}

}  // namespace gpufit
