// `corral eval`: a saved model's loss and accuracy or RMSE on a dataset.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include <corral/corral.h>
#include <corral/load.h>

#include "commands.h"

namespace corral::cli {
namespace {

struct EvalOptions {
  std::string model_file;
  std::string data;
  std::string format = "auto";
  bool json = false;
};

int RunEval(const EvalOptions& o) {
  const SavedModel model = LoadModel(o.model_file);
  // The model's dimension: a file that never reaches its highest feature still evaluates, one
  // with more features than the model was trained on is refused.
  LoadOptions load{.format = ParseDataFormat(o.format),
                   .num_features = model.info.kind == ModelKind::kMf ? 0 : model.info.num_features};
  load.ratings_mapping = RatingsMapping(model.info);
  const Dataset data = LoadDataset(o.data, load);
  const Evaluation e = EvaluateModel(model, data);
  if (o.json) {
    nlohmann::json j = {{"model", ToString(model.info.kind)}, {"data", o.data},
                        {"rows", e.rows}, {"loss", e.loss}, {"objective", e.objective}};
    if (e.accuracy) j["accuracy"] = *e.accuracy;
    if (e.rmse) j["rmse"] = *e.rmse;
    if (e.auc) j["auc"] = *e.auc;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("model      %s (%s)\n", o.model_file.c_str(), std::string(ToString(model.info.kind)).c_str());
    std::printf("data       %s (%zu rows)\n", o.data.c_str(), e.rows);
    std::printf("loss       %.6f\n", e.loss);
    std::printf("objective  %.6f\n", e.objective);
    if (e.accuracy) std::printf("accuracy   %.4f\n", *e.accuracy);
    if (e.rmse) std::printf("rmse       %.4f\n", *e.rmse);
    if (e.auc) std::printf("auc        %.4f\n", *e.auc);
  }
  return 0;
}

}  // namespace

Action AddEvalCommand(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate a saved model (corral train --save) on data");
  cmd->add_option("--model-file", o->model_file, "Model file written by corral train --save")->required();
  cmd->add_option("--data", o->data, "Data to evaluate on")->required();
  AddFormatOption(cmd, o->format);
  cmd->add_flag("--json", o->json, "Print one JSON object");
  return [o] { return RunEval(*o); };
}

}  // namespace corral::cli
