// Issue 20, the command line: --version, shell completion, --config, short flags, -v, the
// progress line, deprecated flag names and "did you mean", each run on the real gpufit binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "cli_run.h"
#include "kube_control_plane.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

using gpufit::e2e::CliRun;
using gpufit::e2e::GenTd26;
using gpufit::e2e::Gpufit;
using gpufit::e2e::Scratch;
using gpufit::e2e::Slurp;

// A small input file of tests/e2e/bad_inputs (valid ones: telemetry.csv, openb-*.csv).
std::string Fixture(const std::string& name) { return gpufit::test_paths::SourcePath("tests/e2e/bad_inputs/") + name; }

// Runs a shell command line with stdout and stderr captured in DIR.
CliRun Sh(const std::string& command, const fs::path& dir) {
  const fs::path script = dir / "command.sh";
  std::ofstream(script) << command << "\n";
  const std::string cmd =
      "sh " + script.string() + " > " + (dir / "stdout").string() + " 2> " + (dir / "stderr").string();
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(dir / "stdout"), Slurp(dir / "stderr")};
}

bool Installed(const std::string& program) {
  return std::system(("command -v " + program + " > /dev/null 2>&1").c_str()) == 0;
}

void Write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// --- --version ----------------------------------------------------------------------------

TEST(Version, PrintsTheVersionAndTheCommitOfTheCheckout) {
  const fs::path dir = Scratch("version");
  const CliRun git = Sh("git -C '" + std::string(gpufit::test_paths::SourceDir()) + "' rev-parse --short HEAD", dir);
  const std::string commit = git.exit_code == 0 && !git.out.empty() ? git.out.substr(0, git.out.find('\n')) : "unknown";
  const CliRun r = Gpufit("--version", dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "gpufit 0.1.0 (git " + commit + ")\n");
  EXPECT_EQ(r.err, "");
}

TEST(Version, WorksAfterACommandToo) {
  const fs::path dir = Scratch("version-after");
  const CliRun r = Gpufit("plan --version", dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::StartsWith("gpufit 0.1.0 (git "));
}

// --- completion ---------------------------------------------------------------------------

// What the bash completion offers for the words typed (the last one being completed).
std::string BashComplete(const fs::path& dir, const std::string& words) {
  const CliRun script = Gpufit("completion bash", dir);
  EXPECT_EQ(script.exit_code, 0) << script.err;
  Write(dir / "gpufit.bash", script.out);
  const CliRun r =
      Sh("bash -c 'source " + (dir / "gpufit.bash").string() + "; COMP_WORDS=(" + words +
             "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _gpufit; for w in \"${COMPREPLY[@]}\"; do echo \"$w\"; done'",
         dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return r.out;
}

TEST(Completion, BashCompletesACommand) { EXPECT_EQ(BashComplete(Scratch("bash-command"), "gpufit pl"), "plan\n"); }

TEST(Completion, BashCompletesAFlagOfTheCommand) {
  EXPECT_EQ(BashComplete(Scratch("bash-flag"), "gpufit plan --tel"), "--telemetry\n");
}

TEST(Completion, BashCompletesANestedCommandAndItsFlags) {
  EXPECT_EQ(BashComplete(Scratch("bash-nested"), "gpufit mig ch"), "check\n");
  EXPECT_EQ(BashComplete(Scratch("bash-nested-flag"), "gpufit mig check --prof"), "--profiles\n");
}

TEST(Completion, BashCompletesTheChoicesOfAFlag) {
  EXPECT_EQ(BashComplete(Scratch("bash-choices"), "gpufit plan --sharing h"), "hami\n");
  EXPECT_EQ(BashComplete(Scratch("bash-choices-short"), "gpufit analyze -f j"), "json\n");
}

TEST(Completion, BashOffersTheProgramsOwnFlagsAfterACommand) {
  EXPECT_EQ(BashComplete(Scratch("bash-global"), "gpufit plan --verb"), "--verbose\n");
}

TEST(Completion, BashLeavesDeprecatedNamesOut) {
  // simulate's --nodes and --pods are deprecated names of --openb-nodes and --openb-pods.
  EXPECT_EQ(BashComplete(Scratch("bash-deprecated"), "gpufit simulate --openb"), "--openb-nodes\n--openb-pods\n");
  EXPECT_EQ(BashComplete(Scratch("bash-deprecated-old"), "gpufit simulate --nod"), "");
}

TEST(Completion, BashCompletesTheCatalogIdsOfAGpuFlag) {
  EXPECT_EQ(BashComplete(Scratch("bash-gpu"), "gpufit plan --gpu \"\""),
            "t4\nl4\na10g\nl40s\na100-40gb\na100-80gb\nh100-80gb\nh100-94gb-nvl\nh200-141gb\n");
  EXPECT_EQ(BashComplete(Scratch("bash-gpu-h"), "gpufit plan --gpu h"), "h100-80gb\nh100-94gb-nvl\nh200-141gb\n");
  EXPECT_EQ(BashComplete(Scratch("bash-current-gpu"), "gpufit backtest --current-gpu a100"), "a100-40gb\na100-80gb\n");
  EXPECT_EQ(BashComplete(Scratch("bash-inference-gpu"), "gpufit inference backtest --gpu l"), "l4\nl40s\n");
  // mig commands know the MIG catalog's GPUs (a30-24gb, b200-180gb; no t4).
  EXPECT_EQ(BashComplete(Scratch("bash-mig-gpu"), "gpufit mig check --gpu \"\""),
            "a30-24gb\na100-40gb\na100-80gb\nh100-80gb\nh100-94gb-nvl\nh200-141gb\nb200-180gb\n");
}

TEST(Completion, BashCompletesTheShellOfCompletion) {
  EXPECT_EQ(BashComplete(Scratch("bash-shell"), "gpufit completion \"\""), "bash\nzsh\nfish\n");
  EXPECT_EQ(BashComplete(Scratch("bash-shell-z"), "gpufit completion z"), "zsh\n");
}

TEST(Completion, BashCompletesAFileNameAfterConfig) {
  const fs::path dir = Scratch("bash-config");
  Write(dir / "gpufit.toml", "[plan]\n");
  EXPECT_EQ(BashComplete(dir, "gpufit --config " + (dir / "gpufit.t").string()), (dir / "gpufit.toml").string() + "\n");
  EXPECT_EQ(BashComplete(dir, "gpufit plan --config " + (dir / "gpufit.t").string()),
            (dir / "gpufit.toml").string() + "\n");
}

TEST(Completion, ZshAndFishCompleteCatalogIdsShellsAndConfigFiles) {
  int checked = 0;
  const fs::path dir = Scratch("completion-values");
  Write(dir / "gpufit.toml", "[plan]\n");
  const std::string toml = (dir / "gpufit.t").string();
  if (Installed("zsh")) {
    // compadd and _files stubbed: what the function would offer (zsh filters by the prefix).
    Write(dir / "gpufit.zsh", Gpufit("completion zsh", dir).out);
    const CliRun r =
        Sh("zsh -c 'compadd() { [[ $1 == -- ]] && shift; print -r -- \"$@\"; }; _files() { print FILES; }; "
           "source " +
               (dir / "gpufit.zsh").string() +
               "; for line in \"gpufit plan --gpu h\" \"gpufit completion b\" \"gpufit --config x\"; do "
               "words=(${=line}); CURRENT=${#words}; _gpufit; done'",
           dir);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "t4 l4 a10g l40s a100-40gb a100-80gb h100-80gb h100-94gb-nvl h200-141gb\nbash zsh fish\nFILES\n");
    ++checked;
  }
  if (Installed("fish")) {
    Write(dir / "gpufit.fish", Gpufit("completion fish", dir).out);
    const CliRun r = Sh("fish -c 'source " + (dir / "gpufit.fish").string() +
                            "; complete -C \"gpufit plan --gpu h\"; complete -C \"gpufit completion \"; "
                            "complete -C \"gpufit --config " +
                            toml + "\"'",
                        dir);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, ::testing::StartsWith("h100-80gb\t"));
    EXPECT_THAT(r.out, HasSubstr("\nh200-141gb\t"));
    EXPECT_THAT(r.out, HasSubstr("\nbash\nfish\nzsh\n"));
    EXPECT_THAT(r.out, ::testing::EndsWith((dir / "gpufit.toml").string() + "\n"));
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "neither zsh nor fish is installed";
}

TEST(Completion, ZshAndFishScriptsParse) {
  int checked = 0;
  for (const std::string shell : {"zsh", "fish"}) {
    SCOPED_TRACE(shell);
    const fs::path dir = Scratch("completion-" + shell);
    const CliRun script = Gpufit("completion " + shell, dir);
    ASSERT_EQ(script.exit_code, 0) << script.err;
    EXPECT_THAT(script.out, HasSubstr("telemetry"));
    EXPECT_THAT(script.out, HasSubstr("check"));
    if (!Installed(shell)) continue;
    Write(dir / "script", script.out);
    const CliRun r = Sh(shell + " -n " + (dir / "script").string(), dir);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "neither zsh nor fish is installed (only the scripts' text was checked)";
}

TEST(Completion, UnknownShellIsAUsageError) {
  const fs::path dir = Scratch("completion-tcsh");
  const CliRun r = Gpufit("completion tcsh", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("tcsh"));
}

// --- --config -----------------------------------------------------------------------------

TEST(ConfigFile, PlanSectionGivesTheSamePlanAsTheFlags) {
  const fs::path dir = Scratch("config-plan");
  const std::string telemetry = Fixture("telemetry.csv");
  const CliRun flags = Gpufit("plan --telemetry " + telemetry + " --gpu h100-80gb --headroom 0.2 --format json", dir);
  ASSERT_EQ(flags.exit_code, 0) << flags.err;
  Write(dir / "gpufit.toml", "# gpufit flags\n[plan]\ntelemetry = \"" + telemetry +
                                 "\"\ngpu = \"h100-80gb\"\nheadroom = 0.2\nformat = \"json\"\n");
  const CliRun config = Gpufit("plan --config " + (dir / "gpufit.toml").string(), dir);
  ASSERT_EQ(config.exit_code, 0) << config.err;
  EXPECT_EQ(nlohmann::json::parse(config.out), nlohmann::json::parse(flags.out));
  EXPECT_EQ(nlohmann::json::parse(config.out)["target_gpu"]["id"], "h100-80gb");
  // Before the command too, and the command line wins over the file.
  const CliRun before = Gpufit("--config " + (dir / "gpufit.toml").string() + " plan --format text", dir);
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_THAT(before.out, HasSubstr("# gpufit plan"));
}

TEST(ConfigFile, SectionsOfOtherCommandsAreReadButNotRun) {
  // [simulate] uses a deprecated name: no warning, since simulate does not run; -vv logs what
  // plan was given.
  const fs::path dir = Scratch("config-sections");
  const fs::path toml = dir / "gpufit.toml";
  Write(toml, "verbose = 2\n[plan]\ntelemetry = \"" + Fixture("telemetry.csv") +
                  "\"\ngpu = \"h100-80gb\"\n[simulate]\nnodes = \"n.csv\"\n[training.drain]\ndrain-nodes = \"a1\"\n");
  const CliRun r = Gpufit("--config " + toml.string() + " plan -f json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("deprecated")));
  EXPECT_THAT(r.err, HasSubstr("] --gpu = h100-80gb\n"));
  EXPECT_THAT(r.err, HasSubstr("] --format = json\n"));
  EXPECT_EQ(nlohmann::json::parse(r.out)["target_gpu"]["id"], "h100-80gb");
}

TEST(ConfigFile, UnknownKeyIsExit2NamingTheFileLineAndKey) {
  const fs::path dir = Scratch("config-unknown");
  const fs::path toml = dir / "gpufit.toml";
  Write(toml, "[plan]\ngpu = \"h100-80gb\"\ntelemtry = \"x.csv\"\n");
  const CliRun r = Gpufit("plan --config " + toml.string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpufit: error: --config " + toml.string() +
                       ":3: unknown key 'telemtry' in [plan] (did you mean telemetry?)\n");
  EXPECT_EQ(r.out, "");
}

TEST(ConfigFile, BadFilesAreExit2WithTheirLine) {
  const fs::path dir = Scratch("config-bad");
  const fs::path toml = dir / "gpufit.toml";
  struct Case {
    std::string name, text, message;
  };
  const Case cases[] = {
      {"no equals sign", "[plan]\ngpu h100-80gb\n", ":2: expected key = value or [COMMAND], got 'gpu h100-80gb'"},
      {"unquoted text", "[plan]\ngpu = h100-80gb\n", ":2: gpu = 'h100-80gb': not a TOML value"},
      // Issue 51: an 800 KB line is quoted by its first 80 characters, not echoed whole.
      {"a long line", "[plan]\ngpu = " + std::string(800'000, 'x') + "\n",
       ":2: gpu = '" + std::string(80, 'x') + "'... (800000 bytes): not a TOML value"},
      {"unknown section", "[pln]\ngpu = \"h100-80gb\"\n", ":1: [pln] is not a gpufit command (did you mean [plan]?)"},
      {"key twice", "[plan]\ngpu = \"a\"\ngpu = \"b\"\n", ":3: gpu is set twice (first on line 2)"},
      {"the help flag", "[plan]\nhelp = true\n", ":2: help cannot be set in a config file"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Write(toml, c.text);
    const CliRun r = Gpufit("plan --config " + toml.string(), dir);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("gpufit: error: --config " + toml.string() + c.message));
    EXPECT_LT(r.err.size(), 1000u);
  }
}

TEST(ConfigFile, BadValuesAreExit2WithTheirLine) {
  const fs::path dir = Scratch("config-bad-value");
  const fs::path toml = dir / "gpufit.toml";
  struct Case {
    std::string name, text, message;
  };
  const Case cases[] = {
      {"not a number", "[plan]\ngpu = \"h100-80gb\"\nheadroom = \"abc\"\n", ":3: Could not convert: --headroom = abc"},
      {"not a choice", "[plan]\nformat = \"jsn\"\n",
       ":2: --format: jsn not in {text,md,json,yaml,csv,html,table,wide} (did you mean json?)"},
      {"a flag's count", "verbose = \"x\"\n[plan]\n", ":1: Could not convert: --verbose = x"},
      {"a list for one number", "[plan]\nheadroom = [0.1, 0.2]\n", ":2: headroom takes one value, not a list"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Write(toml, c.text);
    const CliRun r = Gpufit("plan --config " + toml.string(), dir);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "gpufit: error: --config " + toml.string() + c.message + "\n");
  }
}

TEST(ConfigFile, ABadValueOnTheCommandLineIsNotTheFiles) {
  const fs::path dir = Scratch("config-bad-flag");
  const fs::path toml = dir / "gpufit.toml";
  Write(toml, "[plan]\nheadroom = 0.2\n");
  const CliRun r = Gpufit("plan --config " + toml.string() + " --headroom abc", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpufit: error: Could not convert: --headroom = abc (see gpufit --help)\n");
}

TEST(ConfigFile, ADirectoryIsExit2SayingSo) {
  const fs::path dir = Scratch("config-directory");
  const CliRun r = Gpufit("--config " + dir.string() + " plan", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "gpufit: error: --config " + dir.string() + ": is a directory (give the TOML file, e.g. gpufit.toml)\n");
}

TEST(ConfigFile, AnArrayForATextFlagIsItsCommaSeparatedList) {
  const fs::path dir = Scratch("config-array");
  const fs::path toml = dir / "gpufit.toml";
  const CliRun flags = Gpufit("mig check --gpu h100-80gb --profiles 3g.40gb,2g.20gb -f json", dir);
  ASSERT_EQ(flags.exit_code, 0) << flags.err;
  Write(toml, "[mig.check]\ngpu = \"h100-80gb\"\nprofiles = [\"3g.40gb\", \"2g.20gb\"]\nformat = \"json\"\n");
  const CliRun array = Gpufit("mig check --config " + toml.string(), dir);
  ASSERT_EQ(array.exit_code, 0) << array.err;
  EXPECT_EQ(nlohmann::json::parse(array.out), nlohmann::json::parse(flags.out));
  // A flag with a ',' delimiter takes the elements as its values.
  Write(toml, "[backtest]\nrisks = [0.01, 0.2]\n");
  const CliRun risks = Gpufit("-vv backtest --config " + toml.string() + " --telemetry " + Fixture("telemetry.csv") +
                                  " --gpu h100-80gb -f json",
                              dir);
  EXPECT_THAT(risks.err, HasSubstr("] --risks = 0.01,0.2\n"));
}

TEST(ConfigFile, MissingFileIsExit2) {
  const fs::path dir = Scratch("config-missing");
  const CliRun r = Gpufit("plan --config " + (dir / "none.toml").string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpufit: error: --config " + (dir / "none.toml").string() + ": no such file\n");
}

// --- short flags and -v -------------------------------------------------------------------

TEST(ShortFlags, OIsTheFormatAsKubectlsAndOutTheFolder) {
  const fs::path dir = Scratch("short");
  const CliRun r =
      Gpufit("analyze --telemetry " + Fixture("telemetry.csv") + " -o json --out " + (dir / "out").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse(Slurp(dir / "out" / "analyze.json")));
  const CliRun yaml = Gpufit("analyze --telemetry " + Fixture("telemetry.csv") + " -o yaml", dir);
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  EXPECT_THAT(yaml.out, HasSubstr("pods:"));
  EXPECT_FALSE(fs::exists(dir / "yaml"));
  // A format the command lacks is an error, not a folder named after it.
  const CliRun wide = Gpufit("analyze --telemetry " + Fixture("telemetry.csv") + " -o wide", dir);
  EXPECT_EQ(wide.exit_code, 2);
  EXPECT_THAT(wide.err, HasSubstr("-o: wide is not a format of gpufit analyze"));
  EXPECT_FALSE(fs::exists(dir / "wide"));
}

TEST(ShortFlags, MigPlanTakesOAsTheFormatToo) {
  // mig plan registers its own formats (text, json): -o json is JSON on stdout, not a folder.
  const fs::path dir = Scratch("short-mig");
  const CliRun r = Gpufit("mig plan --telemetry " + Fixture("telemetry.csv") + " --gpu h100-80gb -o json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out).contains("assignments")) << r.out;
  EXPECT_FALSE(fs::exists(dir / "json"));
  const CliRun old =
      Gpufit("mig plan --telemetry " + Fixture("telemetry.csv") + " --gpu h100-80gb -o " + (dir / "out").string(), dir);
  ASSERT_EQ(old.exit_code, 0) << old.err;
  EXPECT_THAT(old.err, HasSubstr("use --out " + (dir / "out").string()));
  EXPECT_TRUE(fs::exists(dir / "out" / "mig-plan.json"));
}

TEST(ShortFlags, TheOldODirStillWritesTheFolderWithAWarning) {
  const fs::path dir = Scratch("short-old");
  const CliRun r =
      Gpufit("analyze --telemetry " + Fixture("telemetry.csv") + " -f json -o " + (dir / "out").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("gpufit: warning: -o DIR is deprecated"));
  EXPECT_THAT(r.err, HasSubstr("use --out " + (dir / "out").string()));
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse(Slurp(dir / "out" / "analyze.json")));
}

TEST(Verbose, LogsThePhasesOfAPlan) {
  const fs::path dir = Scratch("verbose");
  const CliRun r = Gpufit("plan -v --telemetry " + Fixture("telemetry.csv") + " --gpu h100-80gb", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* phase : {"read", "plan", "sections", "write"}) {
    SCOPED_TRACE(phase);
    EXPECT_TRUE(std::regex_search(
        r.err, std::regex(std::string("gpufit: \\[[0-9:.]+\\] phase ") + phase + ": [0-9]+\\.[0-9]{3} s\n")))
        << r.err;
  }
  EXPECT_THAT(r.err, HasSubstr("] total: "));
}

TEST(Verbose, LogsEachPrometheusRequest) {
  // Nothing listens on port 1: the request fails at once, and -v names it with its time.
  const fs::path dir = Scratch("verbose-prometheus");
  const CliRun r = Gpufit("analyze -v --prometheus http://127.0.0.1:1 --prometheus-retries 0 --since 1h", dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("gpufit: \\[[0-9:.]+\\] prometheus http://127\\.0\\.0\\.1:1/api/v1/"
                                                  "(query_range|series) .*: failed after [0-9.]+ s: ")))
      << r.err;
}

TEST(Verbose, LogsEachPrometheusRequestWithItsSizeAndTime) {
  // A server that knows no series: every request is answered, with nothing in it.
  httplib::Server server;
  server.Get("/api/v1/series", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"success","data":[]})", "application/json");
  });
  server.Get("/api/v1/query_range", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"success","data":{"resultType":"matrix","result":[]}})", "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  const fs::path dir = Scratch("verbose-prometheus-ok");
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const CliRun r = Gpufit("analyze -v --prometheus " + url + " --since 1h", dir);
  const CliRun plain = Gpufit("analyze --prometheus " + url + " --since 1h", Scratch("verbose-prometheus-plain"));
  server.stop();
  serving.join();
  const std::regex request("gpufit: \\[[0-9:.]+\\] prometheus " + std::regex_replace(url, std::regex("\\."), "\\.") +
                           "/api/v1/(query_range|series) \\(.*\\): [0-9]+ bytes in [0-9]+\\.[0-9]{3} s\n");
  EXPECT_TRUE(std::regex_search(r.err, request)) << r.err;
  // Without -v: the same run, no request lines (only its own outcome).
  EXPECT_FALSE(std::regex_search(plain.err, request)) << plain.err;
  EXPECT_EQ(plain.exit_code, r.exit_code) << plain.err;
}

TEST(Verbose, TwiceLogsTheCountOfV) {
  const fs::path dir = Scratch("verbose-count");
  const CliRun r = Gpufit("plan -vv --telemetry " + Fixture("telemetry.csv") + " --gpu h100-80gb", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("] --verbose = 2\n"));
  EXPECT_THAT(r.err, Not(HasSubstr("true,true")));
}

TEST(Verbose, QuietLeavesOutWhereTheReportWent) {
  const fs::path dir = Scratch("quiet-report");
  const std::string plan = "plan --telemetry " + Fixture("telemetry.csv") + " --gpu h100-80gb --report ";
  const CliRun loud = Gpufit(plan + (dir / "loud.html").string(), dir);
  ASSERT_EQ(loud.exit_code, 0) << loud.err;
  EXPECT_EQ(loud.err, "gpufit: report written to " + (dir / "loud.html").string() + "\n");
  const CliRun quiet = Gpufit("-q " + plan + (dir / "quiet.html").string(), dir);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  EXPECT_TRUE(fs::exists(dir / "quiet.html"));
  const CliRun simulate =
      Gpufit("simulate -q --openb-nodes " + Fixture("openb-nodes.csv") + " --openb-pods " + Fixture("openb-pods.csv") +
                 " --seeds 1 --policy fgd --report " + (dir / "simulate.html").string(),
             dir);
  ASSERT_EQ(simulate.exit_code, 0) << simulate.err;
  EXPECT_EQ(simulate.err, "");
  EXPECT_TRUE(fs::exists(dir / "simulate.html"));
  // Warnings stay.
  const CliRun warned =
      Gpufit("simulate -q --nodes " + Fixture("openb-nodes.csv") + " --openb-pods " + Fixture("openb-pods.csv") +
                 " --seeds 1 --policy fgd --report " + (dir / "simulate.html").string(),
             dir);
  ASSERT_EQ(warned.exit_code, 0) << warned.err;
  EXPECT_EQ(warned.err, "gpufit: warning: --nodes is deprecated, use --openb-nodes\n");
}

TEST(Verbose, NothingIsLoggedWithoutIt) {
  const fs::path dir = Scratch("not-verbose");
  const CliRun r = Gpufit("plan --telemetry " + Fixture("telemetry.csv") + " --gpu h100-80gb", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

// --- progress -----------------------------------------------------------------------------

// `gpufit ARGS` under a pseudo-terminal (util-linux `script`), stdout to a file: what the
// terminal showed is stderr alone.
CliRun OnATerminal(const std::string& args, const fs::path& dir) {
  const std::string inner =
      std::string(gpufit::test_paths::GpufitBin()) + " " + args + " > " + (dir / "plan.out").string();
  return Sh("script -qec \"" + inner + "\" " + (dir / "terminal").string() + " > /dev/null", dir);
}

const std::regex kProgressLine("gpufit: (plan|read|backtest|sections|write) \\.\\.\\. [0-9]+ s");

TEST(Progress, ShownOnATerminalForWorkOverTwoSeconds) {
  if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
  if (!Installed("script")) GTEST_SKIP() << "no script(1)";
  const fs::path dir = Scratch("progress-tty");
  const CliRun r = OnATerminal("plan --telemetry " + GenTd26() + " --gpu a100-80gb --format json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string terminal = Slurp(dir / "terminal");
  EXPECT_TRUE(std::regex_search(terminal, kProgressLine)) << terminal;
  EXPECT_THAT(terminal, HasSubstr("\r\033[K"));  // redrawn in place, and erased at the end
  EXPECT_EQ(nlohmann::json::parse(Slurp(dir / "plan.out"))["pods"].size(), 143u);
}

TEST(Progress, QuietLeavesItOutOnATerminal) {
  if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
  if (!Installed("script")) GTEST_SKIP() << "no script(1)";
  const fs::path dir = Scratch("progress-quiet");
  const CliRun r = OnATerminal("plan -q --telemetry " + GenTd26() + " --gpu a100-80gb --format json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(Slurp(dir / "terminal"), Not(HasSubstr("gpufit: ")));
}

TEST(Progress, NothingButErrorsWhenStderrIsNotATerminal) {
  if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("progress-pipe");
  const CliRun ok = Gpufit("plan --telemetry " + GenTd26() + " --gpu a100-80gb --format json", dir);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err, "");
  const CliRun bad = Gpufit("plan --telemetry " + GenTd26() + " --gpu no-such-gpu", dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, ::testing::StartsWith("gpufit: error: "));
  EXPECT_FALSE(std::regex_search(bad.err, kProgressLine)) << bad.err;
}

// --- one name per meaning -----------------------------------------------------------------

TEST(DeprecatedNames, StillWorkAndWarn) {
  const fs::path dir = Scratch("deprecated");
  const std::string inputs = " --seeds 1 --policy fgd --format json";
  const CliRun now = Gpufit(
      "simulate --openb-nodes " + Fixture("openb-nodes.csv") + " --openb-pods " + Fixture("openb-pods.csv") + inputs,
      dir);
  ASSERT_EQ(now.exit_code, 0) << now.err;
  EXPECT_EQ(now.err, "");
  const CliRun old =
      Gpufit("simulate --nodes " + Fixture("openb-nodes.csv") + " --pods " + Fixture("openb-pods.csv") + inputs, dir);
  ASSERT_EQ(old.exit_code, 0) << old.err;
  EXPECT_EQ(old.err,
            "gpufit: warning: --nodes is deprecated, use --openb-nodes\n"
            "gpufit: warning: --pods is deprecated, use --openb-pods\n");
  EXPECT_EQ(nlohmann::json::parse(old.out), nlohmann::json::parse(now.out));
}

TEST(DeprecatedNames, TheNewNamesChecksApply) {
  const fs::path dir = Scratch("deprecated-check");
  const CliRun r = Gpufit("demo --pods 0", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "gpufit: warning: --pods is deprecated, use --pod-count\n"
            "gpufit: error: --pod-count: Value 0 not in range 1 to 100000 (see gpufit --help)\n");
}

// --- did you mean -------------------------------------------------------------------------

TEST(DidYouMean, SuggestsTheClosestFlagOfTheCommand) {
  const fs::path dir = Scratch("did-you-mean");
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {"plan --telemtry x.csv --gpu h100-80gb", "unknown option --telemtry (did you mean --telemetry?)"},
      {"mig check --gpu h100-80gb --profile 7g.80gb", "unknown option --profile (did you mean --profiles?)"},
      {"simulate --openb-node a.csv --openb-pods b.csv", "unknown option --openb-node (did you mean --openb-nodes?)"},
      {"plan --gpu=h100-80gb --telemetri=x.csv", "unknown option --telemetri (did you mean --telemetry?)"},
      {"plan --zzzzzzzzzz", "unknown option --zzzzzzzzzz (see gpufit plan --help)"},
      {"mig chek --gpu h100-80gb",
       "unknown command 'mig chek' (did you mean 'mig check'?; commands: check, free, plan, reconfigure)"},
      {"mig zzzzz", "unknown command 'mig zzzzz' (commands: check, free, plan, reconfigure)"},
      {"pln --telemetry x.csv",
       "unknown command 'pln' (did you mean 'plan'?; commands: analyze, plan, demo, backtest, replay, simulate, mig, "
       "serve, controller, training, inference, apply, completion)"},
      {"zzzzz",
       "unknown command 'zzzzz' (commands: analyze, plan, demo, backtest, replay, simulate, mig, serve, "
       "controller, training, inference, apply, completion)"},
      // A misspelt choice: CLI11's message and the closest choice, where one is close.
      {"plan -f jsn --telemetry x.csv",
       "--format: jsn not in {text,md,json,yaml,csv,html,table,wide} (did you mean json?)"},
      {"plan --sharing hamii --telemetry x.csv",
       "--sharing: hamii not in {time-slicing,mig,hami,kai,dra-mps} (did you mean hami?)"},
      {"analyze -f html --telemetry x.csv", "--format: html not in {text,md,json,yaml} (see gpufit --help)"},
      // The program's options work after a command; a parent command's do not.
      {"inference backtest --requests r.csv --services s.yaml",
       "--services: an option of 'inference', not of 'inference backtest' (see gpufit --help)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const CliRun r = Gpufit(c.args, dir);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "gpufit: error: " + c.message + "\n");
    EXPECT_EQ(r.out, "");
  }
}

// --- the terminal table (issue 41) ---------------------------------------------------------

// Display columns of a UTF-8 line: code points, colour escapes not counted. Written here, not
// taken from report/terminal_table.h, so that the test does not trust the code it checks.
std::size_t Columns(const std::string& line) {
  const std::string plain = std::regex_replace(line, std::regex("\x1b\\[[0-9;]*m"), "");
  std::size_t n = 0;
  for (unsigned char c : plain)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// The cells of a table row: its text split at runs of two or more spaces.
std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  const std::regex gap(" {2,}");
  for (std::sregex_token_iterator it(line.begin(), line.end(), gap, -1), end; it != end; ++it) cells.push_back(*it);
  return cells;
}

// "$4,305" from 4305.4.
std::string DollarsOf(double usd) {
  std::string digits = std::to_string(std::llround(std::fabs(usd))), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (std::llround(usd) < 0 ? "-$" : "$") + out;
}

// GenTD26: the table is at most 120 columns and each row says what the plan JSON says: the
// fleet's GPU for the pod, its memory cap, the pods it shares with, the dollars saved (its
// price today less its share of its GPU's) and the fleet's verdict.
TEST(TerminalTable, FitsIn120ColumnsAndMatchesThePlanJsonOnGenTd26) {
  if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("table-gentd26");
  const std::string base = "plan --telemetry " + GenTd26() + " --gpu h100-80gb --search-budget 0 -q";
  const CliRun json_run = Gpufit(base + " -o json", dir);
  ASSERT_EQ(json_run.exit_code, 0) << json_run.err;
  const nlohmann::json plan = nlohmann::json::parse(json_run.out);
  const CliRun wide = Gpufit(base + " -o wide", dir);
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  const CliRun table = Gpufit(base + " -o table", dir);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  for (const CliRun* r : {&wide, &table}) {
    EXPECT_THAT(r->out, Not(HasSubstr("\x1b[")));  // no colour off a terminal
    for (const std::string& line : SplitLines(r->out)) EXPECT_LE(Columns(line), 120u) << line;
  }
  EXPECT_THAT(table.out, HasSubstr("more pods (-o wide"));
  EXPECT_THAT(SplitLines(table.out).back(), HasSubstr("gpufit backtest"));

  ASSERT_TRUE(plan["fleet"]["recommended"].get<bool>());
  const std::string verdict = plan["summary"]["status"]["fleet"]["status"];
  std::map<std::string, const nlohmann::json*> gpu_of;
  for (const nlohmann::json& g : plan["fleet"]["shared_gpus"])
    for (const nlohmann::json& p : g["pods"]) gpu_of[p.get<std::string>()] = &g;
  std::map<std::string, const nlohmann::json*> pod_of;
  for (const nlohmann::json& p : plan["pods"]) pod_of[p["pod"].get<std::string>()] = &p;
  std::size_t rows = 0;
  for (const std::string& line : SplitLines(wide.out)) {
    const std::vector<std::string> c = Cells(line);
    if (c.empty() || pod_of.count(c[0]) == 0) continue;
    SCOPED_TRACE(line);
    ++rows;
    ASSERT_EQ(c.size(), 6u);
    const nlohmann::json& pod = *pod_of[c[0]];
    ASSERT_EQ(gpu_of.count(c[0]), 1u);
    const nlohmann::json& gpu = *gpu_of[c[0]];
    const std::string now = pod["current_gpu"]["id"], model = gpu["model"];
    EXPECT_EQ(c[1], now == model ? now + " (same)" : now + " → " + model);
    EXPECT_EQ(c[2], fmt::format("{:.1f} GiB", pod["right_sizing"]["required_mib"].get<double>() / 1024));
    const std::size_t others = gpu["pods"].size() - 1;
    if (others == 0) {
      EXPECT_EQ(c[3], "-");
    } else {
      std::string first;
      for (const nlohmann::json& p : gpu["pods"])
        if (p != c[0]) {
          first = p;
          break;
        }
      EXPECT_EQ(c[3].substr(0, 6), first.substr(0, 6));  // its start, whether shortened or not
      if (others > 1) {
        EXPECT_THAT(c[3], ::testing::EndsWith(" +" + std::to_string(others - 1)));
      }
    }
    const double saved = pod["right_sizing"]["usd_per_month_current"].get<double>() -
                         gpu["usd_per_month"].get<double>() / static_cast<double>(gpu["pods"].size());
    EXPECT_EQ(c[4], DollarsOf(saved));
    EXPECT_EQ(c[5], verdict);
  }
  EXPECT_EQ(rows, plan["pods"].size());  // -o wide: every pod
  EXPECT_THAT(wide.out, HasSubstr("    why: "));
}

// On a terminal (script(1) gives gpufit one) the default is the table, in colour unless
// NO_COLOR; piped, the default stays the Markdown.
TEST(TerminalTable, IsTheDefaultOnATerminalInColourUnlessNoColor) {
  if (!Installed("script")) GTEST_SKIP() << "script(1) is not installed";
  const fs::path dir = Scratch("table-tty");
  const std::string plan = std::string(gpufit::test_paths::GpufitBin()) + " plan -q --telemetry " +
                           Fixture("telemetry.csv") + " --gpu h100-80gb";
  const CliRun tty = Sh("script -qec \"" + plan + "\" /dev/null", dir);
  ASSERT_EQ(tty.exit_code, 0) << tty.out << tty.err;
  EXPECT_THAT(tty.out, HasSubstr("WORKLOAD"));
  EXPECT_THAT(tty.out, HasSubstr("\x1b["));
  const CliRun no_colour = Sh("NO_COLOR=1 script -qec \"" + plan + "\" /dev/null", dir);
  ASSERT_EQ(no_colour.exit_code, 0) << no_colour.out << no_colour.err;
  EXPECT_THAT(no_colour.out, HasSubstr("WORKLOAD"));
  EXPECT_THAT(no_colour.out, Not(HasSubstr("\x1b[")));
  const CliRun md = Sh("script -qec \"" + plan + " -f md\" /dev/null", dir);
  EXPECT_THAT(md.out, Not(HasSubstr("WORKLOAD")));
  const CliRun piped = Sh(plan, dir);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_THAT(piped.out, Not(HasSubstr("WORKLOAD")));
  EXPECT_THAT(piped.out, ::testing::StartsWith("#"));
}

// --- kubectl plugin --------------------------------------------------------------------------

// The real kubectl finds gpufit as the plugin kubectl-gpufit: `-o json` is the format (JSON
// on stdout, no folder named json) and the help names `kubectl gpufit`.
TEST(KubectlPlugin, OJsonPrintsJsonAndMakesNoFolder) {
  const fs::path dir = Scratch("kubectl-plugin");
  auto plane = gpufit::testing::KubeControlPlane::Start((dir / "plane").string());
  ASSERT_TRUE(plane) << plane.error().message;
  const fs::path bin = dir / "bin";
  fs::create_directories(bin);
  fs::create_symlink(gpufit::test_paths::GpufitBin(), bin / "kubectl-gpufit");
  const fs::path work = dir / "work";
  fs::create_directories(work);
  const std::string path = "PATH=" + bin.string() + ":" + (*plane)->bin() + ":$PATH";
  const CliRun r = Sh("cd " + work.string() + " && " + path + " kubectl gpufit plan -q --telemetry " +
                          Fixture("telemetry.csv") + " --gpu h100-80gb -o json",
                      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json plan = nlohmann::json::parse(r.out);
  EXPECT_TRUE(plan.contains("pods"));
  EXPECT_FALSE(fs::exists(work / "json"));
  EXPECT_TRUE(fs::is_empty(work));
  const CliRun help = Sh(path + " kubectl gpufit plan --help", dir);
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_THAT(help.out, HasSubstr("Usage: kubectl gpufit plan"));
  const CliRun bad = Sh(path + " kubectl gpufit pln", dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("kubectl gpufit: error: unknown command 'pln' (did you mean 'plan'?"));
}

// --- unknown commands and the grouped help -----------------------------------------------------

TEST(FirstRun, NoClusterFoundNamesWhereItLooked) {
  // `gpufit plan` with no flag looks for a kubeconfig as kubectl does; finding none, it says where
  // it looked: the file $KUBECONFIG names, else ~/.kube/config under $HOME.
  const fs::path dir = Scratch("first-run-no-cluster");
  const char* saved_kubeconfig = std::getenv("KUBECONFIG");
  const std::string kubeconfig = saved_kubeconfig ? saved_kubeconfig : "";
  ASSERT_EQ(setenv("KUBECONFIG", (dir / "missing").c_str(), 1), 0);
  const CliRun named = Gpufit("plan", dir);
  const char* saved_home = std::getenv("HOME");
  const std::string home = saved_home ? saved_home : "";
  ASSERT_EQ(setenv("KUBECONFIG", "", 1), 0);
  ASSERT_EQ(setenv("HOME", dir.c_str(), 1), 0);
  const CliRun none = Gpufit("plan", dir);
  saved_kubeconfig ? setenv("KUBECONFIG", kubeconfig.c_str(), 1) : unsetenv("KUBECONFIG");
  saved_home ? setenv("HOME", home.c_str(), 1) : unsetenv("HOME");
  EXPECT_EQ(named.exit_code, 2);
  EXPECT_THAT(named.err, HasSubstr("(or --kubeconfig: no kubeconfig: tried " + (dir / "missing").string()));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("(or --kubeconfig: no kubeconfig: tried " + (dir / ".kube" / "config").string()));
}

TEST(UnknownCommand, ExitsTwoEvenWithHelp) {
  const fs::path dir = Scratch("unknown-command");
  const CliRun r = Gpufit("install --help", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "gpufit: error: unknown command 'install' (commands: analyze, plan, demo, backtest, replay, simulate, mig, "
            "serve, controller, training, inference, apply, completion)\n");
  const CliRun close = Gpufit("-v dmeo --help", dir);
  EXPECT_EQ(close.exit_code, 2);
  EXPECT_THAT(close.err, HasSubstr("(did you mean 'demo'?; commands: analyze, plan, demo,"));
  // A command's value is not a command: completion's shell, --config's file.
  EXPECT_EQ(Gpufit("completion bash", dir).exit_code, 0);
}

// demo --out DIR: its default report lands in DIR beside plan.json, not in the working folder.
TEST(DemoOut, PutsItsReportInTheFolder) {
  const fs::path dir = Scratch("demo-out");
  const CliRun r = Gpufit("demo -q --pod-count 4 --out " + (dir / "o").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "o" / "plan.json"));
  EXPECT_TRUE(fs::exists(dir / "o" / "gpufit-demo.html"));
  EXPECT_FALSE(fs::exists(dir / "gpufit-demo.html"));
  EXPECT_FALSE(fs::exists(fs::current_path() / "gpufit-demo.html"));
}

TEST(Help, PlanDemoAndBacktestAreGroupedWithExamples) {
  const fs::path dir = Scratch("help-groups");
  for (const std::string command : {"plan", "demo", "backtest"}) {
    SCOPED_TRACE(command);
    const CliRun r = Gpufit(command + " --help", dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::size_t> at;
    for (const char* group :
         {"\nInput:\n", "\nTarget:\n", "\nSafety:\n", "\nOutput:\n", "\nAdvanced:\n", "\nEXAMPLES:\n"}) {
      at.push_back(r.out.find(group));
      EXPECT_NE(at.back(), std::string::npos) << group;
    }
    EXPECT_TRUE(std::is_sorted(at.begin(), at.end()));
    EXPECT_THAT(r.out, HasSubstr("\n  gpufit " + command + " "));
    // plan's first example is the first run, with no flag.
    if (command == "plan") {
      EXPECT_THAT(r.out, HasSubstr("\nEXAMPLES:\n  gpufit plan                      the first run"));
    }
    // Every option is in one of the five groups, --help alone under Options.
    std::string group;
    std::size_t options = 0;
    for (const std::string& line : SplitLines(r.out)) {
      if (!line.empty() && line.back() == ':' && line[0] != ' ') group = line.substr(0, line.size() - 1);
      if (!line.starts_with("  -")) continue;
      ++options;
      SCOPED_TRACE(line);
      if (line.starts_with("  -h,--help")) {
        EXPECT_EQ(group, "Options");
      } else {
        EXPECT_THAT(group, ::testing::AnyOf("Input", "Target", "Safety", "Output", "Advanced"));
      }
    }
    EXPECT_GT(options, 15u);
  }
}

}  // namespace
