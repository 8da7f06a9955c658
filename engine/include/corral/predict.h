// Predictions of a trained model, row by row (what the Python estimators' predict,
// predict_proba and decision_function read).
//
//   corral::Predictions p = corral::PredictModel(corral::LoadModel("run.model"), test);
//   // p.values[r * p.columns + c]
#pragma once

#include <corral/dataset.h>
#include <corral/model_file.h>

#include <cstddef>
#include <span>
#include <vector>

namespace corral {

struct Predictions {
  std::size_t rows = 0;
  std::size_t columns = 0;
  std::vector<float> values;  // rows x columns, row-major
};

// Per row of `data`, by model kind:
// - logistic, hinge: 1 column, the margin <w, x> (the decision function; > 0 is the positive
//   class; logistic's P(y=+1) is 1 / (1 + exp(-margin)));
// - squared: 1 column, the predicted value <w, x>;
// - softmax, mlp: one column per class, its probability, in ModelInfo::classes order;
// - mf: 1 column, the predicted rating of the row's (user, item) (a ratings set,
//   <corral/ratings_info.h>, with the model's mapping: LoadOptions::ratings_mapping =
//   RatingsMapping(model.info)); a user or item the model never saw gets its factors' zero.
// Features beyond the model's dimension are ignored. Rows are predicted in parallel.
// Throws corral::Error (kBadInput) when the parameters do not fit the description, or for mf
// when `data` is not a ratings set.
Predictions PredictModel(const SavedModel& model, const Dataset& data);

// The area under the ROC curve of `scores` for `labels` (> 0 is the positive class): the
// probability that a random positive scores above a random negative, ties counting half
// (Mann-Whitney U / (P N), with tied scores given their mean rank). NaN when one class is
// absent. \pre scores.size() == labels.size()
double RocAuc(std::span<const float> scores, std::span<const float> labels);

}  // namespace corral
