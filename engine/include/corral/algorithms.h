// The training algorithms as the CLI lists them, and the list itself (for tools and tests that
// run every algorithm).
#pragma once

#include <string>
#include <vector>

#include <corral/kinds.h>

namespace corral {

// One line per algorithm, "  name  what it does; the flags it reads", for --algo's help.
std::string AlgorithmHelp();

// Every algorithm, in the order of the help text.
std::vector<Algorithm> Algorithms();

}  // namespace corral
