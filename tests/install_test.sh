#!/usr/bin/env bash
# Consuming Corral as a package, both ways (SOURCE_DIR/examples is the consumer):
#  1. cmake --install BUILD_DIR to a temporary prefix, then move the prefix (relocatable);
#  2. configure examples/ as its own project with find_package(Corral) against it, build it
#     and run every example through ctest;
#  3. a project that add_subdirectory()s Corral's source and then examples/: build the library
#     and the examples (target corral_examples) and run them.
#   install_test.sh SOURCE_DIR BUILD_DIR CXX [LAUNCHER] [BUILD_TYPE]
set -euo pipefail
src="$1"
build="$2"
cxx="$3"
launcher="${4:-}"
build_type="${5:-Release}"
[ -n "$build_type" ] || build_type=Release
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
jobs="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
common=(-G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DCMAKE_CXX_COMPILER="$cxx")
[ -z "$launcher" ] || common+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")

echo "== install"
cmake --install "$build" --prefix "$work/prefix"
mv "$work/prefix" "$work/moved"  # a relocatable package works from wherever it lands
test -f "$work/moved/lib/cmake/Corral/CorralConfig.cmake" ||
  test -f "$work/moved/lib64/cmake/Corral/CorralConfig.cmake"
test -f "$work/moved/include/corral/corral.h"
test -x "$work/moved/bin/corral"
if grep -rlE "$build|$src" "$work/moved/lib"*/cmake/Corral; then
  echo "FAIL: the installed CMake files name the build or source tree (above)" >&2
  exit 1
fi

echo "== examples against the installed package (find_package)"
cmake -S "$src/examples" -B "$work/installed" "${common[@]}" -DCMAKE_PREFIX_PATH="$work/moved"
cmake --build "$work/installed" -j "$jobs"
ctest --test-dir "$work/installed" --output-on-failure

echo "== examples with add_subdirectory(corral)"
mkdir -p "$work/consumer"
cat > "$work/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(CorralConsumer LANGUAGES CXX)
enable_testing()
add_subdirectory("$src" corral)
add_subdirectory("$src/examples" examples)
CMAKE
# Unoptimised (-O0, no debug information) and as a unity build: this build checks that the
# targets resolve and the examples run, and it compiles the whole library again. -O0 takes half
# the time -O3 takes (modes/hogwild.cc 24 s vs 44 s); a unity build (CMake's batches of 8
# sources) then cuts the library's compile CPU time by 43% (130 s vs 229 s, user + sys), since
# the sources share their heavy headers. It also checks that the library's sources compile side
# by side: two internal helpers of one name in two sources' anonymous namespaces fail here.
cmake -S "$work/consumer" -B "$work/subdir" "${common[@]}" -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_UNITY_BUILD=ON
# The library and the examples only: the CLI and the Python module are built (and tested) by the
# enclosing build already, and building them again here doubled this test's time.
cmake --build "$work/subdir" -j "$jobs" --target corral_examples
ctest --test-dir "$work/subdir" --output-on-failure -L example
echo "install test passed"
