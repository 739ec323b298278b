// Small text helpers for list-valued fields and flags, and for quoting untrusted text in
// error messages and in Markdown reports.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace gpufit {

// The items of `text` separated by `sep`, spaces around each item trimmed, empty items
// dropped: SplitList(" a, b,,c ", ',') is {"a", "b", "c"}.
inline std::vector<std::string> SplitList(std::string_view text, char sep) {
  std::vector<std::string> out;
  while (true) {
    const std::size_t at = text.find(sep);
    std::string_view item = text.substr(0, at);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (at == std::string_view::npos) return out;
    text.remove_prefix(at + 1);
  }
}

// `text` (untrusted input: a cell, a field, a flag) made safe to print inside an error
// message: wrapped in single quotes, at most `max` bytes of it shown (then "..." and the
// full length in bytes, so a 1 MB value cannot flood a terminal or a log), and every byte
// that could break a log line or fool a reader escaped: control characters (\n, \r, \t as
// such, others as \xHH), DEL, a backslash and a quote, and the Unicode line and paragraph
// separators U+2028 and U+2029 and U+0085 (next line), which some viewers break lines at,
// as \u2028, \u2029, \u0085. Other UTF-8 passes through unchanged; a cut never splits a
// UTF-8 character. QuoteForMessage("a\rb") is 'a\rb' (backslash, r: four characters
// between the quotes).
inline std::string QuoteForMessage(std::string_view text, std::size_t max = 80) {
  std::string out = "'";
  std::size_t i = 0;
  for (; i < text.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    // U+0085 is C2 85; U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x85) {
      out += "\\u0085";
      ++i;
    } else if (c == 0xE2 && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xA8' || text[i + 2] == '\xA9')) {
      out += text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (i < text.size()) {
    // Never end inside a UTF-8 character: when the cut falls on a continuation byte, drop the
    // character's bytes already copied (its continuation bytes, then its lead byte).
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) {
      while (out.size() > 1 && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
      if (out.size() > 1 && static_cast<unsigned char>(out.back()) >= 0xC0) out.pop_back();
    }
    out += "'... (" + std::to_string(text.size()) + " bytes)";
    return out;
  }
  return out + "'";
}

// `text` (untrusted input: a pod, namespace, workload, node or model name from a file or a
// server) made safe to put in Markdown, in running text or a table cell, so that it shows as
// itself and cannot add markup: `&`, `<`, `>` as HTML entities (no tag or entity reaches a
// renderer that passes HTML through), a backslash, a backtick, `|` (a table cell's end), `[`
// and `]` (a link) and `*` escaped with a backslash, and line breaks and other control
// characters as a space (a newline would end a table row). MarkdownText("<b>|x") is
// "&lt;b&gt;\|x" (a backslash before the bar).
inline std::string MarkdownText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\\':
      case '`':
      case '|':
      case '[':
      case ']':
      case '*':
        out += '\\';
        out += ch;
        break;
      default:
        out += c < 0x20 || c == 0x7F ? ' ' : ch;
    }
  }
  return out;
}

}  // namespace gpufit
