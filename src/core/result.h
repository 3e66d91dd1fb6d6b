// Result<T> and Status: how every module boundary reports failure. The ErrorKind decides both the retry policy
// of the engine and the process exit code, so a failure is classified once, where it is understood best.
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace skippr {

enum class ErrorKind {
  kConfig,       // the user's configuration or arguments are wrong: exit 2, nothing read or written
  kLocked,       // another process holds the pipeline: exit 3
  kCorruption,   // the WAL or the state failed a check: exit 70, change nothing
  kUnavailable,  // a definite, retryable failure (server down, file locked): safe to retry
  kUnknownOutcome,  // the write may or may not have happened: retry only with the same BatchId
  kFatalIo,      // fsync or another durability step failed: stop the process at once, never retry
  kFenced,       // another process took the pipeline's lease over: stop at once, commit and land nothing more (75)
  kDiskFull,     // ENOSPC: stop intake, exit 75, nothing committed is lost
  kBadInput,     // a record cannot be read; goes to the dead-letter file
  kInternal,     // a bug
};

struct Error {
  ErrorKind kind = ErrorKind::kInternal;
  std::string message;
};

template <class T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

inline std::unexpected<Error> fail(ErrorKind kind, std::string message) {
  return std::unexpected(Error{kind, std::move(message)});
}
inline Status ok() { return {}; }

// The process exit code for a failure of this kind (see PRODUCT.md).
int exit_code_for(ErrorKind kind);
const char* to_string(ErrorKind kind);

namespace exit_code {
inline constexpr int kOk = 0;
inline constexpr int kUsage = 2;
inline constexpr int kLocked = 3;
inline constexpr int kCorruption = 70;
inline constexpr int kRetryLater = 75;
}  // namespace exit_code

}  // namespace skippr

// Propagates the error of a Status/Result expression out of the calling function.
#define SKIPPR_TRY(expr)                                               \
  do {                                                                 \
    auto&& skippr_try_result_ = (expr);                                \
    if (!skippr_try_result_) return std::unexpected(skippr_try_result_.error()); \
  } while (0)
