#!/usr/bin/env bash
# Public headers (data/, models/, topologies/, engine/ include/corral/*.h): each compiles on its
# own, seeing only the public include folders, and none includes a third-party header
# (oneTBB, Boost, Eigen, hwloc, nlohmann-json, CLI11): those stay private to the library. Only
# <corral/mpi.h> includes mpi.h (for programs that use MPI); it is compiled with MPI's flags
# (-isystem FOLDER, -D...) when the build has MPI, else skipped.
#   public_headers_test.sh CXX SOURCE_DIR [MPI_FLAG...]
set -euo pipefail
cxx="$1"
src="$2"
shift 2
mpi_flags=("$@")
includes=()
for part in data models topologies engine; do includes+=("-I$src/$part/include"); done

status=0
count=0
for header in "$src"/{data,models,topologies,engine}/include/corral/*.h; do
  name="corral/$(basename "$header")"
  count=$((count + 1))
  if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](tbb/|oneapi/|boost/|Eigen/|hwloc|nlohmann/|CLI/)' "$header"; then
    echo "FAIL: $name includes a third-party header (above)" >&2
    status=1
  fi
  if [ "$name" != corral/mpi.h ] && grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<mpi' "$header"; then
    echo "FAIL: $name includes mpi.h (above): only <corral/mpi.h> may" >&2
    status=1
  fi
  flags=("${includes[@]}")
  if [ "$name" = corral/mpi.h ]; then
    if [ ${#mpi_flags[@]} -eq 0 ]; then
      echo "skipped <$name>: this build has no MPI"
      continue
    fi
    flags+=("${mpi_flags[@]}")
  fi
  if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$header"; then
    echo "FAIL: $name includes an internal header (above)" >&2
    status=1
  fi
  if ! printf '#include <%s>\n#include <%s>\n' "$name" "$name" |
       "$cxx" -std=c++20 -fsyntax-only -Wall -Wextra -Werror "${flags[@]}" -x c++ -; then
    echo "FAIL: <$name> does not compile on its own" >&2
    status=1
  fi
done
echo "checked $count public headers"
exit $status
