#include "gpufit/ingest/internal/csv_table.h"

#include "gpufit/core/input_file.h"
#include "gpufit/core/text.h"

// libfccp copies file names with strncpy into a fixed buffer (by design: names are
// truncated in its messages); GCC 12 warns about that inside the library header.
#pragma GCC diagnostic ignored "-Wstringop-truncation"
#include <fast_float/fast_float.h>
#include <libfccp/csv.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

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

// Bytes [begin, end) of an open file, after `prefix` (the header line, so that a reader of a
// later part finds its columns by name as the first part's does).
class RangeSource final : public io::ByteSourceBase {
 public:
  RangeSource(int fd, std::string prefix, off_t begin, off_t end)
      : fd_(fd), prefix_(std::move(prefix)), pos_(begin), end_(end) {}
  // Fills the whole buffer unless the range ends: libfccp takes a short read for the end.
  int read(char* buffer, int size) override {
    int n = 0;
    if (prefix_at_ < prefix_.size()) {
      n = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(size), prefix_.size() - prefix_at_));
      std::memcpy(buffer, prefix_.data() + prefix_at_, static_cast<std::size_t>(n));
      prefix_at_ += static_cast<std::size_t>(n);
    }
    while (n < size && pos_ < end_) {
      const auto want = static_cast<std::size_t>(std::min<off_t>(size - n, end_ - pos_));
      const ssize_t got = ::pread(fd_, buffer + n, want, pos_);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        io::error::can_not_open_file err;  // libfccp's error for an unreadable file
        err.set_errno(got < 0 ? errno : EIO);
        throw err;
      }
      pos_ += got;
      n += static_cast<int>(got);
    }
    return n;
  }

 private:
  int fd_;
  std::string prefix_;
  std::size_t prefix_at_ = 0;
  off_t pos_, end_;
};

// Lines ('\n') in bytes [begin, end) of the file: libfccp counts lines by '\n' too.
unsigned CountLines(int fd, off_t begin, off_t end) {
  std::vector<char> buf(1 << 22);
  unsigned lines = 0;
  while (begin < end) {
    const ssize_t got = ::pread(fd, buf.data(), static_cast<std::size_t>(std::min<off_t>(end - begin, 1 << 22)), begin);
    if (got <= 0) break;
    lines += static_cast<unsigned>(std::count(buf.data(), buf.data() + got, '\n'));
    begin += got;
  }
  return lines;
}

// libfccp's messages name the file already (quoted); say it once, in front.
Error LibfccpError(const std::string& path, const io::error::base& e) {
  std::string what = e.what();
  const std::string quoted = " in file \"" + path + "\"";
  const std::string quoted_header = " in header of file \"" + path + "\"";
  for (const std::string& q : {quoted_header, quoted}) {
    if (const auto at = what.find(q); at != std::string::npos) what.erase(at, q.size());
  }
  return InvalidArgument("{}: {}", path, what);
}

// Reads the header and then every row of `in`, numbering rows after `lines_before` lines.
template <std::size_t N, class Reader>
Result<void> ReadRows(Reader& in, const std::string& path, const std::array<const char*, N>& columns,
                      std::size_t required, unsigned lines_before,
                      const std::function<Result<void>(const CsvRow<N>&)>& on_row) {
  ReadHeader(in, columns, required < N ? io::ignore_extra_column | io::ignore_missing_column : io::ignore_extra_column,
             std::make_index_sequence<N>());
  for (std::size_t k = 0; k < required && k < N; ++k) {
    if (in.has_column(columns[k])) continue;
    io::error::missing_column_in_header missing;  // the message libfccp gives when all are required
    missing.set_column_name(columns[k]);
    missing.set_file_name(path.c_str());
    throw missing;
  }
  if (lines_before > 0) in.set_file_line(lines_before);
  CsvRow<N> row{&path, 0, &columns, {}};
  while (ReadRow(in, row.cells, std::make_index_sequence<N>())) {
    row.line = in.get_file_line();
    Result<void> r = on_row(row);
    if (!r) return r;
  }
  return {};
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
    return ReadRows(in, path, columns, required, 0, on_row);
  } catch (const io::error::base& e) {
    return LibfccpError(path, e);
  }
}

template <std::size_t N>
Result<void> ForEachCsvRowInParts(const std::string& path, const std::array<const char*, N>& columns,
                                  std::size_t parts,
                                  const std::function<Result<void>(std::size_t, const CsvRow<N>&)>& on_row,
                                  std::size_t required, std::uintmax_t min_bytes_to_split) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (parts <= 1 || ec || size < min_bytes_to_split || size == 0)
    return ForEachCsvRow<N>(path, columns, [&](const CsvRow<N>& row) { return on_row(0, row); }, required);
  if (Result<void> ok = CheckInputFile(path); !ok) return ok.error();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound("{}: cannot open: {}", path, std::strerror(errno));
  // The header line, and each part's first byte: just after a line end at or past k * size / parts.
  std::string header;
  {
    std::vector<char> buf(1 << 16);
    const ssize_t got = ::pread(fd, buf.data(), buf.size(), 0);
    const char* nl = got > 0 ? static_cast<const char*>(std::memchr(buf.data(), '\n', static_cast<std::size_t>(got))) : nullptr;
    if (nl == nullptr) {
      ::close(fd);
      return ForEachCsvRow<N>(path, columns, [&](const CsvRow<N>& row) { return on_row(0, row); }, required);
    }
    header.assign(buf.data(), static_cast<std::size_t>(nl + 1 - buf.data()));
  }
  std::vector<off_t> begin{static_cast<off_t>(header.size())};
  for (std::size_t k = 1; k < parts; ++k) {
    off_t at = std::max(begin.back(), static_cast<off_t>(size * k / parts));
    char c = 0;
    while (at < static_cast<off_t>(size) && ::pread(fd, &c, 1, at - 1) == 1 && c != '\n') ++at;  // to a line start
    if (at < static_cast<off_t>(size) && at > begin.back()) begin.push_back(at);
  }
  begin.push_back(static_cast<off_t>(size));
  const std::size_t n = begin.size() - 1;
  // Lines before each part (the header's, then those of the parts before it), each part's
  // lines counted once, on its own thread.
  // Part 0 reads from byte 0, header included, so it numbers its own lines.
  std::vector<unsigned> lines(n, 0), before(n, 0);
  {
    std::vector<std::thread> counters;
    for (std::size_t k = 0; k + 1 < n; ++k)
      counters.emplace_back([&, k] { lines[k] = CountLines(fd, begin[k], begin[k + 1]); });
    for (std::thread& t : counters) t.join();
  }
  for (std::size_t k = 1; k < n; ++k) before[k] = (k == 1 ? 1 : before[k - 1]) + lines[k - 1];
  std::vector<Result<void>> results(n);
  auto read_part = [&](std::size_t k) {
    try {
      // The first part reads the header from the file itself (from byte 0); a later one is given it.
      io::CSVReader<static_cast<unsigned>(N)> in(
          path, std::make_unique<RangeSource>(fd, k == 0 ? std::string() : header, k == 0 ? 0 : begin[k], begin[k + 1]));
      results[k] = ReadRows<N>(in, path, columns, required, before[k],
                               [&](const CsvRow<N>& row) { return on_row(k, row); });
    } catch (const io::error::base& e) {
      results[k] = LibfccpError(path, e);
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t k = 1; k < n; ++k) threads.emplace_back(read_part, k);
  read_part(0);
  for (std::thread& t : threads) t.join();
  ::close(fd);
  for (Result<void>& r : results)
    if (!r) return r;
  return {};
}

template struct CsvRow<2>;
template Result<void> ForEachCsvRow<2>(const std::string&, const std::array<const char*, 2>&,
                                       const std::function<Result<void>(const CsvRow<2>&)>&, std::size_t);
template Result<void> ForEachCsvRowInParts<2>(const std::string&, const std::array<const char*, 2>&, std::size_t,
                                              const std::function<Result<void>(std::size_t, const CsvRow<2>&)>&,
                                              std::size_t, std::uintmax_t);
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

template Result<void> ForEachCsvRowInParts<4>(const std::string&, const std::array<const char*, 4>&, std::size_t,
                                              const std::function<Result<void>(std::size_t, const CsvRow<4>&)>&,
                                              std::size_t, std::uintmax_t);
template Result<void> ForEachCsvRowInParts<5>(const std::string&, const std::array<const char*, 5>&, std::size_t,
                                              const std::function<Result<void>(std::size_t, const CsvRow<5>&)>&,
                                              std::size_t, std::uintmax_t);
template Result<void> ForEachCsvRowInParts<6>(const std::string&, const std::array<const char*, 6>&, std::size_t,
                                              const std::function<Result<void>(std::size_t, const CsvRow<6>&)>&,
                                              std::size_t, std::uintmax_t);
}  // namespace gpufit::internal
