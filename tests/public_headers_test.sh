#!/usr/bin/env bash
# Public headers (data/, models/, topologies/, engine/ include/corral/*.h): each compiles on its
# own, seeing only the public include folders, and none includes a third-party header
# (oneTBB, Boost, Eigen, hwloc, nlohmann-json, CLI11, MPI): those stay private to the library.
#   public_headers_test.sh CXX SOURCE_DIR
set -euo pipefail
cxx="$1"
src="$2"
includes=()
for part in data models topologies engine; do includes+=("-I$src/$part/include"); done

status=0
count=0
for header in "$src"/{data,models,topologies,engine}/include/corral/*.h; do
  name="corral/$(basename "$header")"
  count=$((count + 1))
  if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](tbb/|oneapi/|boost/|Eigen/|hwloc|nlohmann/|CLI/|mpi)' "$header"; then
    echo "FAIL: $name includes a third-party header (above)" >&2
    status=1
  fi
  if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$header"; then
    echo "FAIL: $name includes an internal header (above)" >&2
    status=1
  fi
  if ! printf '#include <%s>\n#include <%s>\n' "$name" "$name" |
       "$cxx" -std=c++20 -fsyntax-only -Wall -Wextra -Werror "${includes[@]}" -x c++ -; then
    echo "FAIL: <$name> does not compile on its own" >&2
    status=1
  fi
done
echo "checked $count public headers"
exit $status
