#include "cli_app.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <new>
#include <string_view>

#include "cli_common.h"
#include "completion.h"
#include "config_file.h"
#include "progress.h"
#include "version.h"

namespace gpufit::cli {
namespace {

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The command that was run: the deepest command parsed.
const CLI::App* RunCommand(const CLI::App& app) {
  const CLI::App* cmd = &app;
  while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().front();
  return cmd;
}

// The --config FILE of argv ("" when none): the file is checked before CLI11 reads it.
std::string ConfigArgument(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "--config" && i + 1 < argc) return argv[i + 1];
    if (a.starts_with("--config=")) return std::string(a.substr(9));
  }
  return {};
}

// "unknown command 'mig chek' (did you mean 'mig check'?; commands: check, free, ...)", the
// word `arg` given where `cmd` takes a command.
std::string UnknownCommandMessage(const CLI::App& cmd, const std::string& arg) {
  std::vector<std::string> names;
  for (const CLI::App* s : cmd.get_subcommands([](const CLI::App*) { return true; })) names.push_back(s->get_name());
  const std::string path = CommandPath(cmd), closest = ClosestName(arg, names);
  const std::string prefix = path.empty() ? "" : path + " ";
  return "unknown command '" + prefix + arg + "' (" +
         (closest.empty() ? "" : "did you mean '" + prefix + closest + "'?; ") +
         "commands: " + CLI::detail::join(names, ", ") + ")";
}

// The first word of argv that stands where a command is expected and names none (as
// UnknownCommandMessage), else "". Option values are skipped (an option taking a value, as
// its command or a parent declares it); an unknown option stops the scan (the parse reports it).
std::string UnknownCommandInArgv(const CLI::App& app, int argc, char** argv) {
  const CLI::App* cmd = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return {};
    if (arg.size() > 1 && arg[0] == '-') {
      if (arg.find('=') != std::string::npos || (arg[1] != '-' && arg.size() > 2)) continue;  // value attached
      const CLI::Option* o = nullptr;
      for (const CLI::App* a = cmd; a != nullptr && o == nullptr; a = a->get_parent()) o = a->get_option_no_throw(arg);
      if (o == nullptr) return {};
      if (o->get_expected_min() > 0) ++i;
      continue;
    }
    const auto subs = cmd->get_subcommands([](const CLI::App*) { return true; });
    if (subs.empty()) return {};  // a positional argument of the command
    const auto next = std::find_if(subs.begin(), subs.end(), [&](const CLI::App* s) { return s->check_name(arg); });
    if (next == subs.end()) return UnknownCommandMessage(*cmd, arg);
    cmd = *next;
  }
  return {};
}

// "unknown option --telemtry (did you mean --telemetry?)" for the first unknown option of the
// run command, "unknown command 'mig chek' (did you mean 'mig check'?)" for a word where a
// command has subcommands, or "" for other arguments left over.
std::string UnknownOptionMessage(const CLI::App& app) {
  const CLI::App* cmd = RunCommand(app);
  const auto subs = cmd->get_subcommands([](const CLI::App*) { return true; });
  for (const std::string& arg : app.remaining(true)) {
    if (!subs.empty() && !arg.empty() && arg[0] != '-') return UnknownCommandMessage(*cmd, arg);
    if (arg.size() < 2 || arg[0] != '-' || arg == "--") continue;
    const std::string name = arg.substr(0, arg.find('='));
    const std::string path = CommandPath(*cmd);
    const std::string closest = ClosestName(name, AcceptedOptions(*cmd));
    if (!closest.empty()) return "unknown option " + name + " (did you mean " + closest + "?)";
    return "unknown option " + name + " (see " + ProgramName() + " " + (path.empty() ? "" : path + " ") + "--help)";
  }
  return {};
}

// Fallthrough also lets a nested command take its parent command's options (`inference
// backtest --services`), which that parent then ignores: only the program's own are meant.
void RejectParentOptions(const CLI::App& cmd, int argc, char** argv) {
  for (const CLI::App* a = cmd.get_parent(); a != nullptr && a->get_parent() != nullptr; a = a->get_parent())
    for (const CLI::Option* o : a->get_options())
      if (o->count() > 0)
        for (const std::string& l : o->get_lnames())
          for (int i = 1; i < argc; ++i)
            if (const std::string_view arg = argv[i]; arg == "--" + l || arg.starts_with("--" + l + "="))
              throw CLI::ValidationError("--" + l,
                                         "an option of '" + CommandPath(*a) + "', not of '" + CommandPath(cmd) + "'");
}

// Whether argv gives `flag` ("--format") by one of its names (its short ones too: -f).
bool OnCommandLine(const CLI::App& app, const std::string& flag, int argc, char** argv) {
  std::vector<std::string> names = {flag};
  std::vector<const CLI::App*> todo = {&app};
  while (!todo.empty()) {
    const CLI::App* a = todo.back();
    todo.pop_back();
    if (const CLI::Option* o = a->get_option_no_throw(flag); o != nullptr)
      for (const std::string& s : o->get_snames()) names.push_back("-" + s);
    for (const CLI::App* sub : a->get_subcommands([](const CLI::App*) { return true; })) todo.push_back(sub);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    for (const std::string& n : names)
      if (arg == n || arg.starts_with(n + (n.size() == 2 ? "" : "="))) return true;
  }
  return false;
}

// " (did you mean json?)" for CLI11's "--format: jsn not in {text,json,...}" when one of the
// choices is close (a third of the value's letters changed at most: "html" is not "yaml"),
// else "".
std::string ChoiceSuggestion(const std::string& message) {
  const std::size_t colon = message.find(": "), not_in = message.find(" not in {"), close = message.rfind('}');
  if (colon == std::string::npos || not_in == std::string::npos || close == std::string::npos || not_in < colon)
    return {};
  const std::string given = message.substr(colon + 2, not_in - colon - 2);
  const std::vector<std::string> choices = CLI::detail::split(message.substr(not_in + 9, close - not_in - 9), ',');
  const std::string closest = ClosestName(given, choices);
  if (closest.empty() ||
      (EditDistance(given, closest) > std::max<std::size_t>(1, given.size() / 3) && !closest.starts_with(given)))
    return {};
  return " (did you mean " + closest + "?)";
}

}  // namespace

std::string CommandPath(const CLI::App& cmd) {
  std::string path;
  for (const CLI::App* a = &cmd; a != nullptr && a->get_parent() != nullptr; a = a->get_parent())
    path = a->get_name() + (path.empty() ? "" : " " + path);
  return path;
}

void AddGlobalOptions(CLI::App& app, GlobalFlags& g) {
  app.fallthrough();
  app.set_version_flag("--version", VersionText(), "print the version and the git commit it was built from");
  app.set_config("--config", "",
                 "TOML file of flags: key = value per flag without its dashes, in a [COMMAND] section "
                 "([plan], [mig.check]); flags on the command line win")
      ->type_name("FILE");
  app.config_formatter(TomlWithLists(app));  // commands added later inherit it
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.add_flag(
      "-v,--verbose", g.verbosity,
      "log each Prometheus request and the time of each phase on stderr (-vv: also the options the command was given)");
  app.add_flag("-q,--quiet", g.quiet, "no progress line and no informational notes on stderr");
}

void AddCompletionCommand(CLI::App& app, int& rc) {
  auto shell = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("completion", "print the shell completion script: bash, zsh or fish");
  cmd->add_option("shell", *shell, "bash, zsh or fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  cmd->footer(
      "bash: source <(gpufit completion bash), or save it as ~/.local/share/bash-completion/completions/gpufit\n"
      "zsh:  gpufit completion zsh > \"${fpath[1]}/_gpufit\"\n"
      "fish: gpufit completion fish > ~/.config/fish/completions/gpufit.fish");
  cmd->callback([&app, shell, &rc] {
    std::fputs(CompletionScript(app, *shell).c_str(), stdout);
    rc = 0;
  });
}

int ParseCommandLine(CLI::App& app, GlobalFlags& g, int argc, char** argv, const int& rc) {
  const char* prog = ProgramName().c_str();
  // An unknown command is an error even with --help (CLI11 would print the parent's help).
  if (const std::string unknown = UnknownCommandInArgv(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "%s: error: %s\n", prog, unknown.c_str());
    return 2;
  }
  // The console is set up once the options are read, before the command's callback runs.
  app.parse_complete_callback([&app, &g, argc, argv] {
    ConfigureConsole({.verbosity = g.verbosity, .quiet = g.quiet});
    const CLI::App* cmd = RunCommand(app);
    RejectParentOptions(*cmd, argc, argv);
    StartCommand(CommandPath(*cmd));
    if (g.verbosity > 1)  // -vv: what the command was given, from the command line or --config
      for (const CLI::App* a : {cmd, static_cast<const CLI::App*>(&app)})
        for (const CLI::Option* o : a->get_options())
          if (o->count() > 0 && !o->get_lnames().empty())  // a repeated flag (-vv) by its count
            LogDebug("--" + o->get_lnames().front() + " = " +
                     (o->get_expected_min() == 0 && o->count() > 1 ? std::to_string(o->count())
                                                                   : CLI::detail::join(o->results(), ",")));
  });
  g.config = ConfigArgument(argc, argv);
  std::vector<ConfigLine> config_lines;
  if (!g.config.empty()) {
    Result<std::vector<ConfigLine>> lines = CheckConfigFile(app, g.config);
    if (!lines) {
      std::fprintf(stderr, "%s: error: %s\n", prog, lines.error().message.c_str());
      return 2;
    }
    config_lines = std::move(*lines);
  }
  int code = 0;
  try {
    app.parse(argc, argv);
    code = rc;
  } catch (const CLI::CallForHelp& e) {
    code = app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    code = app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    code = app.exit(e);
  } catch (const CLI::ParseError& e) {
    // An unknown option is the likely cause of any other complaint (a required flag misspelt).
    if (const std::string unknown = UnknownOptionMessage(app); !unknown.empty()) {
      EndPhases();
      std::fprintf(stderr, "%s: error: %s\n", prog, unknown.c_str());
      return 2;
    }
    // Errors CLI11 finds in a --config file (CheckConfigFile found none) name the file, and
    // the line when the error is about a value the file gave.
    const std::string what = e.what();
    if (const ConfigLine* line = ConfigLineOf(config_lines, what, OnCommandLine(app, FlagOfMessage(what), argc, argv)))
      std::fprintf(stderr, "%s: error: --config %s:%d: %s%s\n", prog, g.config.c_str(), line->line, what.c_str(),
                   ChoiceSuggestion(what).c_str());
    else if (dynamic_cast<const CLI::ConfigError*>(&e) != nullptr && !g.config.empty())
      std::fprintf(stderr, "%s: error: --config %s: %s (see %s --help)\n", prog, g.config.c_str(), what.c_str(), prog);
    else if (const std::string suggestion = ChoiceSuggestion(what); !suggestion.empty())
      std::fprintf(stderr, "%s: error: %s%s\n", prog, what.c_str(), suggestion.c_str());
    else
      std::fprintf(stderr, "%s: error: %s (see %s --help)\n", prog, what.c_str(), prog);
    code = 2;
  } catch (const std::bad_alloc&) {
    EndPhases();
    std::fprintf(stderr, "%s: error: out of memory (the telemetry is too large for this machine)\n", prog);
    return 1;
  }
  EndPhases();
  return code;
}

CLI::Option* AddDeprecatedAlias(CLI::App* cmd, const std::string& old_name, CLI::Option* current) {
  const std::string now = "--" + current->get_lnames().front();
  return cmd
      ->add_option_function<std::string>(
          old_name,
          [cmd, old_name, now, current](const std::string& value) {
            // Only for the command run: a --config section of another command is read too.
            if (cmd->count() > 0)
              std::fprintf(stderr, "%s: warning: %s is deprecated, use %s\n", ProgramName().c_str(), old_name.c_str(),
                           now.c_str());
            current->add_result(value);
            current->run_callback();
          },
          "deprecated: use " + now)
      ->group("");
}

std::vector<const CLI::Option*> WithGlobalOptions(const CLI::App& cmd) {
  std::vector<const CLI::Option*> options;
  const CLI::App* root = &cmd;
  while (root->get_parent() != nullptr) root = root->get_parent();
  for (const CLI::Option* o : cmd.get_options())
    if (!o->get_group().empty() && (o->get_lnames().size() + o->get_snames().size()) > 0) options.push_back(o);
  if (root != &cmd)
    for (const CLI::Option* o : root->get_options())
      if (!o->get_group().empty() && o != root->get_help_ptr()) options.push_back(o);
  return options;
}

std::vector<std::string> AcceptedOptions(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* o : WithGlobalOptions(cmd)) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

std::string ClosestName(const std::string& given, const std::vector<std::string>& names) {
  const std::size_t limit = std::max<std::size_t>(2, given.size() / 3);
  std::string best;
  std::size_t best_distance = limit + 1;
  for (const std::string& n : names) {
    const std::size_t d = EditDistance(given, n);
    if (d < best_distance) {
      best = n;
      best_distance = d;
    }
  }
  if (!best.empty() || given.size() < 4) return best;
  for (const std::string& n : names)
    if (n.starts_with(given) && (best.empty() || n.size() < best.size())) best = n;
  return best;
}

namespace {

// The help of a command whose options GroupPlanHelp sorted: its groups in the order of
// kHelpGroups (CLI11 2.1 orders them by first use), then any other, then the footer.
class GroupedHelp final : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
    std::vector<std::string> order = {"Input", "Target", "Safety", "Output", "Advanced"};
    for (const std::string& g : app->get_groups())
      if (std::find(order.begin(), order.end(), g) == order.end()) order.push_back(g);
    std::string out = make_description(app) + make_usage(app, name) + make_positionals(app);
    for (const std::string& g : order) {
      std::vector<const CLI::Option*> opts =
          app->get_options([&g](const CLI::Option* o) { return o->get_group() == g && o->nonpositional(); });
      if (!g.empty() && !opts.empty()) out += make_group(g, false, opts);
    }
    return out + make_subcommands(app, mode) + "\n" + make_footer(app);
  }
};

}  // namespace

void GroupPlanHelp(CLI::App* cmd, const char* examples) {
  // Long name (without dashes) -> group; a name starting with "prometheus" is Input too.
  static const std::map<std::string, std::string, std::less<>> kGroups = {
      {"telemetry", "Input"},
      {"prometheus", "Input"},
      {"containers", "Input"},
      {"since", "Input"},
      {"until", "Input"},
      {"step", "Input"},
      {"namespace", "Input"},
      {"selector", "Input"},
      {"training-jobs", "Input"},
      {"inference", "Input"},
      {"nodes", "Input"},
      {"pods", "Input"},
      {"kubeconfig", "Input"},
      {"context", "Input"},
      {"model-loads", "Input"},
      {"catalog", "Input"},
      {"pod-count", "Input"},
      {"demo-seed", "Input"},
      {"bearer-token-file", "Input"},
      {"ca-file", "Input"},
      {"insecure-skip-verify", "Input"},
      {"gpu", "Target"},
      {"current-gpu", "Target"},
      {"gpus", "Target"},
      {"sharing", "Target"},
      {"replicas-apart", "Target"},
      {"compute-caps", "Target"},
      {"kai-queue", "Target"},
      {"capacity-labels", "Target"},
      {"autoscaler", "Target"},
      {"headroom", "Safety"},
      {"max-collision-share", "Safety"},
      {"reserve-mib", "Safety"},
      {"memory-risk", "Safety"},
      {"min-window-hours", "Safety"},
      {"envelope", "Safety"},
      {"risks", "Safety"},
      {"serving-slo", "Safety"},
      {"format", "Output"},
      {"out", "Output"},
      {"report", "Output"},
      {"emit-manifests", "Output"},
  };
  for (CLI::Option* o : cmd->get_options()) {
    if (o->get_group().empty() || o == cmd->get_help_ptr()) continue;  // hidden, or --help
    const std::vector<std::string>& longs = o->get_lnames();
    const std::string name = longs.empty() ? "" : longs.front();
    const auto it = kGroups.find(name);
    if (it != kGroups.end())
      o->group(it->second);
    else if (name.starts_with("prometheus"))
      o->group("Input");
    else if (longs.empty() && o->check_sname("o"))
      o->group("Output");
    else
      o->group("Advanced");
  }
  cmd->footer(examples);
  cmd->formatter(std::make_shared<GroupedHelp>());
}

}  // namespace gpufit::cli
