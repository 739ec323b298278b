#include "gpufit/ingest/prometheus/selector.h"

#include <fmt/format.h>

namespace gpufit {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

// A quoted PromQL string at text[i] (" or '), unescaped; i moves past it. Errors: a word.
Result<std::string> QuotedString(std::string_view text, std::size_t& i) {
  const char quote = text[i++];
  std::string out;
  while (i < text.size() && text[i] != quote) {
    char c = text[i++];
    if (c == '\\') {
      if (i == text.size()) break;
      const char e = text[i++];
      switch (e) {
        case 'n':
          c = '\n';
          break;
        case 't':
          c = '\t';
          break;
        case 'r':
          c = '\r';
          break;
        case '\\':
        case '"':
        case '\'':
          c = e;
          break;
        default:
          return InvalidArgument("unknown escape \\{}", e);
      }
    }
    out += c;
  }
  if (i >= text.size()) return InvalidArgument("unterminated string");
  ++i;  // the closing quote
  return out;
}

}  // namespace

std::string LabelMatcher::ToPromQL() const {
  std::string quoted;
  for (const char c : value) {
    if (c == '\\' || c == '"') quoted += '\\';
    if (c == '\n') {
      quoted += "\\n";
      continue;
    }
    quoted += c;
  }
  return fmt::format("{}{}\"{}\"", label, op, quoted);
}

Result<std::vector<LabelMatcher>> ParseLabelMatchers(std::string_view text, std::string_view flag) {
  std::vector<LabelMatcher> out;
  std::size_t i = 0;
  const auto skip_space = [&] {
    while (i < text.size() && IsSpace(text[i])) ++i;
  };
  skip_space();
  if (i == text.size()) return InvalidArgument("{}: no matcher (expected e.g. team=\"ml\")", flag);
  while (i < text.size()) {
    skip_space();
    const std::size_t begin = i;
    // The matcher as written, for the message: to the next comma outside quotes, at most.
    const auto written = [&] {
      std::size_t end = begin;
      char quote = 0;
      for (; end < text.size(); ++end) {
        if (quote != 0 && text[end] == '\\') {
          ++end;
        } else if (quote != 0 && text[end] == quote) {
          quote = 0;
        } else if (quote == 0 && (text[end] == '"' || text[end] == '\'')) {
          quote = text[end];
        } else if (quote == 0 && text[end] == ',') {
          break;
        }
      }
      return std::string(text.substr(begin, std::min(end, text.size()) - begin));
    };
    const auto bad = [&](std::string_view why) {
      return InvalidArgument(
          "{}: bad matcher '{}': {} (expected label=\"value\", label!=\"value\", label=~\"regex\" or "
          "label!~\"regex\", comma-separated)",
          flag, written(), why);
    };
    LabelMatcher m;
    if (i >= text.size() || !IsNameStart(text[i])) return bad("a label name starts with a letter or _");
    while (i < text.size() && IsNameChar(text[i])) m.label += text[i++];
    if (m.label == "__name__") return bad("__name__ would change the metric each query reads; scope by other labels");
    skip_space();
    for (const char* op : {"=~", "!~", "!=", "="}) {
      if (text.substr(i, std::string_view(op).size()) == op) {
        m.op = op;
        i += m.op.size();
        break;
      }
    }
    if (m.op.empty()) return bad("no operator = != =~ !~ after the label name");
    skip_space();
    if (i >= text.size() || (text[i] != '"' && text[i] != '\'')) return bad("the value must be quoted");
    Result<std::string> value = QuotedString(text, i);
    if (!value) return bad(value.error().message);
    m.value = std::move(*value);
    out.push_back(std::move(m));
    skip_space();
    if (i < text.size()) {
      if (text[i] != ',') return bad("expected ',' between matchers");
      ++i;
      skip_space();
      if (i == text.size())
        return InvalidArgument("{}: a trailing ',' after the last matcher '{}' (remove it, or add a matcher after it)",
                               flag, text.substr(begin, text.rfind(',') - begin));
    }
  }
  return out;
}

Result<std::vector<std::string>> ParseNamespaces(std::string_view text, std::string_view flag) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    std::string_view name = text.substr(begin, comma - begin);
    while (!name.empty() && IsSpace(name.front())) name.remove_prefix(1);
    while (!name.empty() && IsSpace(name.back())) name.remove_suffix(1);
    const bool ok = !name.empty() && name.size() <= 63 && name.front() != '-' && name.back() != '-' &&
                    name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string_view::npos;
    if (!ok)
      return InvalidArgument(
          "{}: '{}' is not a namespace name (lower-case letters, digits and '-', at most 63, starting and "
          "ending with a letter or digit; several are comma-separated)",
          flag, name);
    out.emplace_back(name);
    begin = comma + 1;
  }
  return out;
}

std::string RegexEscape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (std::string_view("\\.+*?()|[]{}^$").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::vector<LabelMatcher> NamespaceMatchers(const std::vector<std::string>& namespaces) {
  if (namespaces.empty()) return {};
  if (namespaces.size() == 1) return {{.label = "namespace", .op = "=", .value = namespaces.front()}};
  std::string alternation;
  for (const std::string& ns : namespaces) alternation += (alternation.empty() ? "" : "|") + RegexEscape(ns);
  return {{.label = "namespace", .op = "=~", .value = alternation}};
}

std::string AddMatchers(std::string_view selector, const std::vector<LabelMatcher>& matchers) {
  if (matchers.empty()) return std::string(selector);
  std::string added;
  for (const LabelMatcher& m : matchers) added += (added.empty() ? "" : ",") + m.ToPromQL();
  if (!selector.empty() && selector.back() == '}') {
    const std::size_t open = selector.rfind('{');
    // "m{}" or "m{a=\"b\"}": the new matchers go before the closing brace.
    const bool empty_braces =
        open != std::string_view::npos && selector.find_first_not_of(" ", open + 1) == selector.size() - 1;
    return fmt::format("{}{}{}}}", selector.substr(0, selector.size() - 1), empty_braces ? "" : ",", added);
  }
  return fmt::format("{}{{{}}}", selector, added);
}

}  // namespace gpufit
