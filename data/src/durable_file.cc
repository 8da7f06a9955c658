#include "data/src/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <corral/error.h>
#include <corral/write.h>

namespace corral {
namespace {

// The directory holding `path` ("." for a bare name) and the name inside it.
std::pair<std::string, std::string> SplitPath(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

std::string Why(int error) { return error != 0 ? std::strerror(error) : "unknown error"; }

}  // namespace

namespace detail {

DurableFile::DurableFile(std::string path, std::string what)
    : path_(std::move(path)), what_(std::move(what)) {
  const auto [dir, name] = SplitPath(path_);
  temp_ = (dir == "/" ? "" : dir) + "/." + name + ".tmp.XXXXXX";
  fd_ = mkstemp(temp_.data());  // O_CREAT | O_EXCL, mode 0600, a random suffix
  if (fd_ < 0) Fail("cannot create a temporary file beside it");
}

DurableFile::~DurableFile() {
  if (fd_ >= 0) {
    close(fd_);
    unlink(temp_.c_str());
  }
}

void DurableFile::Write(std::span<const char> bytes) {
  const char* data = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t done = write(fd_, data, left);
    if (done < 0) {
      if (errno == EINTR) continue;
      Fail("write failed");
    }
    data += done;
    left -= static_cast<std::size_t>(done);
  }
}

void DurableFile::WriteAt(std::uint64_t offset, std::span<const char> bytes) {
  if (pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset)) !=
      static_cast<ssize_t>(bytes.size())) {
    Fail("write failed");
  }
}

void DurableFile::ReadAt(std::uint64_t offset, std::span<char> bytes) const {
  while (!bytes.empty()) {
    const ssize_t done = pread(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (done < 0 && errno == EINTR) continue;
    if (done == 0) errno = EIO;  // the file ends early: it was changed under us
    if (done <= 0) Fail("cannot read back what was written");
    bytes = bytes.subspan(static_cast<std::size_t>(done));
    offset += static_cast<std::uint64_t>(done);
  }
}

void DurableFile::Commit() {
  // mkstemp made the file 0600; readable by all like the files it replaces (not 0666 & ~umask:
  // reading the umask means setting it, which races with other threads creating files).
  if (fchmod(fd_, 0644) != 0 || fsync(fd_) != 0) Fail("sync failed");
  const int fd = std::exchange(fd_, -1);
  if (close(fd) != 0) {
    const int saved = errno;
    unlink(temp_.c_str());
    errno = saved;
    Fail("close failed");
  }
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int saved = errno;
    unlink(temp_.c_str());
    errno = saved;
    Fail("cannot rename the temporary file into place");
  }
  const int dir = open(SplitPath(path_).first.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) Fail("cannot open its directory to sync it");
  const bool synced = fsync(dir) == 0;
  const int saved = errno;
  close(dir);
  errno = saved;
  if (!synced) Fail("directory sync failed");
}

void DurableFile::Fail(const std::string& step) const {
  throw Error(ErrorCode::kIo, "cannot write " + what_ + " " + path_ + ": " + step + ": " + Why(errno));
}

}  // namespace detail

void CheckOutputPath(std::string_view flag, const std::string& path) {
  if (path.empty()) return;
  const auto bad = [&](const std::string& what) {
    throw Error(ErrorCode::kBadConfig, std::string(flag) + " " + path + ": " + what);
  };
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) bad("is a directory, expected a file name");
    const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);  // no O_TRUNC: only a check
    if (fd < 0) bad("cannot be written: " + Why(errno));
    close(fd);
    if (!S_ISREG(st.st_mode)) return;  // a device (/dev/null) is written in place
  }
  const std::string dir = SplitPath(path).first;
  if (stat(dir.c_str(), &st) != 0) bad("the directory " + dir + " does not exist");
  if (!S_ISDIR(st.st_mode)) bad(dir + " is not a directory");
  // The writers create a file beside the target: try exactly that.
  std::string probe = (dir == "/" ? "" : dir) + "/.corral-check.XXXXXX";
  const int fd = mkstemp(probe.data());
  if (fd < 0) bad("cannot create a file in " + dir + ": " + Why(errno));
  close(fd);
  unlink(probe.c_str());
}

}  // namespace corral
