// DurableFile: the one way Corral replaces a file (models, caches, text datasets), so that a
// crash, a SIGKILL or a power loss leaves under `path` either the old file or the complete
// new one, never a torn or missing one:
//   1. a temporary file beside `path` (same directory, so the rename stays on one file
//      system), made by mkstemp: O_EXCL and an unpredictable name, so no other process can
//      plant or predict it;
//   2. the bytes written, then fsync of the file (its data is on disk before its name is);
//   3. rename over `path` (atomic), then fsync of the directory (the rename itself is on disk).
// A writer that fails or is destroyed before Commit() removes its temporary file; one killed
// leaves a ".NAME.tmp.XXXXXX" file beside the target, never a damaged target.
//
// Thread safety: owner-only.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace corral::detail {

class DurableFile {
 public:
  // Creates the temporary file beside `path`. `what` names the content in errors ("model
  // file"): every failure throws corral::Error (kIo) "cannot write <what> <path>: <step>: <why>".
  DurableFile(std::string path, std::string what);
  ~DurableFile();  // removes the temporary file unless committed
  DurableFile(const DurableFile&) = delete;
  DurableFile& operator=(const DurableFile&) = delete;

  void Write(std::span<const char> bytes);
  // Overwrites bytes already written (a header field filled in last, like a checksum).
  void WriteAt(std::uint64_t offset, std::span<const char> bytes);
  // Reads back bytes written before Commit() (a scratch file that is never committed).
  void ReadAt(std::uint64_t offset, std::span<char> bytes) const;

  // Syncs, closes and renames the temporary file onto `path`, then syncs the directory.
  void Commit();

 private:
  [[noreturn]] void Fail(const std::string& step) const;

  std::string path_;
  std::string what_;
  std::string temp_;
  int fd_ = -1;
};

}  // namespace corral::detail
