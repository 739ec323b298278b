#include "gpufit/apply/allow_list.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <regex>
#include <vector>

#include "gpufit/apply/internal/json_path.h"
#include "gpufit/plan/kube_manifests.h"

namespace gpufit::apply {

using Json = nlohmann::json;

namespace {

// One step of a path: an object key, or a list item ("[]" in patterns) with its `name` (or index).
struct Step {
  bool item = false;
  std::string key;  // the key, or the item's name ("" when it has none)
  std::size_t index = 0;
};

struct Leaf {
  std::vector<Step> steps;
  const Json* value;
};

void Leaves(const Json& j, std::vector<Step>& at, std::vector<Leaf>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) {
      at.push_back({.key = k});
      Leaves(v, at, out);
      at.pop_back();
    }
  } else if (j.is_array() && !j.empty()) {
    for (std::size_t i = 0; i < j.size(); ++i) {
      at.push_back({.item = true, .key = j[i].is_object() ? internal::Str(j[i], {"name"}) : "", .index = i});
      Leaves(j[i], at, out);
      at.pop_back();
    }
  } else {
    out.push_back({at, &j});
  }
}

std::string Shown(const std::vector<Step>& steps) {
  std::string s;
  for (const Step& st : steps)
    s += st.item ? fmt::format("[{}]", st.key.empty() ? std::to_string(st.index) : st.key) : (s.empty() ? "" : ".") + st.key;
  return s.empty() ? "(the object)" : s;
}

// A pattern segment: a key, "*" any key, "[]" a list item, "~REGEX" a key matching REGEX
// (compiled once, with the tables below).
struct Segment {
  // Implicit: the tables below are written as strings.
  Segment(const char* s) : Segment(std::string(s)) {}  // NOLINT(google-explicit-constructor)
  Segment(std::string s) : text(std::move(s)) {        // NOLINT(google-explicit-constructor)
    if (text.starts_with("~")) re.emplace(text.substr(1));
  }
  bool Matches(const Step& st) const {
    if (text == "[]") return st.item;
    if (st.item) return false;
    if (text == "*") return true;
    return re ? std::regex_match(st.key, *re) : text == st.key;
  }
  std::string text;
  std::optional<std::regex> re;
};
using Pattern = std::vector<Segment>;

// Whether `steps` matches the first `n` segments of `p` exactly, or (with `below`) starts with them.
bool Matches(const Pattern& p, std::size_t n, const std::vector<Step>& steps, bool below) {
  if (steps.size() < n || (!below && steps.size() != n)) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (!p[i].Matches(steps[i])) return false;
  return true;
}

struct Rule {
  Pattern path{};
  // Forward changes only: the values the emitters write ("" for any), and a check of them.
  std::string values{};
  std::function<bool(const Json&)> ok{};
  // Anything below the path is allowed too (an object gpufit writes whole: a ResourceClaim's
  // devices, a ClusterQueue's resource groups).
  bool below = false;
  // The undo may set anything below this many leading segments (a list the patch replaces
  // whole: the undo puts the live list back, whatever its items hold); 0: the path alone.
  std::size_t undo_below = 0;
};

std::function<bool(const Json&)> OneOf(std::vector<std::string> values) {
  return [values = std::move(values)](const Json& v) {
    return v.is_string() && std::find(values.begin(), values.end(), v.get<std::string>()) != values.end();
  };
}
std::function<bool(const Json&)> Prefixed(std::string prefix) {
  return [prefix = std::move(prefix)](const Json& v) { return v.is_string() && v.get<std::string>().starts_with(prefix); };
}

Pattern Join(const Pattern& a, const Pattern& b) {
  Pattern p = a;
  p.insert(p.end(), b.begin(), b.end());
  return p;
}

const std::vector<std::string> kSpotKeys = {"cloud.google.com/gke-spot", "kubernetes.azure.com/scalesetpriority"};

std::vector<Rule> WorkloadRules() {
  const Pattern t = {"spec", "template"};
  const Pattern pod = Join(t, {"spec"});
  const Pattern c = Join(pod, {"~containers|initContainers", "[]"});
  const Pattern terms = Join(pod, {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                                   "nodeSelectorTerms"});
  const std::vector<std::string> affinity_keys = {"nvidia.com/gpu.sharing-strategy", "nvidia.com/device-plugin.config",
                                                  kSpotKeys[0], kSpotKeys[1]};
  return {
      {.path = Join(t, {"metadata", "annotations",
                        "~gpu-memory|gpufit\\.io/checkpoint-interval-seconds|gpufit\\.io/switch-to-on-demand-after-seconds"})},
      {.path = Join(t, {"metadata", "labels", "kai.scheduler/queue"})},
      {.path = Join(pod, {"schedulerName"}),
       .values = "hami-scheduler or kai-scheduler",
       .ok = OneOf({"hami-scheduler", "kai-scheduler"})},
      {.path = Join(pod, {"nodeSelector",
                          "~nvidia\\.com/gpu\\.product|nvidia\\.com/device-plugin\\.config|karpenter\\.sh/capacity-type|"
                          "eks\\.amazonaws\\.com/capacityType|cloud\\.google\\.com/gke-spot|"
                          "kubernetes\\.azure\\.com/scalesetpriority"})},
      {.path = Join(pod, {"tolerations", "[]", "key"}),
       .values = "a spot taint's key",
       .ok = OneOf(kSpotKeys),
       .undo_below = pod.size() + 1},
      {.path = Join(pod, {"tolerations", "[]", "~operator|value|effect"}), .undo_below = pod.size() + 1},
      {.path = Join(terms, {"[]", "matchExpressions", "[]", "key"}),
       .values = "gpu sharing, device-plugin config or spot labels",
       .ok = OneOf(affinity_keys),
       .undo_below = terms.size()},
      {.path = Join(terms, {"[]", "matchExpressions", "[]", "operator"}),
       .values = "NotIn or DoesNotExist",
       .ok = OneOf({"NotIn", "DoesNotExist"}),
       .undo_below = terms.size()},
      {.path = Join(terms, {"[]", "matchExpressions", "[]", "values", "[]"}), .undo_below = terms.size()},
      {.path = Join(pod, {"resourceClaims", "[]", "name"}), .values = "gpufit-gpu", .ok = OneOf({"gpufit-gpu"})},
      {.path = Join(pod, {"resourceClaims", "[]", "resourceClaimName"}),
       .values = "gpufit-gpu-<n>",
       .ok = Prefixed("gpufit-gpu-")},
      {.path = Join(c, {"name"})},
      {.path = Join(c, {"resources", "~limits|requests",
                        "~nvidia\\.com/(gpu|gpu\\.shared|gpumem|gpucores|gpumem-percentage|mig-.+)"})},
      {.path = Join(c, {"resources", "claims", "[]", "name"}),
       .values = "gpufit-gpu",
       .ok = OneOf({"gpufit-gpu"}),
       .undo_below = c.size() + 2},
      {.path = Join(c, {"env", "[]", "name"}),
       .values = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT or GPUFIT_CHECKPOINT_INTERVAL_SECONDS",
       .ok = OneOf({"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "GPUFIT_CHECKPOINT_INTERVAL_SECONDS"})},
      {.path = Join(c, {"env", "[]", "value"})},
      {.path = Join(c, {"~args|command", "[]"}), .undo_below = c.size() + 1},
  };
}

// What each file prefix may hold: kinds, where the object may be, and the rules of its fields.
struct Prefix {
  const char* prefix = "";
  std::vector<std::string> kinds{};
  // "" when the object is right; else why not (names the namespace or name that is not).
  std::function<std::string(const ObjectRef&, const std::set<std::string>& planned)> place{};
  std::vector<Rule> rules{};
};

std::string Must(bool ok, const std::string& why) { return ok ? "" : why; }

const std::vector<Prefix>& Prefixes() {
  static const std::vector<Prefix> kPrefixes = {
      {"workload-",
       {"Deployment", "StatefulSet", "DaemonSet", "Job"},
       [](const ObjectRef&, const std::set<std::string>&) { return std::string(); },  // plan_checks: CheckFolderOfPlan
       WorkloadRules()},
      {"node-",
       {"Node"},
       [](const ObjectRef& r, const std::set<std::string>&) { return Must(r.ns.empty(), "a Node has no namespace"); },
       {{.path = {"metadata", "labels", "~nvidia\\.com/device-plugin\\.config|nvidia\\.com/mig\\.config"},
         .values = "gpufit-*",
         .ok = Prefixed("gpufit-")}}},
      {"configmap-",
       {"ConfigMap"},
       [](const ObjectRef& r, const std::set<std::string>&) {
         return Must(r.ns == kGpuOperatorNamespace &&
                         (r.name == "gpufit-device-plugin-config" || r.name == "gpufit-mig-parted-config"),
                     fmt::format("gpufit writes only ConfigMaps {0}/gpufit-device-plugin-config and "
                                 "{0}/gpufit-mig-parted-config",
                                 kGpuOperatorNamespace));
       },
       {{.path = {"data", "*"}}}},
      {"clusterpolicy-",
       {"ClusterPolicy"},
       [](const ObjectRef& r, const std::set<std::string>&) {
         return Must(r.name == "cluster-policy" && r.ns.empty(), "gpufit patches only ClusterPolicy cluster-policy");
       },
       {{.path = {"spec", "devicePlugin", "config", "name"}},
        {.path = {"spec", "migManager", "config", "~name|default"}},
        {.path = {"spec", "mig", "strategy"}}}},
      {"resourceclaim-",
       {"ResourceClaim"},
       [](const ObjectRef& r, const std::set<std::string>& planned) {
         if (!r.name.starts_with("gpufit-gpu-")) return std::string("gpufit names its ResourceClaims gpufit-gpu-<n>");
         return Must(planned.empty() || planned.contains(r.ns),
                     fmt::format("namespace {} holds no workload of the plan", r.ns));
       },
       {{.path = {"spec", "devices"}, .below = true}}},
      {"priorityclass-",
       {"PriorityClass"},
       [](const ObjectRef& r, const std::set<std::string>&) {
         return Must(r.name == "gpufit-inference" || r.name == "gpufit-night-lending",
                     "gpufit writes only PriorityClasses gpufit-inference and gpufit-night-lending");
       },
       {{.path = {"value"},
         .values = "at most 100000",
         .ok = [](const Json& v) { return v.is_number() && v.get<double>() <= 100000; }},
        {.path = {"globalDefault"}, .values = "false", .ok = [](const Json& v) { return v == false; }},
        {.path = {"preemptionPolicy"}},
        {.path = {"description"}}}},
      {"kueue-",
       {"ResourceFlavor", "ClusterQueue", "LocalQueue"},
       [](const ObjectRef& r, const std::set<std::string>&) {
         return Must(r.name == "gpufit-night" && (r.kind == "LocalQueue" ? r.ns == "default" : r.ns.empty()),
                     "gpufit writes only the Kueue objects gpufit-night (its LocalQueue in default)");
       },
       {{.path = {"metadata", "annotations", "gpufit.io/window-utc"}},
        {.path = {"spec", "~namespaceSelector|stopPolicy|resourceGroups"}, .below = true},
        {.path = {"spec", "clusterQueue"}, .values = "gpufit-night", .ok = OneOf({"gpufit-night"})}}},
  };
  return kPrefixes;
}

const Prefix* PrefixOf(const std::string& file) {
  for (const Prefix& p : Prefixes())
    if (file.starts_with(p.prefix)) return &p;
  return nullptr;
}

// The object's identity: what every file may set besides its rules' fields.
bool IsIdentity(const std::vector<Step>& s) {
  if (s.size() == 1) return s[0].key == "apiVersion" || s[0].key == "kind";
  return s.size() == 2 && !s[0].item && s[0].key == "metadata" && (s[1].key == "name" || s[1].key == "namespace");
}

Result<void> CheckPlace(const Prefix& p, const ObjectRef& ref, const std::set<std::string>& planned,
                        const std::string& where) {
  if (std::find(p.kinds.begin(), p.kinds.end(), ref.kind) == p.kinds.end())
    return InvalidArgument("{}: a {} in a {}*.yaml file; gpufit writes {} there", where, ref.kind, p.prefix,
                           fmt::format("{}", fmt::join(p.kinds, ", ")));
  if (const std::string why = p.place(ref, planned); !why.empty())
    return InvalidArgument("{}: {}: {}", where, ref.Display(), why);
  return {};
}

// Whether `body` has the key path of `steps` (items matched by name, else by index).
bool BodyHas(const Json& body, const std::vector<Step>& steps) {
  const Json* at = &body;
  for (const Step& st : steps) {
    if (st.item) {
      if (!at->is_array()) return false;
      const Json* found = nullptr;
      for (std::size_t i = 0; i < at->size() && found == nullptr; ++i)
        if (st.key.empty() ? i == st.index : internal::Str((*at)[i], {"name"}) == st.key) found = &(*at)[i];
      if (found == nullptr) return false;
      at = found;
    } else {
      if (!at->is_object() || !at->contains(st.key)) return false;
      at = &(*at)[st.key];
    }
  }
  return true;
}

// The fields of `object` against `p`'s rules: forward (values checked) or an undo (values free,
// lists replaced whole free below them, deletions only of what `forward` sets).
Result<void> CheckFields(const Prefix& p, const Json& object, const Json* forward, const std::string& where) {
  std::vector<Leaf> leaves;
  std::vector<Step> at;
  Leaves(object, at, leaves);
  for (const Leaf& leaf : leaves) {
    if (IsIdentity(leaf.steps)) continue;
    const std::string shown = Shown(leaf.steps);
    if (!leaf.steps.empty() && leaf.steps.back().key.starts_with("$")) {
      // An undo deletes a list item its change added: {"name": X, "$patch": "delete"}.
      const bool deletes_added = forward != nullptr && leaf.steps.back().key == "$patch" && *leaf.value == "delete" &&
                                 leaf.steps.size() >= 2 && leaf.steps[leaf.steps.size() - 2].item &&
                                 BodyHas(*forward, {leaf.steps.begin(), leaf.steps.end() - 1});
      if (!deletes_added)
        return InvalidArgument("{}: {}: a patch directive gpufit's changes never carry", where, shown);
      continue;
    }
    const Rule* rule = nullptr;
    for (const Rule& r : p.rules)
      if (Matches(r.path, r.path.size(), leaf.steps, r.below) ||
          (forward != nullptr && r.undo_below > 0 && Matches(r.path, r.undo_below, leaf.steps, true))) {
        rule = &r;
        break;
      }
    // An undo deletes (null) what its change set where the object had nothing.
    if (rule == nullptr && forward != nullptr && leaf.value->is_null() && BodyHas(*forward, leaf.steps)) continue;
    if (rule == nullptr)
      return InvalidArgument("{}: {}: not a field gpufit changes in a {}*.yaml file (refused: nothing is applied)", where,
                             shown, p.prefix);
    if (forward == nullptr && rule->ok && !leaf.value->is_null() && !rule->ok(*leaf.value))
      return InvalidArgument("{}: {}: {} is not a value gpufit writes there ({})", where, shown, leaf.value->dump(),
                             rule->values);
  }
  return {};
}

// The list a container's --gpu-memory-utilization lives in, without that flag and its value.
std::vector<Json> WithoutUtilization(const Json& list) {
  std::vector<Json> out;
  if (!list.is_array()) return out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string s = list[i].is_string() ? list[i].get<std::string>() : "";
    if (s == "--gpu-memory-utilization") {
      ++i;  // its value
      continue;
    }
    if (s.starts_with("--gpu-memory-utilization=")) continue;
    out.push_back(list[i]);
  }
  return out;
}

}  // namespace

Result<void> CheckAllowed(const Change& c, const std::set<std::string>& planned, const std::string& where) {
  const Prefix* p = PrefixOf(c.file);
  if (p == nullptr)
    return InvalidArgument(
        "{}: not a file name gpufit plan --emit-manifests writes (workload-, node-, configmap-, clusterpolicy-, "
        "resourceclaim-, priorityclass-, kueue-)",
        where);
  if (Result<void> ok = CheckPlace(*p, c.ref, planned, where); !ok) return ok;
  return CheckFields(*p, c.body, nullptr, where);
}

Result<void> CheckAgainstLive(const Change& c, const Json& live, const std::string& where) {
  if (!c.workload) return {};
  for (const char* list : {"containers", "initContainers"}) {
    const Json* patched = &c.body;
    for (const char* k : {"spec", "template", "spec"}) patched = patched->contains(k) ? &(*patched)[k] : nullptr;
    if (patched == nullptr || !patched->contains(list)) continue;
    for (const Json& container : (*patched)[list]) {
      const std::string name = internal::Str(container, {"name"});
      Json live_container;
      if (live.contains("spec") && live["spec"].contains("template") && live["spec"]["template"].contains("spec") &&
          live["spec"]["template"]["spec"].contains(list))
        for (const Json& l : live["spec"]["template"]["spec"][list])
          if (internal::Str(l, {"name"}) == name) live_container = l;
      for (const char* field : {"args", "command"}) {
        if (!container.contains(field)) continue;
        if (WithoutUtilization(container[field]) !=
            WithoutUtilization(live_container.contains(field) ? live_container[field] : Json::array()))
          return InvalidArgument(
              "{}: spec.template.spec.{}[{}].{}: differs from the live container's in more than "
              "--gpu-memory-utilization (refused: nothing is applied)",
              where, list, name, field);
      }
    }
  }
  return {};
}

Result<void> CheckUndo(const AppliedChange& a, const std::string& where) {
  const Prefix* p = PrefixOf(a.file);
  if (p == nullptr) return InvalidArgument("{}: {} is not a file gpufit apply changes (edited history?)", where, a.file);
  if (Result<void> ok = CheckPlace(*p, a.ref, {}, where); !ok) return ok;
  const bool patched = a.method == "patch", applied = a.method == "apply";
  if (!(patched && a.undo_kind == "patch") && !(applied && (a.undo_kind == "delete" || a.undo_kind == "replace")))
    return InvalidArgument("{}: undoes {} by '{}' after a '{}': not a change gpufit apply makes (edited history?)", where,
                           a.ref.Display(), a.undo_kind, a.method);
  if (!a.body.is_null()) {
    if (Result<void> ok = CheckFields(*p, a.body, nullptr, where); !ok) return ok;
  }
  if (a.undo_kind == "patch") return CheckFields(*p, a.undo, &a.body, where + " (its undo)");
  if (a.undo_kind == "replace") {
    const ObjectRef back{.api_version = internal::Str(a.undo, {"apiVersion"}),
                         .kind = internal::Str(a.undo, {"kind"}),
                         .ns = internal::Str(a.undo, {"metadata", "namespace"}),
                         .name = internal::Str(a.undo, {"metadata", "name"})};
    if (back.kind != a.ref.kind || back.ns != a.ref.ns || back.name != a.ref.name)
      return InvalidArgument("{}: its undo puts back {}, not {} (edited history?)", where, back.Display(),
                             a.ref.Display());
  }
  return {};
}

}  // namespace gpufit::apply
