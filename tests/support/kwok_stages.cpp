#include "kwok_stages.h"

#include <string_view>

namespace gpufit::testing {
namespace {

// The selector (jq, gojq) and the status template (Go template, sprig) test the same thing of a
// container: it runs, it was not OOMKilled before, and its limit @RESOURCE@ is an integer below
// @THRESHOLD@. The selector picks the pod; the template picks its containers.
constexpr std::string_view kOomStage = R"(apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: gpufit-oom-below-@THRESHOLD@
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '[.status.containerStatuses[]? as $s | .spec.containers[] | select(.name == $s.name and $s.state.running != null and $s.lastState.terminated.reason != "OOMKilled") | .resources.limits["@RESOURCE@"] // "" | capture("@QUANTITY@") | (.n | tonumber) * @JQ_SUFFIXES@[.s // ""] | select(. < @THRESHOLD@)] | length > 0'
      operator: 'In'
      values: ['true']
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $quantity := "@QUANTITY@" }}
      {{ $suffixes := dict @TPL_SUFFIXES@ }}
      containerStatuses:
      {{ range $s := .status.containerStatuses }}
      {{ $oom := false }}
      {{ range $.spec.containers }}
      {{ if eq .name $s.name }}
      {{ $limit := dig "resources" "limits" "@RESOURCE@" "" . }}
      {{ if and (regexMatch $quantity $limit) (dig "state" "running" "" $s) (ne (dig "lastState" "terminated" "reason" "" $s) "OOMKilled") }}
      {{ if lt (mulf (float64 (regexReplaceAll $quantity $limit "${n}")) (get $suffixes (regexReplaceAll $quantity $limit "${s}"))) @THRESHOLD@.0 }}
      {{ $oom = true }}
      {{ end }}
      {{ end }}
      {{ end }}
      {{ end }}
      {{ if $oom }}
      {{ $_ := set $s "lastState" (dict "terminated" (dict "reason" "OOMKilled" "exitCode" 137 "startedAt" (dig "state" "running" "startedAt" $now $s) "finishedAt" $now)) }}
      {{ $_ = set $s "restartCount" (add1 $s.restartCount) }}
      {{ $_ = set $s "state" (dict "running" (dict "startedAt" $now)) }}
      {{ $_ = set $s "ready" true }}
      {{ end }}
      - {{ toJson $s }}
      {{ end }}
)";

// A resource quantity's canonical spellings (k8s.io/apimachinery/pkg/api/resource): digits, an
// optional fraction, an optional SI or binary suffix. The API server rewrites an integer limit
// into them: "30000" is stored as "30k", "1048576" stays. Exponent spellings ("3e4") are not
// matched, so they never fire.
constexpr std::string_view kQuantity = R"(^(?P<n>[0-9]+(\\.[0-9]+)?)(?P<s>m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$)";
struct Suffix {
  std::string_view name, factor;
};
constexpr Suffix kSuffixes[] = {{"", "1.0"},
                                {"m", "0.001"},
                                {"k", "1e3"},
                                {"M", "1e6"},
                                {"G", "1e9"},
                                {"T", "1e12"},
                                {"P", "1e15"},
                                {"E", "1e18"},
                                {"Ki", "1024.0"},
                                {"Mi", "1048576.0"},
                                {"Gi", "1073741824.0"},
                                {"Ti", "1099511627776.0"},
                                {"Pi", "1125899906842624.0"},
                                {"Ei", "1152921504606846976.0"}};

std::string ReplaceAll(std::string text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

std::string KwokOomStage(const std::string& resource, long threshold_mib) {
  std::string jq_suffixes = "{", template_suffixes;
  for (const Suffix& s : kSuffixes) {
    if (jq_suffixes.size() > 1) jq_suffixes += ", ";
    jq_suffixes += "\"" + std::string(s.name) + "\": " + std::string(s.factor);
    if (!template_suffixes.empty()) template_suffixes += " ";
    template_suffixes += "\"" + std::string(s.name) + "\" " + std::string(s.factor);
  }
  jq_suffixes += "}";
  std::string yaml(kOomStage);
  yaml = ReplaceAll(yaml, "@QUANTITY@", kQuantity);
  yaml = ReplaceAll(yaml, "@JQ_SUFFIXES@", jq_suffixes);
  yaml = ReplaceAll(yaml, "@TPL_SUFFIXES@", template_suffixes);
  yaml = ReplaceAll(yaml, "@RESOURCE@", resource);
  return ReplaceAll(yaml, "@THRESHOLD@", std::to_string(threshold_mib));
}

}  // namespace gpufit::testing
