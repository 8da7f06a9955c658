// Shared by the fuzz targets whose readers take a path (caches, IDX, topology files): the
// input is written to a scratch file of this process, read back through the public API, and
// nothing but corral::Error may escape. Any crash, sanitizer report or abort is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

namespace corral::fuzz {

// A path under $TMPDIR (or /tmp) unique to this process and `tag`.
inline std::string ScratchPath(std::string_view tag) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/corral-fuzz-" +
         std::to_string(::getpid()) + "-" + std::string(tag);
}

inline void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write the scratch file %s\n", path.c_str());
    std::abort();
  }
}

}  // namespace corral::fuzz
