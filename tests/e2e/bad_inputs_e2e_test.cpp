// The bad-input catalog (docs/bad-inputs.md) is this test's table: every row's command runs
// against the built gpufit, in tests/e2e/bad_inputs/ (the small input files the rows name),
// and must exit with the row's code, print the row's message as its whole stderr, print
// nothing on stdout, and write nothing. The docs and the behaviour cannot drift apart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli_run.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using gpufit::e2e::Scratch;
using gpufit::e2e::Slurp;

struct Case {
  int line = 0;  // in docs/bad-inputs.md
  std::string name, command, message;
  int exit_code = -1;
};

// `text` with every `from` replaced by `to`.
std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// The cell's code span, `x` -> x; "\|" is a literal bar.
std::string Code(std::string cell) {
  while (!cell.empty() && cell.front() == ' ') cell.erase(0, 1);
  while (!cell.empty() && cell.back() == ' ') cell.pop_back();
  if (cell.size() >= 2 && cell.front() == '`' && cell.back() == '`') cell = cell.substr(1, cell.size() - 2);
  return ReplaceAll(cell, "\\|", "|");
}

// The rows of the table between the markers "<!-- cases:begin -->" and "<!-- cases:end -->":
// | Case | Command | Exit | Message |, the header and its rule skipped.
std::vector<Case> ReadCatalog(const fs::path& doc) {
  std::ifstream in(doc);
  std::vector<Case> cases;
  bool inside = false;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line == "<!-- cases:begin -->") inside = true;
    if (line == "<!-- cases:end -->") inside = false;
    if (!inside || !line.starts_with("| ") || line.starts_with("| Case ") || line.starts_with("|--")) continue;
    std::vector<std::string> cells;
    std::string cell;
    for (std::size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
        cell += "\\|";
        ++i;
      } else if (line[i] == '|') {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    if (cells.size() != 4) {
      ADD_FAILURE() << doc << ":" << n << ": expected 4 cells, got " << cells.size();
      continue;
    }
    cases.push_back({.line = n,
                     .name = Code(cells[0]),
                     .command = Code(cells[1]),
                     .message = Code(cells[3]),
                     .exit_code = std::stoi(Code(cells[2]))});
  }
  return cases;
}

std::set<std::string> Listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) names.insert(e.path().lexically_relative(dir).string());
  return names;
}

TEST(BadInputCatalog, EveryCaseExitsAndSaysWhatTheDocsSay) {
  const std::string doc = gpufit::test_paths::SourcePath("docs/bad-inputs.md");
  const std::vector<Case> cases = ReadCatalog(doc);
  ASSERT_GE(cases.size(), 30u) << "the catalog in " << doc;
  const fs::path inputs = gpufit::test_paths::SourcePath("tests/e2e/bad_inputs");
  const std::set<std::string> inputs_before = Listing(inputs);
  const fs::path scratch = Scratch("bad-inputs");
  std::set<std::string> names;
  for (const Case& c : cases) {
    SCOPED_TRACE(doc + ":" + std::to_string(c.line) + ": " + c.name);
    EXPECT_TRUE(names.insert(c.name).second) << "two cases named alike";
    ASSERT_TRUE(c.command.starts_with("gpufit")) << c.command;
    // $TMP: a fresh folder holding one regular file, a-file (for "a file where a folder
    // is expected"); nothing else may appear in it.
    const fs::path tmp = scratch / "tmp";
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    std::ofstream(tmp / "a-file") << "x";
    const std::string command = "cd " + inputs.string() + " && " + gpufit::test_paths::GpufitBin() +
                                ReplaceAll(c.command.substr(6), "$TMP", tmp.string()) + " > " +
                                (scratch / "stdout").string() + " 2> " + (scratch / "stderr").string() + " < /dev/null";
    const int status = std::system(command.c_str());
    const int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    EXPECT_EQ(exit_code, c.exit_code) << Slurp(scratch / "stderr");
    EXPECT_EQ(Slurp(scratch / "stderr"), ReplaceAll(c.message, "$TMP", tmp.string()) + "\n");
    EXPECT_EQ(Slurp(scratch / "stdout"), "");
    EXPECT_EQ(Listing(tmp), std::set<std::string>{"a-file"}) << "a failed run wrote into $TMP";
  }
  EXPECT_EQ(Listing(inputs), inputs_before) << "a failed run wrote into " << inputs;
  fs::remove_all(scratch);
}

}  // namespace
