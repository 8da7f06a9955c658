// Reading LIBSVM / SVMlight text files into a Dataset.
//
// Accepted: `label idx:val idx:val ...` with float labels (-1/+1, 0/1, 1.0, class ids),
// 1-based indices (0-based with `zero_based`), strictly increasing per row, `qid:N` tokens
// (ignored), `#` comments, blank lines, trailing spaces and CRLF line ends, values in
// scientific notation, explicit zeros (kept). Anything else is rejected with
// corral::Error naming the file, the line and what was expected.
//
// These are the LIBSVM shortcuts of <corral/load.h>: ReadLibsvm is LoadDataset with
// format = kLibsvm (parallel, gzip-aware, and an empty file is an error); ParseLibsvm keeps
// its stream contract (an empty stream is an empty dataset).
#pragma once

#include <cstddef>
#include <istream>
#include <string>

#include <corral/dataset.h>

namespace corral {

struct LibsvmOptions {
  // Feature dimension; 0 means the largest index seen. When given, an index beyond it is an
  // error, and a file that never reaches it still has this dimension.
  std::size_t num_features = 0;
  // Indices start at 0 instead of LIBSVM's 1.
  bool zero_based = false;
};

// Reads a LIBSVM file. Throws corral::Error (kIo when it cannot be read, kBadInput with
// "path:line: ..." when malformed).
Dataset ReadLibsvm(const std::string& path, const LibsvmOptions& options = {});

// Parses LIBSVM text from a stream; `name` is used in error messages in place of a path.
Dataset ParseLibsvm(std::istream& in, const std::string& name, const LibsvmOptions& options = {});

}  // namespace corral
