// The training algorithms as the CLI lists them.
#pragma once

#include <string>

namespace corral {

// One line per algorithm, "  name  what it does; the flags it reads", for --algo's help.
std::string AlgorithmHelp();

}  // namespace corral
