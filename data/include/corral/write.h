// Writing datasets as text (the inverse of the readers in <corral/load.h>) and choosing the
// format from a path. Floats are written in their shortest exact form (std::to_chars), so a
// write followed by a read gives back the same bits. Every writer goes through a temporary
// file, synced and renamed into place (a crash leaves the old file or the new one); failures
// throw corral::Error (kIo) naming the path.
#pragma once

#include <string>
#include <string_view>

#include <corral/dataset.h>

namespace corral {

// `label idx:val ...`, 1-based indices; dense sets write every value (explicit zeros kept).
void WriteLibsvm(const Dataset& data, const std::string& path);

// `user<TAB>item<TAB>rating` with the original ids. \pre data.ratings() != nullptr
void WriteRatings(const Dataset& data, const std::string& path);

// `label,x1,...,xF` (dense view of any set), with a header line when `header`.
void WriteCsv(const Dataset& data, const std::string& path, bool header = false);

// By path and content: ".cache" -> WriteCache; a ratings set -> WriteRatings; ".csv" ->
// WriteCsv; anything else -> WriteLibsvm.
void WriteDataset(const Dataset& data, const std::string& path);

// Checks, before a long run, that an output given by `flag` (--save, --metrics) can be written
// at `path`: not a directory, its directory exists, and a file can be created there (every
// writer first creates a temporary file beside its target). Throws corral::Error (kBadConfig)
// "<flag> <path>: <what is wrong>". An empty path (no output) passes.
void CheckOutputPath(std::string_view flag, const std::string& path);

}  // namespace corral
