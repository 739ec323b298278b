#include "gpufit/core/yaml_nesting.h"

namespace gpufit {

Result<void> CheckYamlNesting(std::string_view text, const std::string& where, int max_depth, int max_indent) {
  int depth = 0, line = 1, indent = 0;
  bool line_start = true, in_comment = false;
  char quote = '\0';
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = true;
      in_comment = false;
      indent = 0;
      continue;
    }
    if (in_comment) continue;
    if (line_start && c == ' ' && quote == '\0') {
      if (++indent > max_indent)
        return InvalidArgument("{}: line {}: YAML indented more than {} columns: not a file gpufit reads", where, line,
                               max_indent);
      continue;
    }
    line_start = false;
    if (quote == '"') {
      if (c == '\\') ++i;
      else if (c == '"') quote = '\0';
      continue;
    }
    if (quote == '\'') {
      if (c == '\'' && i + 1 < text.size() && text[i + 1] == '\'') ++i;
      else if (c == '\'') quote = '\0';
      continue;
    }
    if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n')) {
      in_comment = true;
    } else if (c == '"' || c == '\'') {
      // A quote opens a quoted scalar only where a scalar starts (after a blank, [, {, :, , or
      // at the line's start); inside a plain scalar (it's) it is a character.
      const char before = i == 0 ? '\n' : text[i - 1];
      if (before == ' ' || before == '\t' || before == '\n' || before == '[' || before == '{' || before == ',' ||
          before == ':' || before == '-')
        quote = c;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return InvalidArgument("{}: line {}: YAML nested deeper than {} levels: not a file gpufit reads", where, line,
                               max_depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return {};
}

}  // namespace gpufit
