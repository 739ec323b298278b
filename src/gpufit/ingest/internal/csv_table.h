// Reads a CSV file whose columns are found by header name (any order, extra columns
// ignored), through Debian's libfccp (Ben Strasser's fast-cpp-csv-parser), and parses
// numbers with fast_float. Every error names the file, line and column.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "gpufit/core/result.h"

namespace gpufit::internal {

// One data row: the cells of the requested columns, in the order they were requested.
template <std::size_t N>
struct CsvRow {
  const std::string* file;
  unsigned line;                            // 1-based line in the file
  const std::array<const char*, N>* names;  // requested column names
  std::array<const char*, N> cells;

  // The cell as a finite number >= 0. Errors: empty, not a number, NaN or infinite, negative.
  Result<double> NonNegative(std::size_t column) const;
  // The cell as a number in [0, max]; `why` says where the bound comes from. Errors: those of
  // NonNegative, and "FILE:LINE: column 'C': V is above MAX (WHY)".
  Result<double> AtMost(std::size_t column, double max, std::string_view why) const;
  // The cell as non-empty text.
  Result<std::string_view> Text(std::size_t column) const;
};

// Calls `on_row` for each data row of `path`, stopping at the first error it returns.
// Columns [0, required) must be in the header; columns from `required` on are optional: one
// the header lacks has a null cell in every row (a column that is there gives "" for an
// empty cell). Errors: kNotFound (file missing or unreadable), kInvalidArgument (empty file,
// a missing required column, a malformed line), or whatever `on_row` returns.
template <std::size_t N>
Result<void> ForEachCsvRow(const std::string& path, const std::array<const char*, N>& columns,
                           const std::function<Result<void>(const CsvRow<N>&)>& on_row, std::size_t required = N);

// ForEachCsvRow over `parts` byte ranges of the file (split at line ends), each read by its
// own reader on its own thread, a row of part k going to on_row(k, row). Within a part rows
// come in file order and parts follow one another in the file, so concatenating what the
// handlers gathered part by part gives what one reader would. Line numbers are the file's
// (a part counts the lines before it first). The error returned is the first in the file:
// each part stops at its first, and the earliest part's wins. A file under
// `min_bytes_to_split` (threads are not worth it below), or `parts` <= 1, is one part; a file
// too short for `parts` lines gives fewer. Errors: those of ForEachCsvRow.
inline constexpr std::uintmax_t kMinBytesToSplit = 64u << 20;
template <std::size_t N>
Result<void> ForEachCsvRowInParts(const std::string& path, const std::array<const char*, N>& columns,
                                  std::size_t parts,
                                  const std::function<Result<void>(std::size_t, const CsvRow<N>&)>& on_row,
                                  std::size_t required = N, std::uintmax_t min_bytes_to_split = kMinBytesToSplit);

}  // namespace gpufit::internal
