// ForEachCsvRowInParts against one reader of the same file: the same rows, lines and first error.
#include "gpufit/ingest/internal/csv_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "gpufit/core/test_support.h"

namespace gpufit::internal {
namespace {

using ::testing::HasSubstr;

struct Seen {
  unsigned line;
  std::string a, b;
  bool operator==(const Seen&) const = default;
};

constexpr std::array<const char*, 2> kColumns = {"a", "b"};

// Rows by part, concatenated in part order, from reading `path` in `parts` parts.
Result<std::vector<Seen>> Read(const std::string& path, std::size_t parts) {
  std::vector<std::vector<Seen>> by_part(parts);
  Result<void> r = ForEachCsvRowInParts<2>(
      path, kColumns, parts,
      [&](std::size_t part, const CsvRow<2>& row) -> Result<void> {
        by_part.at(part).push_back({row.line, row.cells[0], row.cells[1]});
        if (std::string(row.cells[1]) == "bad") return InvalidArgument("{}:{}: bad row", path, row.line);
        return {};
      },
      2, /*min_bytes_to_split=*/0);
  if (!r) return r.error();
  std::vector<Seen> all;
  for (const auto& p : by_part) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// "b,a" header (columns found by name), then rows k = 1..n as "k,x<k>"; line k+1 holds row k.
std::string Rows(std::size_t n, const char* newline = "\n") {
  std::string s = std::string("b,a,extra") + newline;
  for (std::size_t k = 1; k <= n; ++k) s += "x" + std::to_string(k) + "," + std::to_string(k) + ",z" + newline;
  return s;
}

TEST(ForEachCsvRowInParts, PartsTogetherAreTheFileInOrderWithItsLineNumbers) {
  testing::TempDir d;
  for (const char* newline : {"\n", "\r\n"}) {
    const std::string f = d.Write("t.csv", Rows(1000, newline));
    const Result<std::vector<Seen>> one = Read(f, 1);
    ASSERT_TRUE(one.has_value()) << one.error().message;
    ASSERT_EQ(one->size(), 1000u);
    EXPECT_EQ(one->front(), (Seen{2, "1", "x1"}));
    EXPECT_EQ(one->back(), (Seen{1001, "1000", "x1000"}));
    for (std::size_t parts : {2, 3, 7}) {
      const Result<std::vector<Seen>> many = Read(f, parts);
      ASSERT_TRUE(many.has_value()) << many.error().message;
      EXPECT_EQ(*many, *one) << parts << " parts";
    }
  }
}

TEST(ForEachCsvRowInParts, MorePartsThanLinesGivesEachRowOnce) {
  testing::TempDir d;
  const std::string f = d.Write("t.csv", Rows(2));
  const Result<std::vector<Seen>> many = Read(f, 8);
  ASSERT_TRUE(many.has_value()) << many.error().message;
  EXPECT_EQ(*many, (std::vector<Seen>{{2, "1", "x1"}, {3, "2", "x2"}}));
}

TEST(ForEachCsvRowInParts, TheFirstErrorInTheFileWinsWithItsLine) {
  testing::TempDir d;
  std::string text = Rows(1000);
  // Rows 600 and 900 are bad: lines 601 and 901, in different parts of a 3-part read.
  for (const char* row : {"x600,600,z\n", "x900,900,z\n"}) {
    const std::size_t at = text.find(row);
    text.replace(at, std::string(row).size(), std::string("bad,") + std::string(row).substr(std::string(row).find(',') + 1));
  }
  const std::string f = d.Write("t.csv", text);
  for (std::size_t parts : {1, 3}) {
    const Result<std::vector<Seen>> r = Read(f, parts);
    ASSERT_FALSE(r.has_value());
    EXPECT_THAT(r.error().message, HasSubstr("t.csv:601: bad row")) << parts << " parts";
  }
}

TEST(ForEachCsvRowInParts, LibfccpErrorsInALaterPartNameTheirLine) {
  testing::TempDir d;
  std::string text = Rows(1000);
  const std::string row = "x800,800,z\n";
  text.replace(text.find(row), row.size(), "x800\n");  // too few columns on line 801
  const std::string f = d.Write("t.csv", text);
  const Result<std::vector<Seen>> one = Read(f, 1), many = Read(f, 4);
  ASSERT_FALSE(one.has_value());
  ASSERT_FALSE(many.has_value());
  EXPECT_THAT(one.error().message, HasSubstr("801"));
  EXPECT_EQ(many.error().message, one.error().message);
}

TEST(ForEachCsvRowInParts, MissingColumnAndEmptyFileAreTheOneReadersErrors) {
  testing::TempDir d;
  const std::string no_b = d.Write("nob.csv", "a,c\n1,2\n3,4\n"), empty = d.Write("empty.csv", "");
  for (const std::string& f : {no_b, empty}) {
    const Result<std::vector<Seen>> one = Read(f, 1), many = Read(f, 3);
    ASSERT_FALSE(one.has_value());
    ASSERT_FALSE(many.has_value());
    EXPECT_EQ(many.error().message, one.error().message);
  }
}

}  // namespace
}  // namespace gpufit::internal
