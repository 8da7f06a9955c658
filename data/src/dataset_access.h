// DatasetAccess: how the text parsers hand their arrays to a Dataset without the O(nnz)
// validation pass (internal). Only for arrays whose invariants the parser itself enforced
// while building them (row offsets from its own counts, indices checked increasing and below
// the dimension); anything read from outside (a cache, a caller's arrays) goes through the
// validating Dataset::Wrap* instead. The fuzz targets re-validate every parse result.
#pragma once

#include <memory>
#include <string>

#include <corral/dataset.h>

namespace corral::detail {

struct DatasetAccess {
  static Dataset WrapParsedSparse(const CsrView& csr, std::shared_ptr<const void> owner,
                                  std::string name);
};

}  // namespace corral::detail
