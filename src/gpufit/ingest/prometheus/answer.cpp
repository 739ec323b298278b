// ParseQueryRangeAnswer (declared in prometheus_client.h): a query_range answer read in one
// pass into PromSeries, without a document tree.
//
// How: a scanner walks the envelope ({"status", "errorType", "error", "data": {"resultType",
// "result": [...]}}) byte by byte, checking brackets, strings and the nesting limit
// (kMaxJsonDepth, as CheckJsonDepth) and noting where each element of data.result starts and
// ends; each element, one series, is then parsed by simdjson (https://simdjson.org) and its
// samples copied into its PromSeries.
//
// Memory: simdjson indexes the text it parses (4 bytes per structural character, about the
// size of a matrix answer) and builds a tape of it; parsing one series at a time keeps both to
// the largest series instead of the whole answer, so the parse holds little more than its
// output (bench/prometheus_bench.cpp measures it).
// Speed: simdjson 3.0's DOM parser picks the CPU's fastest kernels at run time (AVX2 where
// present); its On-Demand API is compiled only for the build's baseline target (its scalar
// "fallback" kernels on a generic x86-64 build) and measured about twice as slow here, so the
// series are read through the DOM, one small document each.
#include <fast_float/fast_float.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "gpufit/core/json_input.h"
#include "gpufit/ingest/prometheus/client.h"

namespace gpufit {
namespace {

namespace dom = simdjson::dom;

// Prometheus prints sample values as Go's strconv.FormatFloat does: decimals, exponents,
// "NaN", "+Inf", "-Inf".
Result<double> ParseSampleValue(std::string_view text) {
  if (text == "+Inf" || text == "Inf") return std::numeric_limits<double>::infinity();
  if (text == "-Inf") return -std::numeric_limits<double>::infinity();
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  double v = 0;
  const auto r = fast_float::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size())
    return InvalidArgument("sample value \"{}\" is not a number", Excerpt(text));
  return v;
}

// The type of the JSON value whose first byte is c.
const char* TypeOfFirstByte(char c) {
  switch (c) {
    case '{':
      return "object";
    case '[':
      return "array";
    case '"':
      return "string";
    case 't':
    case 'f':
      return "boolean";
    case 'n':
      return "null";
    default:
      return "number";
  }
}

struct Span {
  std::size_t begin = 0, end = 0;  // [begin, end) of the text
  bool found() const { return end > begin; }
};

// The envelope's fields and the spans of data.result's elements, or the first syntax error.
struct Skeleton {
  Span status, error_type, error, data, result_type, result, warnings, infos;
  std::vector<Span> elements;  // of data.result, when it is an array
};

// Walks the envelope. Only the bytes of the fields it keeps are interpreted; every other
// value is skipped with its strings and brackets checked (its scalars are checked by
// simdjson when read).
class Scanner {
 public:
  explicit Scanner(std::string_view text) : t_(text) {}

  Result<Skeleton> Run() {
    Skeleton s;
    Ws();
    if (Result<void> r =
            Object(0,
                   [&](std::string_view key, int depth) -> Result<void> {
                     if (key == "data" && Peek() == '{') {
                       const std::size_t begin = i_;
                       Result<void> d = Object(depth, [&](std::string_view k, int dd) -> Result<void> {
                         if (k == "result" && Peek() == '[') return ResultArray(s, dd);
                         Span* into = k == "resultType" ? &s.result_type : k == "result" ? &s.result : nullptr;
                         return Value(dd, into);
                       });
                       s.data = {begin, i_};
                       return d;
                     }
                     Span* into = key == "status"      ? &s.status
                                  : key == "errorType" ? &s.error_type
                                  : key == "error"     ? &s.error
                                  : key == "data"      ? &s.data
                                  : key == "warnings"  ? &s.warnings
                                  : key == "infos"     ? &s.infos
                                                       : nullptr;
                     return Value(depth, into);
                   });
        !r)
      return r.error();
    Ws();
    if (i_ != t_.size()) return Malformed("text after the answer's object");
    return s;
  }

  // Whether the text is an object (else the caller says what it is).
  bool TopIsObject() {
    Ws();
    return Peek() == '{';
  }

 private:
  char Peek() const { return i_ < t_.size() ? t_[i_] : '\0'; }
  void Ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t')) ++i_;
  }
  Error Malformed(std::string_view what) const { return InvalidArgument("malformed JSON at byte {}: {}", i_, what); }
  Error TooDeep() const { return InvalidArgument("JSON nested deeper than {} levels at byte {}", kMaxJsonDepth, i_); }

  // A string at i_; leaves i_ after its closing quote. Raw contents (escapes kept; simdjson
  // checks them where a string is read).
  Result<std::string_view> String() {
    if (Peek() != '"') return Malformed("expected a string");
    const std::size_t begin = ++i_;
    const std::size_t n = t_.size();
    while (i_ < n) {
      const char c = t_[i_];
      if (c == '"') return t_.substr(begin, i_++ - begin);
      i_ += c == '\\' ? 2 : 1;  // the escaped character, whatever it is
    }
    i_ = n;
    return Malformed("unterminated string");
  }

  // Any value at i_, with `depth` containers around it; its span goes to `into` if given.
  Result<void> Value(int depth, Span* into) {
    const std::size_t begin = i_;
    const char c = Peek();
    if (c == '"') {
      if (Result<std::string_view> s = String(); !s) return s.error();
    } else if (c == '{' || c == '[') {
      if (Result<void> r = Skip(depth); !r) return r.error();
    } else {
      // A number or literal: its characters; simdjson judges it where it is read.
      while (i_ < t_.size()) {
        const char d = t_[i_];
        if (!((d >= '0' && d <= '9') || (d >= 'a' && d <= 'z') || d == '-' || d == '+' || d == '.' || d == 'E')) break;
        ++i_;
      }
      if (i_ == begin) return Malformed(i_ == t_.size() ? "unexpected end of the answer" : "expected a value");
    }
    if (into != nullptr) *into = {begin, i_};
    return {};
  }

  // A container at i_ skipped whole: brackets must match, strings end; depth bounded.
  // 16 bytes at a time: a bit mask of the bytes that matter (quotes, backslashes, brackets),
  // then one step per set bit (SSE2, part of every x86-64; a plain loop elsewhere).
  Result<void> Skip(int depth) {
    std::array<char, kMaxJsonDepth + 1> open{};
    int level = 0;
    bool in_string = false;
    const std::size_t n = t_.size();
    std::size_t block = i_;
    std::uint32_t skip_next = 0;  // 1: the block's first byte is escaped (a backslash ended the last)
    while (block < n) {
      std::uint32_t mask = SpecialMask(block) & ~skip_next;
      skip_next = 0;
      while (mask != 0) {
        const int j = std::countr_zero(mask);
        mask &= mask - 1;
        i_ = block + static_cast<std::size_t>(j);
        const char c = t_[i_];
        if (in_string) {
          if (c == '"') {
            in_string = false;
          } else if (c == '\\') {  // the escaped character, whatever it is
            if (j == 15)
              skip_next = 1;
            else
              mask &= ~(std::uint32_t{1} << (j + 1));
          }
        } else if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[') {
          if (depth + level + 1 > kMaxJsonDepth) return TooDeep();
          open[static_cast<std::size_t>(level++)] = c;
        } else if (c == '}' || c == ']') {
          if (level == 0 || open[static_cast<std::size_t>(level - 1)] != (c == '}' ? '{' : '['))
            return Malformed("mismatched bracket");
          if (--level == 0) {
            ++i_;
            return {};
          }
        } else if (c == '\\') {
          return Malformed("a backslash outside a string");
        }
      }
      block += 16;
    }
    i_ = n;
    return Malformed(in_string ? "unterminated string" : "unexpected end of the answer");
  }

  // Bit k set when byte block + k is a quote, backslash or bracket (bytes past the end: 0).
  std::uint32_t SpecialMask(std::size_t block) const {
#if defined(__SSE2__)
    if (block + 16 <= t_.size()) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t_.data() + block));
      __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
      // [ ] { } (0x5b 0x5d 0x7b 0x7d) differ in bits 0x26 only: with those cleared they are
      // 0x59, as are Y _ y DEL, which the caller passes over.
      hit = _mm_or_si128(hit,
                         _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8(static_cast<char>(0xd9))), _mm_set1_epi8(0x59)));
      return static_cast<std::uint32_t>(_mm_movemask_epi8(hit));
    }
#endif
    std::uint32_t mask = 0;
    for (std::size_t k = 0; k < 16 && block + k < t_.size(); ++k) {
      const char c = t_[block + k];
      if (c == '"' || c == '\\' || c == '[' || c == ']' || c == '{' || c == '}') mask |= std::uint32_t{1} << k;
    }
    return mask;
  }

  // An object at i_; `member(key, depth)` reads each member's value (i_ at the value).
  template <class Member>
  Result<void> Object(int depth, Member&& member) {
    if (Peek() != '{') return Malformed("expected an object");
    if (depth + 1 > kMaxJsonDepth) return TooDeep();
    ++i_;
    Ws();
    if (Peek() == '}') {
      ++i_;
      return {};
    }
    for (;;) {
      Ws();
      const Result<std::string_view> key = String();
      if (!key) return key.error();
      Ws();
      if (Peek() != ':') return Malformed("expected ':'");
      ++i_;
      Ws();
      if (Result<void> r = member(*key, depth + 1); !r) return r.error();
      Ws();
      if (Peek() == ',') {
        ++i_;
        continue;
      }
      if (Peek() == '}') {
        ++i_;
        return {};
      }
      return Malformed("expected ',' or '}'");
    }
  }

  Result<void> ResultArray(Skeleton& s, int depth) {
    const std::size_t begin = i_;
    if (depth + 1 > kMaxJsonDepth) return TooDeep();
    s.elements.clear();
    ++i_;
    Ws();
    if (Peek() == ']') {
      ++i_;
    } else {
      for (;;) {
        Ws();
        const std::size_t at = i_;
        if (Result<void> r = Value(depth + 1, nullptr); !r) return r.error();
        s.elements.push_back({at, i_});
        Ws();
        if (Peek() == ',') {
          ++i_;
          continue;
        }
        if (Peek() == ']') {
          ++i_;
          break;
        }
        return Malformed("expected ',' or ']'");
      }
    }
    s.result = {begin, i_};
    return {};
  }

  std::string_view t_;
  std::size_t i_ = 0;
};

// Parses spans of one text with simdjson: in place where the text's buffer has
// SIMDJSON_PADDING bytes after the span, else from a padded copy. One parser, reused: its
// buffers grow to the largest span.
class SpanReader {
 public:
  explicit SpanReader(const std::string& text) : text_(text) {}

  simdjson::simdjson_result<dom::element> Parse(Span s) {
    const std::size_t room = text_.capacity() - s.begin;
    const std::size_t length = s.end - s.begin;
    if (room >= length + simdjson::SIMDJSON_PADDING)
      return parser_.parse(text_.data() + s.begin, length, /*realloc_if_needed=*/false);
    copy_ = simdjson::padded_string(text_.data() + s.begin, length);
    return parser_.parse(copy_);
  }

 private:
  const std::string& text_;
  dom::parser parser_;
  simdjson::padded_string copy_;
};

// nlohmann/json's type names, which the messages have always used.
const char* TypeName(dom::element_type t) {
  switch (t) {
    case dom::element_type::ARRAY:
      return "array";
    case dom::element_type::OBJECT:
      return "object";
    case dom::element_type::INT64:
    case dom::element_type::UINT64:
    case dom::element_type::DOUBLE:
      return "number";
    case dom::element_type::STRING:
      return "string";
    case dom::element_type::BOOL:
      return "boolean";
    case dom::element_type::NULL_VALUE:
      return "null";
  }
  return "?";
}

// A JSON scalar span's value as text (unescaped) when it is a string, and its type.
struct Scalar {
  std::optional<std::string> text;
  std::string type;
};
Result<Scalar> ReadScalar(SpanReader& reader, Span s) {
  dom::element e;
  if (auto error = reader.Parse(s).get(e))
    return InvalidArgument("malformed JSON at byte {}: {}", s.begin, simdjson::error_message(error));
  std::string_view v;
  if (e.get_string().get(v)) return Scalar{std::nullopt, TypeName(e.type())};
  return Scalar{std::string(v), "string"};
}

// Each element of data.result, one series.
class SeriesReader {
 public:
  SeriesReader(SpanReader& reader, const std::string& source) : reader_(reader), source_(source) {}

  // `at` is the element's path ("data.result[3]").
  Result<void> Read(Span span, const std::string& at, PromSeries& out) {
    at_ = &at;
    span_ = span;
    dom::element doc;
    if (auto e = reader_.Parse(span).get(doc)) return Syntax(e);
    dom::object obj;
    if (doc.get_object().get(obj)) return Bad(at, fmt::format("expected an object, got {}", TypeName(doc.type())));
    bool metric = false, values = false;
    for (const dom::key_value_pair field : obj) {
      if (field.key == "metric") {
        metric = true;
        if (Result<void> r = Labels(field.value, out); !r) return r;
      } else if (field.key == "values") {
        values = true;
        if (Result<void> r = Values(field.value, out); !r) return r;
      }
    }
    if (!metric) return Bad(at + ".metric", "missing");
    if (!values) return Bad(at + ".values", "missing");
    return {};
  }

 private:
  Error Bad(const std::string& path, std::string_view what) const {
    return InvalidArgument("{}: {}: {}", source_, path, what);
  }
  // simdjson does not say where in the series it stopped: the message names the series and
  // the byte it starts at.
  Error Syntax(simdjson::error_code e) const {
    if (e == simdjson::NUMBER_ERROR || e == simdjson::NUMBER_OUT_OF_RANGE)
      return InvalidArgument("{}: {} (from byte {}): malformed number, or number overflow", source_, *at_, span_.begin);
    return InvalidArgument("{}: malformed JSON at byte {} ({} starts there): {}", source_, span_.begin, *at_,
                           simdjson::error_message(e));
  }

  Result<void> Labels(dom::element v, PromSeries& out) {
    dom::object obj;
    if (v.get_object().get(obj))
      return Bad(*at_ + ".metric", fmt::format("expected an object, got {}", TypeName(v.type())));
    out.labels.clear();
    for (const dom::key_value_pair field : obj) {
      std::string_view text;
      if (field.value.get_string().get(text))
        return Bad(fmt::format("{}.metric[\"{}\"]", *at_, Excerpt(field.key)),
                   fmt::format("expected a string, got {}", TypeName(field.value.type())));
      out.labels[std::string(field.key)] = std::string(text);
    }
    return {};
  }

  // [[time, "value"], ...]: each pair's shape is judged first, then each item's type.
  Result<void> Values(dom::element v, PromSeries& out) {
    dom::array arr;
    if (v.get_array().get(arr))
      return Bad(*at_ + ".values", fmt::format("expected an array, got {}", TypeName(v.type())));
    out.time_s.clear();
    out.value.clear();
    out.time_s.reserve(arr.size());
    out.value.reserve(arr.size());
    std::size_t k = 0;
    for (const dom::element pair : arr) {
      const auto path = [&] { return fmt::format("{}.values[{}]", *at_, k); };
      dom::array items;
      if (pair.get_array().get(items))
        return Bad(path(), fmt::format("expected a [time, \"value\"] pair, got {}", TypeName(pair.type())));
      auto it = items.begin();
      const std::size_t n = items.size();
      if (n != 2) return Bad(path(), fmt::format("expected a [time, \"value\"] pair, got array of {} items", n));
      const dom::element time = *it, text = *++it;
      double t = 0;
      if (time.get_double().get(t))
        return Bad(path() + "[0]", fmt::format("expected a number (Unix s), got {}", TypeName(time.type())));
      std::string_view value_text;
      if (text.get_string().get(value_text))
        return Bad(path() + "[1]", fmt::format("expected a string, got {}", TypeName(text.type())));
      const Result<double> value = ParseSampleValue(value_text);
      if (!value) return Bad(path() + "[1]", value.error().message);
      out.time_s.push_back(t);
      out.value.push_back(*value);
      ++k;
    }
    return {};
  }

  SpanReader& reader_;
  const std::string& source_;
  const std::string* at_ = nullptr;
  Span span_;
};

// A body that is no JSON but markup (a UI, a login page, a proxy's error page answered 200):
// said so, for "malformed JSON" alone does not tell the user the address is wrong.
std::string MarkupHint(const std::string& body) {
  const std::size_t first = body.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || body[first] != '<') return {};
  return " (the answer is HTML or XML, not the Prometheus HTTP API: is the URL the server's API address, not a UI, "
         "a login page or a proxy's error page?)";
}
}  // namespace

Result<std::vector<PromSeries>> ParseQueryRangeAnswer(const std::string& body, const std::string& where) {
  PromAnswerNotes ignored;
  return ParseQueryRangeAnswer(body, where, ignored);
}

Result<std::vector<PromSeries>> ParseQueryRangeAnswer(const std::string& body, const std::string& where,
                                                      PromAnswerNotes& notes) {
  const std::string source = "prometheus " + where;
  const auto bad = [&](const std::string& path, std::string_view what) {
    return InvalidArgument("{}: {}: {}", source, path, what);
  };
  Scanner scanner(body);
  if (!scanner.TopIsObject()) {
    if (Result<void> depth = CheckJsonDepth(body); !depth)
      return InvalidArgument("{}: {}", source, depth.error().message);
    // Valid JSON of another type is named; anything else is malformed.
    SpanReader reader(body);
    dom::element doc;
    if (auto e = reader.Parse({0, body.size()}).get(doc))
      return InvalidArgument("{}: malformed JSON: {}{}", source, simdjson::error_message(e), MarkupHint(body));
    return bad("top level", fmt::format("expected an object, got {}", TypeName(doc.type())));
  }
  const Result<Skeleton> skeleton = scanner.Run();
  if (!skeleton) return InvalidArgument("{}: {}", source, skeleton.error().message);
  const Skeleton& s = *skeleton;
  SpanReader reader(body);
  // A field that must be a string: its text, or the error.
  const auto text_of = [&](const Span& span, const std::string& path) -> Result<std::string> {
    if (!span.found()) return bad(path, "missing");
    const Result<Scalar> v = ReadScalar(reader, span);
    if (!v) return InvalidArgument("{}: {}", source, v.error().message);
    if (!v->text) return bad(path, fmt::format("expected a string, got {}", v->type));
    return *v->text;
  };
  const Result<std::string> status = text_of(s.status, "status");
  if (!status) return status.error();
  if (*status != "success") {
    const auto optional_text = [&](const Span& span) {
      if (!span.found()) return std::string("?");
      const Result<Scalar> v = ReadScalar(reader, span);
      return v && v->text ? Excerpt(*v->text, 300) : std::string("?");
    };
    return InvalidArgument("{}: status '{}': {}: {}", source, Excerpt(*status), optional_text(s.error_type),
                           optional_text(s.error));
  }
  if (!s.data.found()) return bad("data", "missing");
  if (body[s.data.begin] != '{')
    return bad("data", fmt::format("expected an object, got {}", TypeOfFirstByte(body[s.data.begin])));
  const Result<std::string> type = text_of(s.result_type, "data.resultType");
  if (!type) return type.error();
  if (*type != "matrix") return bad("data.resultType", fmt::format("'{}', expected 'matrix'", Excerpt(*type)));
  if (!s.result.found()) return bad("data.result", "missing");
  if (body[s.result.begin] != '[')
    return bad("data.result", fmt::format("expected an array, got {}", TypeOfFirstByte(body[s.result.begin])));
  // warnings and infos: arrays of strings (Prometheus web/api/v1/api.go, `Warnings`, `Infos`).
  const auto strings_of = [&](const Span& span, const char* name, std::vector<std::string>& into) -> Result<void> {
    if (!span.found()) return {};
    dom::element e;
    if (auto error = reader.Parse(span).get(e))
      return InvalidArgument("{}: malformed JSON at byte {}: {}", source, span.begin, simdjson::error_message(error));
    dom::array items;
    if (e.get_array().get(items)) {
      if (e.is_null()) return {};
      return bad(name, fmt::format("expected an array of strings, got {}", TypeName(e.type())));
    }
    std::size_t k = 0;
    for (const dom::element item : items) {
      std::string_view text;
      if (item.get_string().get(text))
        return bad(fmt::format("{}[{}]", name, k), fmt::format("expected a string, got {}", TypeName(item.type())));
      into.emplace_back(text);
      ++k;
    }
    return {};
  };
  if (Result<void> r = strings_of(s.warnings, "warnings", notes.warnings); !r) return r.error();
  if (Result<void> r = strings_of(s.infos, "infos", notes.infos); !r) return r.error();
  std::vector<PromSeries> out(s.elements.size());
  SeriesReader series(reader, source);
  for (std::size_t i = 0; i < s.elements.size(); ++i) {
    const std::string at = fmt::format("data.result[{}]", i);
    if (Result<void> r = series.Read(s.elements[i], at, out[i]); !r) return r.error();
  }
  return out;
}

Result<std::vector<std::map<std::string, std::string>>> ParseSeriesAnswer(const std::string& body,
                                                                          const std::string& where) {
  PromAnswerNotes ignored;
  return ParseSeriesAnswer(body, where, ignored);
}

Result<std::vector<std::map<std::string, std::string>>> ParseSeriesAnswer(const std::string& body,
                                                                          const std::string& where,
                                                                          PromAnswerNotes& notes) {
  // Label sets only (no samples): small beside a range answer, parsed whole.
  const std::string source = "prometheus " + where;
  if (Result<void> depth = CheckJsonDepth(body); !depth)
    return InvalidArgument("{}: {}", source, depth.error().message);
  SpanReader reader(body);
  dom::element doc;
  if (auto e = reader.Parse({0, body.size()}).get(doc))
    return InvalidArgument("{}: malformed JSON: {}{}", source, simdjson::error_message(e), MarkupHint(body));
  std::string_view status;
  if (doc["status"].get_string().get(status)) return InvalidArgument("{}: status: missing or not a string", source);
  if (status != "success") {
    std::string_view type = "?", error = "?";
    if (doc["errorType"].get_string().get(type)) type = "?";
    if (doc["error"].get_string().get(error)) error = "?";
    return InvalidArgument("{}: status '{}': {}: {}", source, Excerpt(status), Excerpt(type, 300), Excerpt(error, 300));
  }
  for (const auto& [name, into] : {std::pair<const char*, std::vector<std::string>*>{"warnings", &notes.warnings},
                                   std::pair<const char*, std::vector<std::string>*>{"infos", &notes.infos}}) {
    dom::array items;
    if (doc[name].get_array().get(items)) continue;  // absent or null: none
    for (const dom::element item : items) {
      std::string_view text;
      if (!item.get_string().get(text)) into->emplace_back(text);
    }
  }
  dom::array data;
  if (doc["data"].get_array().get(data)) return InvalidArgument("{}: data: missing or not an array", source);
  std::vector<std::map<std::string, std::string>> out;
  std::size_t i = 0;
  for (const dom::element series : data) {
    dom::object labels;
    if (series.get_object().get(labels))
      return InvalidArgument("{}: data[{}]: expected an object, got {}", source, i, TypeName(series.type()));
    auto& into = out.emplace_back();
    for (const dom::key_value_pair field : labels) {
      std::string_view text;
      if (field.value.get_string().get(text))
        return InvalidArgument("{}: data[{}][\"{}\"]: expected a string, got {}", source, i, Excerpt(field.key),
                               TypeName(field.value.type()));
      into[std::string(field.key)] = std::string(text);
    }
    ++i;
  }
  return out;
}

}  // namespace gpufit
