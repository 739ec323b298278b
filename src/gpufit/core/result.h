// Result<T>: a value or an Error, the project's look-alike of C++23 std::expected.
//
// Three kinds of "no" stay apart (see STYLE.md): bad input is an Error returned in a
// Result; "does not fit" is a normal answer of the caller's own type; a broken
// invariant is our bug and is an assert.
#pragma once

#include <fmt/format.h>

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace gpufit {

enum class Code {
  kInvalidArgument,     // the input is malformed or out of range: exit code 2
  kNotFound,            // a named thing (file, GPU model, pod) does not exist: exit code 2
  kFailedPrecondition,  // valid input that does not suit the state: exit code 2
  kUnavailable,         // a server could not be reached, timed out or kept failing: exit code 2
  kInternal,            // our bug or the system failed (disk full): exit code 1
};

// What went wrong, in words that say what to fix.
struct Error {
  Code code = Code::kInternal;
  std::string message;
};

// The error side of a Result, as std::unexpected is for std::expected.
struct Unexpected {
  Error error;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit like std::expected
  Result(Unexpected e) : v_(std::move(e.error)) {}  // NOLINT
  Result(Error e) : v_(std::move(e)) {}             // NOLINT

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& operator*() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& operator*() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& operator*() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  T* operator->() {
    assert(has_value());
    return &std::get<0>(v_);
  }
  const T* operator->() const {
    assert(has_value());
    return &std::get<0>(v_);
  }
  const Error& error() const {
    assert(!has_value());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Unexpected e) : error_(std::move(e.error)), ok_(false) {}  // NOLINT
  Result(Error e) : error_(std::move(e)), ok_(false) {}             // NOLINT
  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

template <class... Args>
Error InvalidArgument(fmt::format_string<Args...> f, Args&&... args) {
  return {Code::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...)};
}
template <class... Args>
Error NotFound(fmt::format_string<Args...> f, Args&&... args) {
  return {Code::kNotFound, fmt::format(f, std::forward<Args>(args)...)};
}
template <class... Args>
Error FailedPrecondition(fmt::format_string<Args...> f, Args&&... args) {
  return {Code::kFailedPrecondition, fmt::format(f, std::forward<Args>(args)...)};
}
template <class... Args>
Error Unavailable(fmt::format_string<Args...> f, Args&&... args) {
  return {Code::kUnavailable, fmt::format(f, std::forward<Args>(args)...)};
}
template <class... Args>
Error Internal(fmt::format_string<Args...> f, Args&&... args) {
  return {Code::kInternal, fmt::format(f, std::forward<Args>(args)...)};
}

// The process exit code for an error: 2 for bad input or usage, 1 for internal errors.
constexpr int ExitCodeFor(Code code) { return code == Code::kInternal ? 1 : 2; }

}  // namespace gpufit
