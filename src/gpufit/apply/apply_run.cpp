#include "gpufit/apply/apply_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "gpufit/apply/allow_list.h"
#include "gpufit/apply/history_seal.h"
#include "gpufit/apply/internal/json_path.h"
#include "gpufit/apply/object_diff.h"
#include "gpufit/apply/plan_checks.h"
#include "gpufit/apply/run_lock.h"
#include "gpufit/apply/soak.h"
#include "gpufit/core/rfc3339.h"

namespace gpufit::apply {

using Json = nlohmann::json;
using kube_api::KubeClient;

namespace {

using internal::Str;

std::string LabelSelector(const Json& object) {
  std::string sel;
  if (!object.contains("spec") || !object["spec"].contains("selector")) return sel;
  const Json& s = object["spec"]["selector"];
  if (!s.contains("matchLabels") || !s["matchLabels"].is_object()) return sel;
  for (const auto& [k, v] : s["matchLabels"].items())
    if (v.is_string()) sel += (sel.empty() ? "" : ",") + k + "=" + v.get<std::string>();
  return sel;
}

class Runner {
 public:
  Runner(const KubeClient& kube, const ApplyOptions& o, const ApplyEnv& env) : kube_(kube), o_(o), env_(env) {}

  // The history's key (history_seal.h), made on the first run when `create`.
  Result<void> LoadKey(bool create) {
    Result<std::string> key = HistoryKey(kube_, o_.history_namespace, create);
    if (!key) return key.error();
    key_ = std::move(*key);
    return {};
  }

  Result<Control> ReadControlNow() {
    const std::string path =
        fmt::format("/api/v1/namespaces/{}/configmaps/{}", o_.history_namespace, kControlConfigMap);
    Result<Json> cm = kube_.Get(path);
    Control c;
    if (!cm && cm.error().code != Code::kNotFound) return cm.error();
    if (cm) {
      Result<Control> read = ReadControl(*cm, fmt::format("ConfigMap {}/{}", o_.history_namespace, kControlConfigMap));
      if (!read) return read.error();
      c = std::move(*read);
    }
    c.windows.insert(c.windows.end(), o_.windows.begin(), o_.windows.end());
    return c;
  }

  // The write of one change (or its dry run).
  Result<Json> Send(const Change& c, bool dry_run) {
    const std::string dry = dry_run ? "&dryRun=All" : "";
    if (c.method == Change::Method::kApply)
      return kube_.Patch(fmt::format("{}?fieldManager={}&force=true{}", c.ref.Path(), o_.field_manager, dry),
                         KubeClient::PatchType::kApply, c.body);
    return kube_.Patch(fmt::format("{}?fieldManager={}{}", c.ref.Path(), o_.field_manager, dry),
                       c.patch_type == "merge" ? KubeClient::PatchType::kMerge : KubeClient::PatchType::kStrategicMerge,
                       c.body);
  }

  Result<void> Undo(const AppliedChange& a) {
    const std::string path = a.ref.Path();
    if (a.undo_kind == "delete") {
      // Only an object gpufit's field manager wrote: a record naming one that other managers wrote
      // is refused. (An object of metadata alone, as Kueue's ResourceFlavor, has no managed field
      // to list: the API server records none.)
      Result<Json> live = kube_.Get(path);
      if (!live && live.error().code == Code::kNotFound) return {};
      if (!live) return live.error();
      const Json managed = live->contains("metadata") ? live->at("metadata").value("managedFields", Json::array())
                                                      : Json::array();
      bool ours = managed.empty();
      for (const Json& m : managed) ours |= Str(m, {"manager"}) == o_.field_manager;
      if (!ours)
        return FailedPrecondition("{} has no fields of manager {}: gpufit apply did not create it; not deleted",
                                  a.ref.Display(), o_.field_manager);
      Result<Json> r = kube_.Delete(path);
      if (!r && r.error().code != Code::kNotFound) return r.error();
      return {};
    }
    if (a.undo_kind == "replace") {
      Result<Json> live = kube_.Get(path);
      Json object = a.undo;
      if (live) object["metadata"]["resourceVersion"] = Str(*live, {"metadata", "resourceVersion"});
      Result<Json> r =
          live ? kube_.Replace(fmt::format("{}?fieldManager={}", path, o_.field_manager), object)
               : kube_.Create(fmt::format("{}?fieldManager={}", a.ref.CollectionPath(), o_.field_manager), object);
      if (!r) return r.error();
      return {};
    }
    Result<Json> r = kube_.Patch(
        fmt::format("{}?fieldManager={}", path, o_.field_manager),
        a.patch_type == "merge" ? KubeClient::PatchType::kMerge : KubeClient::PatchType::kStrategicMerge, a.undo);
    if (!r) return r.error();
    return {};
  }

  // Whether the change `a` (intended, not marked applied) is in the live object: a created
  // object exists; a patch or an apply's dry run against the live object changes nothing.
  Result<bool> TookEffect(const AppliedChange& a) {
    Result<Json> live = kube_.Get(a.ref.Path());
    if (!live && live.error().code == Code::kNotFound) return false;
    if (!live) return live.error();
    if (a.undo_kind == "delete") return true;
    Change c;
    c.file = a.file;
    c.ref = a.ref;
    c.method = a.method == "apply" ? Change::Method::kApply : Change::Method::kPatch;
    c.patch_type = a.patch_type;
    c.body = a.body;
    Result<Json> dry = Send(c, true);
    if (!dry) return dry.error();
    return Diff(*live, *dry).empty();
  }

  void Event(const ObjectRef& ref, const std::string& reason, const std::string& type, const std::string& message) {
    const std::string ns = ref.ns.empty() ? "default" : ref.ns;
    const std::string stamp = FormatRfc3339(env_.now());
    const Json event = {
        {"apiVersion", "v1"},
        {"kind", "Event"},
        {"metadata", {{"generateName", ref.name + ".gpufit-"}, {"namespace", ns}}},
        {"involvedObject",
         {{"apiVersion", ref.api_version}, {"kind", ref.kind}, {"namespace", ref.ns}, {"name", ref.name}}},
        {"reason", reason},
        {"message", message.substr(0, 1024)},
        {"type", type},
        {"source", {{"component", "gpufit-apply"}}},
        {"reportingComponent", "gpufit-apply"},
        {"reportingInstance", "gpufit-apply"},
        {"firstTimestamp", stamp},
        {"lastTimestamp", stamp},
        {"count", 1}};
    Result<Json> r = kube_.Create(fmt::format("/api/v1/namespaces/{}/events", ns), event);
    if (!r) env_.log("note: the Event on " + ref.Display() + " was not recorded: " + r.error().message);
  }

  Result<void> SaveRecord(const RunRecord& record, bool first) {
    const Json cm = RunConfigMap(record, o_.history_namespace, key_);
    const std::string collection = fmt::format("/api/v1/namespaces/{}/configmaps", o_.history_namespace);
    Result<Json> r =
        first ? kube_.Create(collection, cm) : kube_.Replace(collection + "/" + RunConfigMapName(record.run), cm);
    if (!r)
      return Error{r.error().code, fmt::format("the run's history ConfigMap {}/{}: {}", o_.history_namespace,
                                               RunConfigMapName(record.run), r.error().message)};
    return {};
  }

  // Undoes the applied changes of `wave` (every wave when < 0), last first; the first error.
  Result<void> RevertWave(RunRecord& record, int wave, const std::string& why) {
    std::optional<Error> first;
    for (auto it = record.changes.rbegin(); it != record.changes.rend(); ++it) {
      if (it->applied_at_s <= 0 || it->reverted_at_s > 0 || (wave >= 0 && it->wave != wave)) continue;
      Result<void> r = Undo(*it);
      if (!r) {
        env_.log(fmt::format("revert of {} ({}) failed: {}", it->file, it->ref.Display(), r.error().message));
        if (!first) first = r.error();
        continue;
      }
      it->reverted_at_s = env_.now();
      env_.log(fmt::format("reverted {} ({})", it->file, it->ref.Display()));
      Event(it->ref, "GpufitReverted", "Warning", why);
    }
    if (first) return *first;
    return {};
  }

  const KubeClient& kube_;
  const ApplyOptions& o_;
  const ApplyEnv& env_;
  std::string key_;
};

}  // namespace

Result<ApplyResult> Apply(const KubeClient& kube, const Json& plan, const std::vector<Change>& changes,
                          const ApplyOptions& o, const ApplyEnv& env) {
  Runner run(kube, o, env);
  if (Result<void> ok = CheckWorkloads(kube, plan, o.plan_path); !ok) return ok.error();
  if (Result<void> ok = CheckFolderOfPlan(plan, changes, o.plan_path); !ok) return ok.error();
  if (Result<void> held = CheckHeld(plan, changes, o.plan_path); !held) return held.error();

  ApplyResult result;
  RunRecord record;
  record.plan = o.plan_path;
  std::map<std::string, Json> saved;                      // file -> live object (null: absent)
  std::map<std::string, std::vector<std::string>> diffs;  // file -> its dry run's diff
  std::map<std::string, bool> namespace_out;              // namespace -> opted out
  std::vector<const Change*> todo;
  for (const Change& c : changes) {
    if (c.method == Change::Method::kManual) {
      record.skipped.push_back(c.file +
                               ": a Job's pod template cannot change once created: apply it to the Job's "
                               "source (kustomize patches) for its next run");
      continue;
    }
    Result<Json> live = kube.Get(c.ref.Path());
    if (!live && !(live.error().code == Code::kNotFound && c.method == Change::Method::kApply)) {
      if (live.error().code == Code::kNotFound)
        return NotFound(
            "{}: {} patches {}, which is not in the cluster at {}: the plan is of another cluster, or "
            "the object is gone",
            o.plan_path, c.file, c.ref.Display(), kube.connection().server);
      return live.error();
    }
    const Json before = live ? *live : Json();
    if (Result<void> ok = CheckAgainstLive(c, before, c.file); !ok) return ok.error();
    bool out = Excluded(before);
    if (!out && !c.ref.ns.empty()) {
      if (!namespace_out.contains(c.ref.ns)) {
        Result<Json> ns = kube.Get("/api/v1/namespaces/" + c.ref.ns);
        namespace_out[c.ref.ns] = ns && Excluded(*ns);
      }
      out = namespace_out[c.ref.ns];
    }
    if (out) {
      record.skipped.push_back(
          fmt::format("{}: {} opted out ({}: \"true\")", c.file, c.ref.Display(), kExcludeAnnotation));
      continue;
    }
    Result<Json> dry = run.Send(c, true);
    if (!dry && dry.error().code == Code::kNotFound && c.method == Change::Method::kApply)
      return NotFound("{} ({}): the API server does not serve {} {} (is its CRD installed?): {}", c.file,
                      c.ref.Display(), c.ref.api_version, c.ref.kind, dry.error().message);
    if (!dry)
      return Error{dry.error().code, fmt::format("{} ({}): the API server refused its dry run: {}", c.file,
                                                 c.ref.Display(), dry.error().message)};
    std::vector<std::string> lines = Diff(live ? *live : Json::object(), *dry);
    result.diff.push_back(fmt::format(
        "{} ({}, {}{}):", c.ref.Display(), c.file,
        c.method == Change::Method::kApply ? "server-side apply" : c.patch_type + " patch", live ? "" : ", created"));
    if (lines.empty()) result.diff.push_back("  (no change: the cluster already has it)");
    for (const std::string& l : lines) result.diff.push_back("  " + l);
    saved[c.file] = before;
    diffs[c.file] = lines;
    if (!lines.empty()) todo.push_back(&c);
  }
  for (const std::string& key : o.canary)
    if (std::none_of(todo.begin(), todo.end(),
                     [&](const Change* c) { return c->workload && c->ref.WorkloadKey() == key; }))
      return InvalidArgument(
          "--canary {}: no change of the folder patches that workload (give kind/namespace/name, "
          "e.g. deployment/genai/sd-web)",
          key);
  if (!o.yes) {
    result.outcome = ApplyOutcome::kDryRun;
    result.summary =
        fmt::format("dry run: {} of {} changes would change the cluster; nothing was applied (--yes applies them)",
                    todo.size(), changes.size());
    result.skipped = record.skipped;
    // What would stop --yes now, said now.
    Result<Control> control = run.ReadControlNow();
    if (!control) return control.error();
    if (control->stop)
      result.summary += fmt::format("; note: the kill switch is on (ConfigMap {}/{}): --yes would do nothing",
                                    o.history_namespace, kControlConfigMap);
    else if (const MaintenanceWindow* w = WindowAt(control->windows, env.now()))
      result.summary += fmt::format("; note: now is in the maintenance window '{}': --yes would do nothing", w->text);
    return result;
  }
  if (todo.empty()) {
    result.outcome = ApplyOutcome::kNothing;
    result.summary = "nothing to apply: the cluster already has every change";
    return result;
  }

  // Guardrails of the cluster and of the day.
  Result<Control> control = run.ReadControlNow();
  if (!control) return control.error();
  const double start = env.now();
  if (control->stop) {
    result.summary = fmt::format("nothing applied: the kill switch is on (ConfigMap {}/{} data.stop: \"true\")",
                                 o.history_namespace, kControlConfigMap);
    return result;
  }
  if (const MaintenanceWindow* w = WindowAt(control->windows, start)) {
    result.summary =
        fmt::format("nothing applied: {} is in the maintenance window '{}' (UTC)", FormatRfc3339(start), w->text);
    return result;
  }
  Result<Json> history = kube.Get(fmt::format("/api/v1/namespaces/{}/configmaps?labelSelector={}", o.history_namespace,
                                              kube_api::PercentEncode("app.kubernetes.io/managed-by=gpufit")));
  if (!history && history.error().code != Code::kNotFound) return history.error();
  std::size_t runs_today = 0;
  if (history)
    for (const Json& cm : (*history)["items"]) {
      Result<double> started = ParseRfc3339(Str(cm, {"metadata", "annotations", "gpufit.io/started"}));
      if (started && start - *started < 86400 && Str(cm, {"metadata", "name"}).starts_with("gpufit-apply-"))
        ++runs_today;
    }
  if (runs_today >= o.max_runs_per_day) {
    result.summary = fmt::format("nothing applied: {} runs in the last 24 h already (at most {}: --max-runs-per-day)",
                                 runs_today, o.max_runs_per_day);
    return result;
  }

  // Waves: what the workloads need and the canary workloads, then the rest.
  std::vector<std::vector<const Change*>> waves(2);
  std::set<std::string> canary_strategies;
  for (const Change* c : todo) {
    if (c->workload) {
      Result<std::string> pdb = BlockingPdb(kube, c->ref, saved[c->file]);
      if (!pdb) return pdb.error();
      if (!pdb->empty()) {
        record.skipped.push_back(fmt::format("{}: {}: left for the next run", c->file, *pdb));
        continue;
      }
    }
    bool canary = !c->workload;
    if (c->workload)
      canary = o.canary.empty() ? canary_strategies.insert(c->strategy).second
                                : std::find(o.canary.begin(), o.canary.end(), c->ref.WorkloadKey()) != o.canary.end();
    waves[canary ? 0 : 1].push_back(c);
  }
  std::size_t kept = 0;
  for (auto& wave : waves) {
    std::vector<const Change*> within;
    for (const Change* c : wave) {
      if (kept < o.max_changes) {
        within.push_back(c);
        ++kept;
      } else {
        record.skipped.push_back(
            fmt::format("{}: beyond --max-changes {}: left for the next run", c->file, o.max_changes));
      }
    }
    wave = std::move(within);
  }
  if (waves[1].empty()) waves.pop_back();
  if (waves[0].empty()) waves.erase(waves.begin());

  record.run = NewRunId(start);
  record.started_s = start;
  record.state = "applying";
  result.run = record.run;
  for (std::size_t w = 0; w < waves.size(); ++w)
    for (const Change* c : waves[w]) {
      AppliedChange a;
      a.file = c->file;
      a.ref = c->ref;
      a.method = c->method == Change::Method::kApply ? "apply" : "patch";
      a.patch_type = c->patch_type;
      a.wave = static_cast<int>(w);
      const Json& before = saved[c->file];
      if (c->method == Change::Method::kApply) {
        a.undo_kind = before.is_null() ? "delete" : "replace";
        a.undo = before.is_null() ? Json() : WithoutServerFields(before);
      } else {
        a.undo_kind = "patch";
        a.undo = InversePatch(before, c->body, c->patch_type != "merge");
      }
      a.body = c->body;
      a.diff = diffs[c->file];
      record.changes.push_back(std::move(a));
    }
  RunLock lock(kube, o, env);
  Result<std::string> busy = lock.Acquire(record.run);
  if (!busy) return busy.error();
  if (!busy->empty()) {
    result.run.clear();
    result.summary = "nothing applied: " + *busy;
    return result;
  }
  if (Result<void> k = run.LoadKey(true); !k) return k.error();
  if (Result<void> r = run.SaveRecord(record, true); !r) return r.error();
  env.log(fmt::format("run {}: {} changes in {} wave(s); history in ConfigMap {}/{}", record.run, record.changes.size(),
                      waves.size(), o.history_namespace, RunConfigMapName(record.run)));

  auto finish = [&](const std::string& state, const std::string& verdict) -> Result<void> {
    record.state = state;
    record.verdict = verdict;
    result.summary = verdict;
    result.skipped = record.skipped;
    return run.SaveRecord(record, false);
  };
  // The run stops where it is: what was applied stays, the record says why.
  auto stopped = [&](const std::string& verdict) -> Result<ApplyResult> {
    result.outcome = ApplyOutcome::kStopped;
    if (Result<void> r = finish("stopped", verdict); !r) return r.error();
    return result;
  };

  // Why the run must stop now, "" to go on: a signal (SIGTERM, SIGINT), the kill switch, or the
  // lock taken by another run.
  auto stop_reason = [&]() -> Result<std::string> {
    if (env.interrupted)
      if (const std::string signal = env.interrupted(); !signal.empty()) return "on " + signal;
    Result<Control> now_control = run.ReadControlNow();
    if (!now_control) return now_control.error();
    if (now_control->stop) return std::string("by the kill switch");
    if (Result<void> renewed = lock.Renew(); !renewed) return "the lock was lost: " + renewed.error().message;
    return std::string();
  };
  std::size_t index = 0;
  bool soaked = false;  // a wave with workloads was watched
  for (std::size_t w = 0; w < waves.size(); ++w) {
    const double wave_start = env.now();
    if (w > 0) {
      Result<Control> now_control = run.ReadControlNow();
      if (!now_control) return now_control.error();
      if (const MaintenanceWindow* mw = WindowAt(now_control->windows, wave_start)) {
        return stopped(fmt::format(
            "stopped before wave {}: the maintenance window '{}' began; wave(s) before it stay applied", w, mw->text));
      }
    }
    // The pods of the wave's workloads, and their restarts before it.
    std::vector<std::string> pod_lists, namespaces;
    for (const Change* c : waves[w])
      if (c->workload) {
        if (std::find(namespaces.begin(), namespaces.end(), c->ref.ns) == namespaces.end())
          namespaces.push_back(c->ref.ns);
        const std::string sel = LabelSelector(saved[c->file]);
        if (!sel.empty())
          pod_lists.push_back(
              fmt::format("/api/v1/namespaces/{}/pods?labelSelector={}", c->ref.ns, kube_api::PercentEncode(sel)));
      }
    auto pods_now = [&]() -> Result<Json> {
      Json all = {{"items", Json::array()}};
      for (const std::string& path : pod_lists) {
        Result<Json> pods = kube.Get(path);
        if (!pods) return pods.error();
        for (Json& p : (*pods)["items"]) all["items"].push_back(std::move(p));
      }
      return all;
    };
    Result<Json> before_pods = pods_now();
    if (!before_pods) return before_pods.error();
    const RestartBaseline baseline = Baseline(*before_pods);

    for (const Change* c : waves[w]) {
      AppliedChange& a = record.changes[index++];
      Result<std::string> why = stop_reason();
      if (!why) return why.error();
      if (!why->empty()) {
        return stopped(
            fmt::format("stopped ({}) in wave {} before {}; what was applied stays (gpufit apply --revert "
                        "{} undoes it)",
                        *why, w, c->file, record.run));
      }
      a.intended_at_s = env.now();  // the journal's intent: a kill from here on leaves it to --revert
      if (Result<void> r = run.SaveRecord(record, false); !r) return r.error();
      Result<Json> sent = run.Send(*c, false);
      if (!sent) {
        const std::string refused =
            fmt::format("{} ({}): the API server refused it: {}", c->file, c->ref.Display(), sent.error().message);
        env.log(refused);
        Result<void> reverted = run.RevertWave(record, static_cast<int>(w), "gpufit apply: " + refused);
        const std::string verdict = fmt::format(
            "{}; wave {} {}", refused, w, reverted ? "reverted" : "NOT fully reverted: " + reverted.error().message);
        (void)finish("failed", verdict);
        return FailedPrecondition("{}", verdict);
      }
      a.applied_at_s = env.now();
      env.log(
          fmt::format("applied {} ({}{})", c->file, c->ref.Display(), c->workload ? ": a rollout of its pods" : ""));
      run.Event(c->ref, "GpufitApplied", "Normal",
                fmt::format("gpufit apply run {} wave {}: {}", record.run, w, c->what.empty() ? c->file : c->what));
      if (Result<void> r = run.SaveRecord(record, false); !r) return r.error();
    }
    if (pod_lists.empty()) continue;
    env.log(fmt::format("wave {}: soak of {:.0f} s (OOMKilled, restarts, Pending over {:.0f} s)", w, o.soak_s,
                        o.pending_s));
    for (double t = env.now(); t - wave_start < o.soak_s; t = env.now()) {
      env.sleep(std::min(o.poll_s, std::max(0.0, wave_start + o.soak_s - t)));
      Result<std::string> reason = stop_reason();
      if (!reason) return reason.error();
      if (!reason->empty()) {
        return stopped(
            fmt::format("stopped ({}) during wave {}'s soak; what was applied stays (gpufit apply --revert "
                        "{} undoes it)",
                        *reason, w, record.run));
      }
      Result<Json> pods = pods_now();
      if (!pods) return pods.error();
      std::vector<Breach> breaches = FindBreaches(*pods, baseline, wave_start, env.now(), o.pending_s);
      if (env.gpu_memory_mib) {
        Result<std::map<std::string, double>> used = env.gpu_memory_mib(namespaces);
        if (!used)
          env.log("note: GPU memory in use not read this time: " + used.error().message);
        else
          for (Breach& b : MemoryAtCap(*pods, *used, env.now())) breaches.push_back(std::move(b));
      }
      if (breaches.empty()) continue;
      const Breach& b = breaches.front();
      const std::string why = fmt::format("{} {}: {}", b.pod, b.reason, b.detail);
      env.log("breach: " + why + fmt::format(" ({} breach(es) in all)", breaches.size()));
      Result<void> reverted = run.RevertWave(record, static_cast<int>(w), "gpufit apply reverted: " + why);
      result.breach_s = b.at_s;
      result.reverted_s = env.now();
      result.outcome = ApplyOutcome::kReverted;
      const std::string verdict =
          fmt::format("wave {} {} after a breach: {}; reverted {:.1f} s after the breach", w,
                      reverted ? "reverted" : "NOT fully reverted (" + reverted.error().message + ")", why,
                      result.reverted_s - b.at_s);
      if (Result<void> r = finish("reverted", verdict); !r) return r.error();
      if (!reverted) return reverted.error();
      return result;
    }
    env.log(fmt::format("wave {} held its soak of {:.0f} s", w, o.soak_s));
    soaked = true;
  }
  result.outcome = ApplyOutcome::kApplied;
  if (Result<void> r = finish(
          "applied",
          fmt::format("applied {} changes in {} wave(s){}; {}", record.changes.size(), waves.size(),
                      record.skipped.empty() ? std::string() : fmt::format(" ({} skipped)", record.skipped.size()),
                      soaked ? fmt::format("each wave with workloads held a soak of {:.0f} s", o.soak_s)
                             : std::string("no wave changed a workload, so none was soaked")));
      !r)
    return r.error();
  return result;
}

Result<ApplyResult> RevertRun(const KubeClient& kube, const std::string& id, const ApplyOptions& o,
                              const ApplyEnv& env) {
  Runner run(kube, o, env);
  const std::string where = fmt::format("ConfigMap {}/{}", o.history_namespace, RunConfigMapName(id));
  Result<Json> cm =
      kube.Get(fmt::format("/api/v1/namespaces/{}/configmaps/{}", o.history_namespace, RunConfigMapName(id)));
  if (!cm && cm.error().code == Code::kNotFound)
    return NotFound(
        "run {}: no {} (gpufit apply prints the run id; kubectl get configmaps -n {} -l "
        "app.kubernetes.io/managed-by=gpufit lists them)",
        id, where, o.history_namespace);
  if (!cm) return cm.error();
  if (Result<void> k = run.LoadKey(false); !k)
    return Error{k.error().code, fmt::format("{}: cannot check its seal: {}", where, k.error().message)};
  Result<RunRecord> record = ReadRunConfigMap(*cm, where, run.key_);
  if (!record) return record.error();
  ApplyResult result;
  result.run = id;
  // The journal: a change intended but not marked applied (the run was killed while sending it)
  // is undone when the live object shows it took effect.
  for (AppliedChange& a : record->changes) {
    if (a.intended_at_s <= 0 || a.applied_at_s > 0 || a.reverted_at_s > 0) continue;
    Result<bool> took = run.TookEffect(a);
    if (!took) return took.error();
    env.log(fmt::format("{} ({}) was being applied when run {} stopped: {}", a.file, a.ref.Display(), id,
                        *took ? "it took effect, so it is undone" : "it did not take effect"));
    if (*took) a.applied_at_s = a.intended_at_s;
  }
  const auto standing = std::count_if(record->changes.begin(), record->changes.end(), [](const AppliedChange& a) {
    return a.applied_at_s > 0 && a.reverted_at_s <= 0;
  });
  if (standing == 0) {
    result.outcome = ApplyOutcome::kNothing;
    result.summary = fmt::format("{}: every change it applied is already undone: nothing to revert", record->state);
    return result;
  }
  Result<void> r = run.RevertWave(*record, -1, fmt::format("gpufit apply --revert {}", id));
  record->state = "reverted by --revert";
  record->verdict = fmt::format("reverted at {} by gpufit apply --revert{}", FormatRfc3339(env.now()),
                                r ? std::string() : ": NOT fully: " + r.error().message);
  if (Result<void> s = run.SaveRecord(*record, false); !s) return s.error();
  if (!r) return r.error();
  result.outcome = ApplyOutcome::kApplied;
  result.summary = fmt::format("{} changes reverted", standing);
  return result;
}

}  // namespace gpufit::apply
