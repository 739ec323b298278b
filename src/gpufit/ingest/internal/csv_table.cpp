#include "gpufit/ingest/internal/csv_table.h"

#include "gpufit/core/input_file.h"
#include "gpufit/core/text.h"

// libfccp copies file names with strncpy into a fixed buffer (by design: names are
// truncated in its messages); GCC 12 warns about that inside the library header.
#pragma GCC diagnostic ignored "-Wstringop-truncation"
#include <fast_float/fast_float.h>
#include <libfccp/csv.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <utility>

namespace gpufit::internal {

template <std::size_t N>
Result<double> CsvRow<N>::NonNegative(std::size_t column) const {
  const char* text = cells[column];
  const char* name = (*names)[column];
  const std::size_t len = text ? std::strlen(text) : 0;
  if (len == 0) return InvalidArgument("{}:{}: column '{}': empty value", *file, line, name);
  double v = 0;
  const auto [end, ec] = fast_float::from_chars(text, text + len, v);
  if (ec != std::errc() || end != text + len)
    return InvalidArgument("{}:{}: column '{}': expected a number, got {}", *file, line, name, QuoteForMessage(text));
  if (!std::isfinite(v))
    return InvalidArgument("{}:{}: column '{}': {} is not a finite number", *file, line, name, QuoteForMessage(text));
  if (v < 0) return InvalidArgument("{}:{}: column '{}': must be >= 0, got {}", *file, line, name, v);
  return v;
}

template <std::size_t N>
Result<double> CsvRow<N>::AtMost(std::size_t column, double max, std::string_view why) const {
  const Result<double> v = NonNegative(column);
  if (v && *v > max)
    return InvalidArgument("{}:{}: column '{}': {} is above {} ({})", *file, line, (*names)[column], *v, max, why);
  return v;
}

template <std::size_t N>
Result<std::string_view> CsvRow<N>::Text(std::size_t column) const {
  const char* text = cells[column];
  if (!text || !*text) return InvalidArgument("{}:{}: column '{}': empty value", *file, line, (*names)[column]);
  return std::string_view(text);
}

namespace {

template <class Reader, std::size_t N, std::size_t... I>
void ReadHeader(Reader& in, const std::array<const char*, N>& c, io::ignore_column policy, std::index_sequence<I...>) {
  in.read_header(policy, c[I]...);
}

template <class Reader, std::size_t N, std::size_t... I>
bool ReadRow(Reader& in, std::array<const char*, N>& cells, std::index_sequence<I...>) {
  std::array<char*, N> raw{};
  const bool ok = in.read_row(raw[I]...);
  for (std::size_t k = 0; k < N; ++k) cells[k] = raw[k];
  return ok;
}

}  // namespace

template <std::size_t N>
Result<void> ForEachCsvRow(const std::string& path, const std::array<const char*, N>& columns,
                           const std::function<Result<void>(const CsvRow<N>&)>& on_row, std::size_t required) {
  std::error_code ec;
  if (Result<void> ok = CheckInputFile(path); !ok) return ok.error();
  if (std::filesystem::file_size(path, ec) == 0) return InvalidArgument("{}: empty file (expected a CSV header)", path);
  try {
    io::CSVReader<static_cast<unsigned>(N)> in(path);
    ReadHeader(in, columns,
               required < N ? io::ignore_extra_column | io::ignore_missing_column : io::ignore_extra_column,
               std::make_index_sequence<N>());
    for (std::size_t k = 0; k < required && k < N; ++k) {
      if (in.has_column(columns[k])) continue;
      io::error::missing_column_in_header missing;  // the message libfccp gives when all are required
      missing.set_column_name(columns[k]);
      missing.set_file_name(path.c_str());
      throw missing;
    }
    CsvRow<N> row{&path, 0, &columns, {}};
    while (ReadRow(in, row.cells, std::make_index_sequence<N>())) {
      row.line = in.get_file_line();
      Result<void> r = on_row(row);
      if (!r) return r;
    }
  } catch (const io::error::base& e) {
    // libfccp's messages name the file already (quoted); say it once, in front.
    std::string what = e.what();
    const std::string quoted = " in file \"" + path + "\"";
    const std::string quoted_header = " in header of file \"" + path + "\"";
    for (const std::string& q : {quoted_header, quoted}) {
      if (const auto at = what.find(q); at != std::string::npos) what.erase(at, q.size());
    }
    return InvalidArgument("{}: {}", path, what);
  }
  return {};
}

template struct CsvRow<1>;
template Result<void> ForEachCsvRow<1>(const std::string&, const std::array<const char*, 1>&,
                                       const std::function<Result<void>(const CsvRow<1>&)>&, std::size_t);
template struct CsvRow<3>;
template struct CsvRow<4>;
template Result<void> ForEachCsvRow<3>(const std::string&, const std::array<const char*, 3>&,
                                       const std::function<Result<void>(const CsvRow<3>&)>&, std::size_t);
template Result<void> ForEachCsvRow<4>(const std::string&, const std::array<const char*, 4>&,
                                       const std::function<Result<void>(const CsvRow<4>&)>&, std::size_t);
template struct CsvRow<5>;
template Result<void> ForEachCsvRow<5>(const std::string&, const std::array<const char*, 5>&,
                                       const std::function<Result<void>(const CsvRow<5>&)>&, std::size_t);
template struct CsvRow<6>;
template Result<void> ForEachCsvRow<6>(const std::string&, const std::array<const char*, 6>&,
                                       const std::function<Result<void>(const CsvRow<6>&)>&, std::size_t);
template struct CsvRow<8>;
template Result<void> ForEachCsvRow<8>(const std::string&, const std::array<const char*, 8>&,
                                       const std::function<Result<void>(const CsvRow<8>&)>&, std::size_t);

}  // namespace gpufit::internal
