#include "core/result.h"

namespace skippr {

int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kConfig: return exit_code::kUsage;
    case ErrorKind::kLocked: return exit_code::kLocked;
    case ErrorKind::kCorruption: return exit_code::kCorruption;
    case ErrorKind::kUnavailable:
    case ErrorKind::kUnknownOutcome:
    case ErrorKind::kFatalIo:
    case ErrorKind::kFenced:
    case ErrorKind::kDiskFull: return exit_code::kRetryLater;
    case ErrorKind::kBadInput:
    case ErrorKind::kInternal: return 1;
  }
  return 1;
}

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kConfig: return "config";
    case ErrorKind::kLocked: return "locked";
    case ErrorKind::kCorruption: return "corruption";
    case ErrorKind::kUnavailable: return "unavailable";
    case ErrorKind::kUnknownOutcome: return "unknown-outcome";
    case ErrorKind::kFatalIo: return "fatal-io";
    case ErrorKind::kDiskFull: return "disk-full";
    case ErrorKind::kFenced: return "fenced";
    case ErrorKind::kBadInput: return "bad-input";
    case ErrorKind::kInternal: return "internal";
  }
  return "internal";
}

}  // namespace skippr
