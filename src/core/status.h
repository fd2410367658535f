// Status and Result<T>: how every recoverable error travels through CAI (no exceptions across layers).
#pragma once

#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace cai {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // the caller passed something wrong (bad flag, bad request)
  kNotFound,           // a file, tensor, key or token that should exist does not
  kCorrupt,            // a file is malformed or truncated
  kUnsupported,        // a valid thing this build cannot do (dtype, architecture, op on a backend)
  kOutOfMemory,        // host or device allocation failed
  kIo,                 // the OS refused (open, mmap, read)
  kResourceExhausted,  // a queue or pool is full right now (HTTP 429)
  kUnavailable,        // not ready yet / shutting down (HTTP 503)
  kCancelled,          // the caller cancelled
  kInternal,           // a bug
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corrupt: tensor 'x' ..." — for logs and CLI errors.
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <class... Args>
Status make_status(StatusCode code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}
#define CAI_STATUS_FACTORY(fn, code)                                  \
  template <class... Args>                                            \
  Status fn(fmt::format_string<Args...> f, Args&&... args) {          \
    return Status(code, fmt::format(f, std::forward<Args>(args)...)); \
  }
CAI_STATUS_FACTORY(invalid_argument, StatusCode::kInvalidArgument)
CAI_STATUS_FACTORY(not_found, StatusCode::kNotFound)
CAI_STATUS_FACTORY(corrupt, StatusCode::kCorrupt)
CAI_STATUS_FACTORY(unsupported, StatusCode::kUnsupported)
CAI_STATUS_FACTORY(out_of_memory, StatusCode::kOutOfMemory)
CAI_STATUS_FACTORY(io_error, StatusCode::kIo)
CAI_STATUS_FACTORY(resource_exhausted, StatusCode::kResourceExhausted)
CAI_STATUS_FACTORY(unavailable, StatusCode::kUnavailable)
CAI_STATUS_FACTORY(cancelled, StatusCode::kCancelled)
CAI_STATUS_FACTORY(internal_error, StatusCode::kInternal)
#undef CAI_STATUS_FACTORY

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {
    if (std::get<Status>(v_).ok()) v_ = Status(StatusCode::kInternal, "Result built from an OK status");
  }
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace cai

#define CAI_CONCAT_INNER(a, b) a##b
#define CAI_CONCAT(a, b) CAI_CONCAT_INNER(a, b)

// Return the Status of `expr` if it failed.
#define CAI_TRY(expr)                  \
  do {                                 \
    ::cai::Status cai_st_ = (expr);    \
    if (!cai_st_.ok()) return cai_st_; \
  } while (0)

// `lhs = value of expr` or return its Status.
#define CAI_ASSIGN_OR_RETURN(lhs, expr) CAI_ASSIGN_OR_RETURN_IMPL(CAI_CONCAT(cai_res_, __LINE__), lhs, expr)
#define CAI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

// Programmer invariants only; never for bad input.
#define CAI_CHECK(cond, ...)                                                                  \
  do {                                                                                        \
    if (!(cond)) ::cai::check_failed(#cond, __FILE__, __LINE__, fmt::format("" __VA_ARGS__)); \
  } while (0)
