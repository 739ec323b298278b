#include "completion.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "cli_app.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/catalog/mig_catalog.h"

namespace gpufit::cli {
namespace {

struct Flag {
  std::string name;         // "--telemetry" or "-o"
  std::string description;  // first line
  bool takes_value = false;
  std::vector<std::string> choices;  // the values a CLI::IsMember check allows (none: any, a file)
};

// The values of an option checked by CLI::IsMember: CLI11 writes them into its type name,
// "TEXT:{text,json}".
std::vector<std::string> Choices(const CLI::Option& o) {
  const std::string type = o.get_type_name();
  const std::size_t open = type.find(":{"), close = type.find('}', open);
  std::vector<std::string> out;
  if (open == std::string::npos || close == std::string::npos) return out;
  std::string item;
  for (char c : type.substr(open + 2, close - open - 2)) {
    if (c != ',') {
      item += c;
      continue;
    }
    out.push_back(item);
    item.clear();
  }
  out.push_back(item);
  return out;
}

// Flags whose value is a GPU catalog id, by name (their commands check the id against the
// catalog, which CLI11 does not know): the embedded GPU catalog's ids, under `mig` the
// embedded MIG catalog's (the GPUs `mig` commands know).
constexpr const char* kCatalogIdFlags[] = {"gpu", "current-gpu"};

std::vector<std::string> CatalogIds(bool mig) {
  std::vector<std::string> ids;
  if (mig)
    for (const MigGpu& g : MigCatalog::Embedded().gpus()) ids.push_back(g.id);
  else
    for (const GpuModel& m : GpuCatalog::Embedded().models()) ids.push_back(m.id);
  return ids;
}

// The values `o` of the command `path` ("gpufit/mig/check") completes to: its choices, else
// catalog ids for a catalog id flag, else none (a file name).
std::vector<std::string> Values(const CLI::Option& o, const std::string& path) {
  std::vector<std::string> choices = Choices(o);
  if (!choices.empty()) return choices;
  for (const char* name : kCatalogIdFlags)
    if (o.check_lname(name)) return CatalogIds(path.starts_with("gpufit/mig/"));
  return {};
}

// One command of the tree: its path ("gpufit", "gpufit/mig/check"), subcommands, flags and
// the choices of its first argument (`completion`: bash, zsh, fish).
struct Node {
  std::string path;
  std::vector<std::pair<std::string, std::string>> commands;  // name, description
  std::vector<Flag> flags;
  std::vector<std::string> arguments;
};

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > 80) line = line.substr(0, 77) + "...";
  return line;
}

void Walk(const CLI::App& cmd, const std::string& path, std::vector<Node>& out) {
  Node node{.path = path, .commands = {}, .flags = {}, .arguments = {}};
  const auto subs = cmd.get_subcommands([](const CLI::App*) { return true; });
  for (const CLI::App* sub : subs) node.commands.emplace_back(sub->get_name(), FirstLine(sub->get_description()));
  for (const CLI::Option* o : cmd.get_options())
    if (!o->nonpositional() && node.arguments.empty()) node.arguments = Choices(*o);
  for (const CLI::Option* o : WithGlobalOptions(cmd)) {
    const bool value = o->get_expected_min() > 0;
    const std::vector<std::string> choices = value ? Values(*o, path) : std::vector<std::string>{};
    for (const std::string& l : o->get_lnames())
      node.flags.push_back({"--" + l, FirstLine(o->get_description()), value, choices});
    for (const std::string& s : o->get_snames())
      node.flags.push_back({"-" + s, FirstLine(o->get_description()), value, choices});
  }
  out.push_back(std::move(node));
  for (const CLI::App* sub : subs) Walk(*sub, path + "/" + sub->get_name(), out);
}

std::vector<std::string> Names(const Node& n, bool flags) {
  std::vector<std::string> names;
  if (flags)
    for (const Flag& f : n.flags) names.push_back(f.name);
  else
    for (const auto& c : n.commands) names.push_back(c.first);
  return names;
}

// The flags of `n` whose value is a file name (they take a value and have no choices).
std::vector<std::string> FileFlags(const Node& n) {
  std::vector<std::string> names;
  for (const Flag& f : n.flags)
    if (f.takes_value && f.choices.empty()) names.push_back(f.name);
  return names;
}

// Shared by bash and zsh: the variables of the command `cmdpath` names, as `open_paren` PATH)
// commands=... flags=... files=... (flags whose value is a file) arguments=... (the choices of
// its first argument), then each flag with choices as `open_paren` "PATH FLAG") CHOICE_COMMAND
// where CHOICE_COMMAND is `choice` formatted with the choices (the word before is the flag).
std::string ValueCases(const std::vector<Node>& nodes, const char* open_paren, const char* list_open,
                       const char* list_close, const char* choice) {
  std::string s = "  case \"$cmdpath\" in\n";
  for (const Node& n : nodes)
    s += fmt::format("    {}\"{}\") commands={}{}{}; flags={}{}{}; files={}{}{}; arguments={}{}{} ;;\n", open_paren,
                     n.path, list_open, fmt::join(Names(n, false), " "), list_close, list_open,
                     fmt::join(Names(n, true), " "), list_close, list_open, fmt::join(FileFlags(n), " "), list_close,
                     list_open, fmt::join(n.arguments, " "), list_close);
  s += "  esac\n  case \"$cmdpath $prev\" in\n";
  for (const Node& n : nodes)
    for (const Flag& f : n.flags)
      if (!f.choices.empty())
        s += fmt::format("    {}\"{} {}\") ", open_paren, n.path, f.name) +
             fmt::format(fmt::runtime(choice), fmt::join(f.choices, " ")) + "; return ;;\n";
  return s + "  esac\n";
}

// Word-by-word walk shared by bash and zsh: `path` follows the command words typed so far.
std::string PathCases(const std::vector<Node>& nodes, const char* open_paren) {
  std::vector<std::string> paths;
  for (const Node& n : nodes)
    if (n.path != "gpufit") paths.push_back("\"" + n.path + "\"");
  return fmt::format("      {}{}) cmdpath=\"$cmdpath/$w\" ;;\n", open_paren, fmt::join(paths, "|"));
}

std::string Bash(const std::vector<Node>& nodes) {
  std::string s =
      "# bash completion for gpufit (generated by `gpufit completion bash` from its command tree)\n"
      "_gpufit() {\n"
      "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\" cmdpath=gpufit w i\n"
      "  local commands=\"\" flags=\"\" files=\"\" arguments=\"\"\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    w=\"${COMP_WORDS[i]}\"\n"
      "    case \"$cmdpath/$w\" in\n";
  s += PathCases(nodes, "");
  s += "    esac\n  done\n";
  s += ValueCases(nodes, "", "\"", "\"", "COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"))");
  s += "  if [[ \" $files \" == *\" $prev \"* ]]; then\n"
       "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
       "  elif [[ \"$cur\" == -* ]]; then\n"
       "    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
       "  elif [[ -n \"$commands\" ]]; then\n"
       "    COMPREPLY=($(compgen -W \"$commands\" -- \"$cur\"))\n"
       "  elif [[ -n \"$arguments\" ]]; then\n"
       "    COMPREPLY=($(compgen -W \"$arguments\" -- \"$cur\"))\n"
       "  else\n"
       "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
       "  fi\n"
       "}\n"
       "complete -o default -F _gpufit gpufit\n";
  return s;
}

std::string Zsh(const std::vector<Node>& nodes) {
  std::string s =
      "#compdef gpufit\n"
      "# zsh completion for gpufit (generated by `gpufit completion zsh` from its command tree)\n"
      "_gpufit() {\n"
      "  local cmdpath=gpufit w i prev=\"${words[CURRENT-1]}\"\n"
      "  local -a commands flags files arguments\n"
      "  for ((i = 2; i < CURRENT; i++)); do\n"
      "    w=\"${words[i]}\"\n"
      "    case \"$cmdpath/$w\" in\n";
  s += PathCases(nodes, "(");
  s += "    esac\n  done\n";
  s += ValueCases(nodes, "(", "(", ")", "compadd -- {}");
  s += "  if (( ${files[(Ie)$prev]} )); then\n"
       "    _files\n"
       "  elif [[ \"${words[CURRENT]}\" == -* ]]; then\n"
       "    compadd -- \"${flags[@]}\"\n"
       "  elif (( ${#commands} )); then\n"
       "    compadd -- \"${commands[@]}\"\n"
       "  elif (( ${#arguments} )); then\n"
       "    compadd -- \"${arguments[@]}\"\n"
       "  else\n"
       "    _files\n"
       "  fi\n"
       "}\n"
       "if (( $+functions[compdef] )); then compdef _gpufit gpufit; fi\n";
  return s;
}

// A fish single-quoted string.
std::string FishQuote(const std::string& text) {
  std::string q = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') q += '\\';
    q += c;
  }
  return q + "'";
}

std::string Fish(const std::vector<Node>& nodes) {
  std::string s =
      "# fish completion for gpufit (generated by `gpufit completion fish` from its command tree)\n"
      "function __gpufit_path\n"
      "    set -l p gpufit\n"
      "    for w in (commandline -opc)[2..-1]\n"
      "        switch \"$p/$w\"\n"
      "            case";
  for (const Node& n : nodes)
    if (n.path != "gpufit") s += " " + FishQuote(n.path);
  s += "\n"
       "                set p \"$p/$w\"\n"
       "        end\n"
       "    end\n"
       "    echo $p\n"
       "end\n"
       "complete -c gpufit -f\n";
  for (const Node& n : nodes) {
    const std::string when = FishQuote("test (__gpufit_path) = " + n.path);
    for (const auto& [name, description] : n.commands)
      s += fmt::format("complete -c gpufit -n {} -a {} -d {}\n", when, FishQuote(name), FishQuote(description));
    if (!n.arguments.empty())
      s += fmt::format("complete -c gpufit -n {} -a {}\n", when,
                       FishQuote(fmt::format("{}", fmt::join(n.arguments, " "))));
    for (const Flag& f : n.flags)
      s += fmt::format("complete -c gpufit -n {} {} {}{} -d {}\n", when, f.name.starts_with("--") ? "-l" : "-s",
                       f.name.substr(f.name.starts_with("--") ? 2 : 1),
                       !f.choices.empty() ? " -x -a " + FishQuote(fmt::format("{}", fmt::join(f.choices, " ")))
                       : f.takes_value    ? std::string(" -r -F")
                                          : std::string(),
                       FishQuote(f.description));
  }
  return s;
}

}  // namespace

std::string CompletionScript(const CLI::App& app, const std::string& shell) {
  std::vector<Node> nodes;
  Walk(app, "gpufit", nodes);
  if (shell == "zsh") return Zsh(nodes);
  if (shell == "fish") return Fish(nodes);
  return Bash(nodes);
}

}  // namespace gpufit::cli
