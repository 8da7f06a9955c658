// corral::Error: the one exception type the library throws.
//
// It lives in data/, the bottom layer, because every part reports errors the same way.
// The message is complete and user-facing (what, where as file:line, what was expected);
// the CLI prints it as is, so embedding users and CLI users read the same words.
#pragma once

#include <stdexcept>
#include <string>

namespace corral {

enum class ErrorCode {
  kBadInput,       // a data or model file is malformed or missing
  kBadConfig,      // a configuration value is out of range or inconsistent
  kDiverged,       // training produced NaN or Inf
  kWorkerFailed,   // a worker thread threw; the first error is reported
  kIo,             // reading or writing a file failed
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}

  ErrorCode code() const noexcept { return code_; }

  // True for errors caused by what the user gave us (CLI exit status 2).
  bool IsUsageError() const noexcept {
    return code_ == ErrorCode::kBadInput || code_ == ErrorCode::kBadConfig ||
           code_ == ErrorCode::kIo;
  }

 private:
  ErrorCode code_;
};

}  // namespace corral
