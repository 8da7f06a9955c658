// `corral predict`: a saved model's output for every row of a data file, as CSV or JSON lines,
// streamed: the input is read in pieces (corral::ForEachPiece) and each piece's predictions
// are written before the next is read, so memory stays bounded whatever the input's size.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <corral/corral.h>
#include <corral/load.h>
#include <corral/predict.h>
#include <corral/write.h>

#include "commands.h"

namespace corral::cli {
namespace {

// Text of a piece's rows held at once: its parse, predictions and output stay within a small
// multiple of it.
constexpr std::size_t kPieceBytes = 32u << 20;

struct PredictOptions {
  std::string model_file;
  std::string data;
  std::string format = "auto";
  std::string output = "-";
  std::string output_format = "csv";
};

// What one row's output holds, by model kind (README, "corral predict").
enum class Shape {
  kBinary,    // logistic, hinge: label (+1/-1) and score (the margin); logistic: probability
  kValue,     // squared: the predicted value
  kRating,    // mf: the predicted rating
  kPerClass,  // softmax, mlp: label (the likeliest class) and every class's probability
};

Shape ShapeOf(ModelKind kind) {
  switch (kind) {
    case ModelKind::kSquared:
      return Shape::kValue;
    case ModelKind::kMf:
      return Shape::kRating;
    case ModelKind::kSoftmax:
    case ModelKind::kMlp:
      return Shape::kPerClass;
    case ModelKind::kLogistic:
    case ModelKind::kHinge:
      break;
  }
  return Shape::kBinary;
}

// Shortest text that reads back as the same float.
void Put(std::string& out, float v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, ec == std::errc() ? end : buf);
}

class RowWriter {
 public:
  RowWriter(const ModelInfo& info, bool json) : info_(info), shape_(ShapeOf(info.kind)), json_(json) {
    for (const float c : info.classes) {
      std::string name;
      Put(name, c);
      class_names_.push_back(std::move(name));
    }
  }

  // The CSV header line (JSON lines have none).
  std::string Header() const {
    if (json_) return "";
    switch (shape_) {
      case Shape::kValue:
        return "value\n";
      case Shape::kRating:
        return "rating\n";
      case Shape::kBinary:
        return info_.kind == ModelKind::kLogistic ? "label,score,probability\n" : "label,score\n";
      case Shape::kPerClass: {
        std::string h = "label";
        for (const std::string& c : class_names_) h += ",p_" + c;
        return h + "\n";
      }
    }
    return "";
  }

  // Appends the rows of `p` to `out`.
  void Rows(const Predictions& p, std::string& out) const {
    for (std::size_t r = 0; r < p.rows; ++r) {
      const float* v = p.values.data() + r * p.columns;
      if (json_) out += '{';
      switch (shape_) {
        case Shape::kValue:
        case Shape::kRating:
          Field(shape_ == Shape::kValue ? "value" : "rating", out, true);
          Put(out, v[0]);
          break;
        case Shape::kBinary:
          Field("label", out, true);
          out += v[0] > 0 ? "1" : "-1";  // the evaluation's rule: margin > 0 is the positive class
          Field("score", out, false);
          Put(out, v[0]);
          if (info_.kind == ModelKind::kLogistic) {
            Field("probability", out, false);
            Put(out, static_cast<float>(1.0 / (1.0 + std::exp(-double{v[0]}))));
          }
          break;
        case Shape::kPerClass: {
          const auto best = static_cast<std::size_t>(std::max_element(v, v + p.columns) - v);
          Field("label", out, true);
          out += class_names_[best];
          if (json_) out += ",\"probabilities\":{";
          for (std::size_t c = 0; c < p.columns; ++c) {
            if (json_) {
              out += (c == 0 ? "\"" : ",\"") + class_names_[c] + "\":";
            } else {
              out += ',';
            }
            Put(out, v[c]);
          }
          if (json_) out += '}';
          break;
        }
      }
      out += json_ ? "}\n" : "\n";
    }
  }

 private:
  void Field(const char* name, std::string& out, bool first) const {
    if (json_) {
      out += first ? "\"" : ",\"";
      out += name;
      out += "\":";
    } else if (!first) {
      out += ',';
    }
  }

  const ModelInfo& info_;
  Shape shape_;
  bool json_;
  std::vector<std::string> class_names_;
};

void Write(std::FILE* out, const std::string& text, const std::string& name) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), out) != text.size()) {
    throw Error(ErrorCode::kIo, "--output " + name + ": write failed");
  }
}

int RunPredict(const PredictOptions& o) {
  const bool json = o.output_format == "jsonl";
  const bool to_stdout = o.output == "-";
  if (!to_stdout) CheckOutputPath("--output", o.output);
  const SavedModel model = LoadModel(o.model_file);
  // As `corral eval` loads: the model's dimension (a file with more features is refused) and,
  // for mf, its id mapping.
  LoadOptions load{.format = ParseDataFormat(o.format),
                   .num_features = model.info.kind == ModelKind::kMf ? 0 : model.info.num_features};
  load.ratings_mapping = RatingsMapping(model.info);

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(nullptr, &std::fclose);
  std::FILE* out = stdout;
  if (!to_stdout) {
    file.reset(std::fopen(o.output.c_str(), "w"));
    if (!file) throw Error(ErrorCode::kIo, "--output " + o.output + ": cannot be opened for writing");
    out = file.get();
  }
  const RowWriter writer(model.info, json);
  Write(out, writer.Header(), o.output);
  std::string text;
  ForEachPiece(o.data, load, kPieceBytes, [&](const Dataset& piece, std::size_t) {
    text.clear();
    writer.Rows(PredictModel(model, piece), text);
    Write(out, text, o.output);
  });
  if (std::fflush(out) != 0) throw Error(ErrorCode::kIo, "--output " + o.output + ": write failed");
  if (file && std::fclose(file.release()) != 0) {
    throw Error(ErrorCode::kIo, "--output " + o.output + ": write failed");
  }
  return 0;
}

}  // namespace

Action AddPredictCommand(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  CLI::App* cmd = app.add_subcommand(
      "predict", "Per-row predictions of a saved model (corral train --save), streamed over the data");
  cmd->add_option("--model", o->model_file, "Model file written by corral train --save")->required();
  cmd->add_option("--data", o->data, "Data to predict, read in pieces (any size)")->required();
  AddFormatOption(cmd, o->format);
  cmd->add_option("--output", o->output, "Where to write the predictions (- = stdout)")
      ->capture_default_str();
  cmd->add_option("--output-format", o->output_format,
                  "csv (a header line, then one line per row) or jsonl (one JSON object per row). "
                  "Columns: logistic label,score,probability; hinge label,score (label +1/-1, "
                  "score the margin); squared value; mf rating; softmax, mlp label and p_CLASS "
                  "per class")
      ->check(CLI::IsMember({"csv", "jsonl"}))
      ->capture_default_str();
  return [o] { return RunPredict(*o); };
}

}  // namespace corral::cli
