// Losses of the linear models, as functions of the margin m = <w, x> and the label.
#pragma once

#include <algorithm>
#include <cmath>
#include <string_view>

#include <corral/model.h>

namespace corral {

// Binary labels: > 0 is the positive class (so -1/+1 and 0/1 files both work).
inline float BinarySign(float label) { return label > 0 ? 1.0f : -1.0f; }

// log(1 + exp(-z)) without overflow.
inline double LogLoss(double z) {
  return z > 0 ? std::log1p(std::exp(-z)) : -z + std::log1p(std::exp(z));
}

// Binary logistic regression: log(1 + exp(-y m)).
struct LogisticLoss {
  static constexpr Task kTask = Task::kBinary;
  static constexpr std::string_view kName = "logistic";
  static double Value(float m, float label) { return LogLoss(double{BinarySign(label)} * m); }
  // d/dm = -y / (1 + exp(y m))
  static float Derivative(float m, float label) {
    const float y = BinarySign(label);
    return -y / (1.0f + std::exp(y * m));
  }
  // P(y = +1 | x)
  static float Predict(float m) { return 1.0f / (1.0f + std::exp(-m)); }
};

// Linear SVM: max(0, 1 - y m) (LIBLINEAR's L1-loss SVM, -s 3).
struct HingeLoss {
  static constexpr Task kTask = Task::kBinary;
  static constexpr std::string_view kName = "hinge";
  static double Value(float m, float label) {
    return std::max(0.0, 1.0 - double{BinarySign(label)} * m);
  }
  static float Derivative(float m, float label) {
    const float y = BinarySign(label);
    return y * m < 1.0f ? -y : 0.0f;
  }
  static float Predict(float m) { return m; }  // the signed margin
};

// Least squares: (m - y)^2 / 2.
struct SquaredLoss {
  static constexpr Task kTask = Task::kRegression;
  static constexpr std::string_view kName = "squared";
  static double Value(float m, float label) {
    const double r = double{m} - label;
    return 0.5 * r * r;
  }
  static float Derivative(float m, float label) { return m - label; }
  static float Predict(float m) { return m; }
};

}  // namespace corral
