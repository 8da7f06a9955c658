// The named axes of a run: algorithm, model, placement. Each has the spelling the CLI takes.
#pragma once

#include <string_view>

namespace corral {

enum class Algorithm {
  kHogwild,  // lock-free shared model, relaxed atomic reads and writes (Niu et al. 2011)
};

enum class ModelKind {
  kLogistic,  // binary logistic regression
  kHinge,     // linear SVM (hinge loss)
  kSquared,   // least squares regression
  kSoftmax,   // multinomial logistic regression
  kMf,        // matrix factorisation of ratings
  kMlp,       // multilayer perceptron (ReLU hidden layers, softmax output)
};

enum class Pin {
  kCompact,  // worker i on the i-th hardware thread, filling cores then packages
  kScatter,  // workers spread across packages and cores first
  kNone,     // leave placement to the OS
};

// Names as the CLI spells them; Parse* throw corral::Error (kBadConfig) listing valid values.
std::string_view ToString(Algorithm a);
std::string_view ToString(ModelKind m);
std::string_view ToString(Pin p);
Algorithm ParseAlgorithm(std::string_view name);
ModelKind ParseModel(std::string_view name);
Pin ParsePin(std::string_view name);

}  // namespace corral
