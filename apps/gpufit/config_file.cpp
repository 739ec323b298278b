#include "config_file.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>
#include <vector>

#include "cli_app.h"
#include "gpufit/core/text.h"

namespace gpufit::cli {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool KeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// A TOML value on one line (an array may continue on the next lines: `more` reads them).
bool TomlValue(std::string_view v) {
  if (v.empty()) return false;
  if (v.front() == '"' || v.front() == '\'') return v.size() >= 2 && v.back() == v.front();
  if (v == "true" || v == "false") return true;
  if (v.front() == '[') return v.back() == ']';
  // A number: digits, sign, decimal point, exponent, '_' separators.
  return v.find_first_not_of("0123456789+-._eE") == std::string_view::npos &&
         v.find_first_of("0123456789") != std::string_view::npos;
}

// The subcommand of `parent` named `name`, or nullptr.
const CLI::App* FindCommand(const CLI::App& parent, const std::string& name) {
  const auto found =
      parent.get_subcommands([&](const CLI::App* sub) { return sub->get_name() == name && !name.empty(); });
  return found.empty() ? nullptr : found.front();
}

// "plan", "mig check" ... every command path, for suggestions of a section name.
void CommandNames(const CLI::App& app, const std::string& prefix, std::vector<std::string>& out) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    const std::string name = prefix.empty() ? sub->get_name() : prefix + "." + sub->get_name();
    out.push_back("[" + name + "]");
    CommandNames(*sub, name, out);
  }
}

// The key names (flags without dashes) a section's command takes from a file.
std::vector<std::string> KeyNames(const CLI::App& cmd) {
  std::vector<std::string> keys;
  for (const CLI::Option* o : cmd.get_options())
    if (o->get_configurable())
      for (const std::string& l : o->get_lnames()) keys.push_back(l);
  return keys;
}

}  // namespace

Result<std::vector<ConfigLine>> CheckConfigFile(const CLI::App& app, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return InvalidArgument("--config {}: is a directory (give the TOML file, e.g. gpufit.toml)", path);
  if (!std::filesystem::is_regular_file(path, ec)) return NotFound("--config {}: no such file", path);
  std::ifstream in(path);
  if (!in) return NotFound("--config {}: cannot read it", path);
  const CLI::App* section = &app;
  std::string section_name;
  std::map<std::string, int> seen;  // "section.key" -> line
  std::vector<ConfigLine> lines;
  int n = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++n;
    std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const auto where = [&] { return "--config " + path + ":" + std::to_string(n); };
    if (line.front() == '[') {
      std::string_view name = line;
      if (name.starts_with("[[") && name.ends_with("]]"))
        name = name.substr(2, name.size() - 4);
      else if (name.ends_with("]"))
        name = name.substr(1, name.size() - 2);
      else
        return InvalidArgument("{}: a section is [COMMAND], got {}", where(), QuoteForMessage(std::string(line)));
      section = &app;
      section_name = std::string(Trim(name));
      std::string_view rest = section_name;
      while (!rest.empty()) {
        const std::size_t dot = rest.find('.');
        section = FindCommand(*section, std::string(rest.substr(0, dot)));
        if (section == nullptr) break;
        rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
      }
      if (section == nullptr || section_name.empty()) {
        std::vector<std::string> commands;
        CommandNames(app, "", commands);
        const std::string closest = ClosestName("[" + section_name + "]", commands);
        return InvalidArgument("{}: [{}] is not a gpufit command{}", where(), section_name,
                               closest.empty() ? "" : " (did you mean " + closest + "?)");
      }
      continue;
    }
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos)
      return InvalidArgument("{}: expected key = value or [COMMAND], got {}", where(),
                             QuoteForMessage(std::string(line)));
    const std::string key(Trim(line.substr(0, eq)));
    std::string value(Trim(line.substr(eq + 1)));
    if (const std::size_t hash = value.find(" #");
        hash != std::string::npos && value.front() != '"' && value.front() != '\'')
      value = std::string(Trim(std::string_view(value).substr(0, hash)));
    if (key.empty() || !std::all_of(key.begin(), key.end(), KeyChar))
      return InvalidArgument("{}: {} is not a key (a flag's name without its dashes, e.g. telemetry)", where(),
                             QuoteForMessage(key));
    // An array may go on over several lines until its ']'.
    if (!value.empty() && value.front() == '[')
      for (std::string more; value.back() != ']' && std::getline(in, more);) {
        ++n;
        value += std::string(Trim(more));
      }
    if (!TomlValue(value))
      return InvalidArgument("{}: {} = {}: not a TOML value (quote text: \"...\"; or a number, true, false, [a, list])",
                             where(), key, value.empty() ? "(nothing)" : QuoteForMessage(value));
    const std::vector<std::string> keys = KeyNames(*section);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      const std::string closest = ClosestName(key, keys);
      const CLI::Option* other = section->get_option_no_throw("--" + key);
      if (other != nullptr && !other->get_configurable())
        return InvalidArgument("{}: {} cannot be set in a config file", where(), key);
      return InvalidArgument("{}: unknown key {}{}{}", where(), QuoteForMessage(key),
                             section_name.empty() ? std::string() : " in [" + section_name + "]",
                             closest.empty() ? "" : " (did you mean " + closest + "?)");
    }
    const auto [it, fresh] = seen.emplace(section_name + "." + key, n);
    if (!fresh) return InvalidArgument("{}: {} is set twice (first on line {})", where(), key, it->second);
    const CLI::Option* o = section->get_option("--" + key);
    if (value.front() == '[' && o->get_delimiter() == '\0' && !o->get_type_name().starts_with("TEXT") &&
        o->get_items_expected_max() <= 1)
      return InvalidArgument("{}: {} takes one value, not a list", where(), key);
    if (value.front() == '"' || value.front() == '\'') value = value.substr(1, value.size() - 2);
    lines.push_back({.key = key, .value = value, .line = n});
  }
  return lines;
}

std::string FlagOfMessage(const std::string& message) {
  for (std::size_t at = message.find("--"); at != std::string::npos; at = message.find("--", at + 2)) {
    std::size_t end = at + 2;
    while (end < message.size() && KeyChar(message[end])) ++end;
    if (end > at + 2 && (at == 0 || !KeyChar(message[at - 1]))) return message.substr(at, end - at);
  }
  return {};
}

const ConfigLine* ConfigLineOf(const std::vector<ConfigLine>& lines, const std::string& message, bool on_command_line) {
  const std::string flag = FlagOfMessage(message);
  if (flag.empty()) return nullptr;
  const ConfigLine* first = nullptr;
  for (const ConfigLine& l : lines) {
    if ("--" + l.key != flag) continue;
    if (!l.value.empty() && message.find(l.value, flag.size()) != std::string::npos) return &l;
    if (first == nullptr) first = &l;
  }
  return on_command_line ? nullptr : first;
}

namespace {

class TomlReader final : public CLI::ConfigTOML {
 public:
  explicit TomlReader(const CLI::App& app) : app_(app) {}
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    std::vector<CLI::ConfigItem> read = CLI::ConfigTOML::from_config(input);
    for (CLI::ConfigItem& item : read) {
      if (item.inputs.size() < 2) continue;
      const CLI::App* cmd = &app_;
      for (const std::string& p : item.parents)
        if (cmd != nullptr) cmd = FindCommand(*cmd, p);
      const CLI::Option* o = cmd == nullptr ? nullptr : cmd->get_option_no_throw("--" + item.name);
      if (o != nullptr && o->get_delimiter() == '\0' && o->get_type_name().starts_with("TEXT"))
        item.inputs = {CLI::detail::join(item.inputs, ",")};
    }
    return read;
  }

 private:
  const CLI::App& app_;
};

}  // namespace

std::shared_ptr<CLI::Config> TomlWithLists(const CLI::App& app) { return std::make_shared<TomlReader>(app); }

}  // namespace gpufit::cli
