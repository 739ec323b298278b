// Label matchers that narrow the series gpufit reads from Prometheus (--namespace, --selector),
// and the one function every reader uses to add them to a metric selector.
//
// Syntax (PromQL, https://prometheus.io/docs/prometheus/latest/querying/basics/#time-series-selectors):
// a matcher is `label op "value"` with op one of = (equal), != (not equal), =~ (regex match),
// !~ (regex non-match); label names match [a-zA-Z_][a-zA-Z0-9_]*; values are quoted with "
// or ' and take Go's escapes (\\ \" \' \n \t ...). Regexes are RE2, fully anchored by the server,
// which also judges their syntax (a bad one is its HTTP 400, reported by QueryRange). An empty
// value matches series without the label: namespace="" selects series with no namespace.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit {

struct LabelMatcher {
  std::string label;  // label name
  std::string op;     // "=", "!=", "=~" or "!~"
  std::string value;  // unquoted, unescaped

  // `label op "value"` with the value quoted and escaped for PromQL.
  std::string ToPromQL() const;
  bool operator==(const LabelMatcher&) const = default;
};

// Parses a comma-separated list of matchers (`label="v",other!="w",x=~"re"`; spaces around
// the parts allowed). `flag` names the source in errors: kInvalidArgument "--selector: bad
// matcher 'pod=x' (expected label=\"value\", label!=\"value\", label=~\"regex\" or
// label!~\"regex\")", quoting the matcher as written; an empty text, a trailing ',' (the message
// quotes the matcher before it) and the label __name__ (it would change the metric every reader
// asks for) are errors.
Result<std::vector<LabelMatcher>> ParseLabelMatchers(std::string_view text, std::string_view flag = "--selector");

// Namespaces from a comma-separated list ("ml,serving"): each a Kubernetes namespace name
// (RFC 1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 characters). Errors
// (kInvalidArgument) name `flag` and the bad name.
Result<std::vector<std::string>> ParseNamespaces(std::string_view text, std::string_view flag = "--namespace");

// `text` with the regex metacharacters of RE2 escaped (\.+*?()|[]{}^$), so that it matches
// itself only: for alternations of literal names, pod=~"a|b\\.c".
std::string RegexEscape(std::string_view text);

// The matcher for a set of namespaces: namespace="a" for one, namespace=~"a|b" for several
// (names regex-escaped); none when `namespaces` is empty.
std::vector<LabelMatcher> NamespaceMatchers(const std::vector<std::string>& namespaces);

// Adds `matchers` to a metric selector: "m" -> "m{a=\"1\"}", "m{x=\"y\"}" -> "m{x=\"y\",a=\"1\"}",
// "{__name__=\"m\"}" -> "{__name__=\"m\",a=\"1\"}". The selector is what goes inside a range
// function (no "[5m]"). Readers of pod-level series (DCGM,
// cAdvisor, kube-state-metrics pods, training pods, network pod counters, serving engine
// metrics) pass PrometheusOptions::ScopeMatchers()
// (prometheus_client.h) so that --namespace and --selector narrow every query alike.
std::string AddMatchers(std::string_view selector, const std::vector<LabelMatcher>& matchers);

}  // namespace gpufit
