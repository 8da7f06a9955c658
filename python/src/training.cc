// train(), its result, saved models and live snapshots.
//
// Threads: Train() runs on a thread of its own while the calling thread waits with the GIL
// released, waking every 50 ms to run Python's signal handlers (PyErr_CheckSignals). A
// KeyboardInterrupt (Ctrl-C, or _thread.interrupt_main()) asks the run to stop through
// TrainObserver::stop: the workers finish their step, Train returns after they joined, and
// the KeyboardInterrupt is raised then. Python callbacks run on the training thread, holding
// the GIL only while they run.
#include <corral/corral.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "bindings.h"

namespace py = pybind11;

namespace corral::python {
namespace {

// The CLI's flag for an option, for messages: threads -> --threads.
std::string Flag(const std::string& name) {
  std::string flag = "--" + name;
  for (char& c : flag) {
    if (c == '_') c = '-';
  }
  return flag;
}

template <typename T>
T Get(const std::string& name, py::handle value, const char* expected) {
  // bool is an int in Python: refuse it where a number is meant, as the CLI would.
  if constexpr (!std::is_same_v<T, bool>) {
    if (py::isinstance<py::bool_>(value)) {
      throw py::value_error(Flag(name) + ": expected " + expected + ", got a bool");
    }
  }
  try {
    return value.cast<T>();
  } catch (const py::cast_error&) {
    throw py::value_error(Flag(name) + ": expected " + expected + ", got " +
                          std::string(py::repr(value)));
  }
}

// An option that is a count or one of the CLI's names for special counts (auto, off).
int CountOrName(const std::string& name, py::handle value,
                const std::map<std::string, int>& names) {
  if (py::isinstance<py::str>(value)) {
    const auto spelled = value.cast<std::string>();
    const auto it = names.find(spelled);
    if (it != names.end()) return it->second;
    std::string valid;
    for (const auto& [n, v] : names) valid += (valid.empty() ? "" : ", ") + n;
    throw py::value_error(Flag(name) + ": expected an integer or one of " + valid + ", got '" +
                          spelled + "'");
  }
  return Get<int>(name, value, "an integer");
}

// The options of `corral train` (underscores for dashes) into a TrainConfig, then the same
// Validate() the CLI calls. Data flags (--data, --test, --format, --features) are train()'s
// own arguments; --save and --quiet have Python counterparts (TrainResult.save, no printing).
TrainConfig ParseOptions(const py::dict& options) {
  TrainConfig c;
  using Setter = std::function<void(const std::string&, py::handle)>;
  const std::map<std::string, Setter> setters = {
      {"model", [&](auto& n, auto v) { c.model = ParseModel(Get<std::string>(n, v, "a string")); }},
      {"algo",
       [&](auto& n, auto v) { c.algorithm = ParseAlgorithm(Get<std::string>(n, v, "a string")); }},
      {"l2",
       [&](auto& n, auto v) {
         if (!v.is_none()) c.l2 = Get<float>(n, v, "a number");
       }},
      {"threads", [&](auto& n, auto v) { c.threads = Get<int>(n, v, "an integer"); }},
      {"epochs", [&](auto& n, auto v) { c.epochs = Get<int>(n, v, "an integer"); }},
      {"batch", [&](auto& n, auto v) { c.batch = Get<int>(n, v, "an integer"); }},
      {"hidden",
       [&](auto& n, auto v) {
         if (py::isinstance<py::int_>(v)) {
           c.hidden = {Get<int>(n, v, "an integer")};
         } else {
           c.hidden = Get<std::vector<int>>(n, v, "a list of integers");
         }
       }},
      {"rank", [&](auto& n, auto v) { c.rank = Get<int>(n, v, "an integer"); }},
      {"no_bias", [&](auto& n, auto v) { c.bias = !Get<bool>(n, v, "a bool"); }},
      {"lr", [&](auto& n, auto v) { c.lr = Get<float>(n, v, "a number"); }},
      {"optimizer",
       [&](auto& n, auto v) { c.optimizer = ParseOptimizer(Get<std::string>(n, v, "a string")); }},
      {"lr_decay", [&](auto& n, auto v) { c.lr_decay = Get<float>(n, v, "a number"); }},
      {"momentum", [&](auto& n, auto v) { c.momentum = Get<float>(n, v, "a number"); }},
      {"lr_schedule",
       [&](auto& n, auto v) { c.lr_schedule = ParseLrSchedule(Get<std::string>(n, v, "a string")); }},
      {"warmup", [&](auto& n, auto v) { c.warmup = Get<double>(n, v, "a number"); }},
      {"seed",
       [&](auto& n, auto v) { c.seed = Get<std::uint64_t>(n, v, "a non-negative integer"); }},
      {"pin", [&](auto& n, auto v) { c.pin = ParsePin(Get<std::string>(n, v, "a string")); }},
      {"shuffle",
       [&](auto& n, auto v) { c.shuffle = ParseShuffle(Get<std::string>(n, v, "a string")); }},
      {"target_loss",
       [&](auto& n, auto v) {
         if (!v.is_none()) c.target_loss = Get<double>(n, v, "a number");
       }},
      {"validation",
       [&](auto& n, auto v) {
         // The CLI's spelling: a path or a fraction (a Python number is taken as one).
         if (v.is_none()) return;
         c.validation = py::isinstance<py::str>(v) || py::isinstance<std::filesystem::path>(v)
                            ? py::str(v).cast<std::string>()
                            : std::string(py::str(py::float_(Get<double>(n, v, "a path or a fraction"))));
       }},
      {"early_stop", [&](auto& n, auto v) { c.early_stop = Get<int>(n, v, "an integer"); }},
      {"metric",
       [&](auto& n, auto v) { c.metric = ParseMetric(Get<std::string>(n, v, "a string")); }},
      {"class_weight",
       [&](auto& n, auto v) {
         // The CLI's spelling: "none", "balanced" or "LABEL:W,...", through the same parser.
         c.class_weight = ParseClassWeight(v.is_none() ? std::string("none")
                                                       : Get<std::string>(n, v, "a string"));
       }},
      {"time_limit", [&](auto& n, auto v) { c.time_limit_s = Get<double>(n, v, "a number"); }},
      {"bits", [&](auto& n, auto v) { c.bits = Get<int>(n, v, "an integer"); }},
      {"model_bits", [&](auto& n, auto v) { c.model_bits = Get<int>(n, v, "an integer"); }},
      {"rounding",
       [&](auto& n, auto v) { c.rounding = ParseRounding(Get<std::string>(n, v, "a string")); }},
      {"compress", [&](auto& n, auto v) { c.compress = Get<std::string>(n, v, "a string"); }},
      {"gamma",
       [&](auto& n, auto v) {
         // The CLI's spelling: a number or 'theory', through the same parser.
         if (v.is_none()) return;
         const std::string spelled =
             py::isinstance<py::str>(v)
                 ? py::cast<std::string>(v)
                 : std::string(py::str(py::float_(Get<double>(n, v, "a number or 'theory'"))));
         c.gamma = ParseGamma(spelled);
       }},
      {"strict", [&](auto& n, auto v) { c.strict = Get<bool>(n, v, "a bool"); }},
      {"topology", [&](auto& n, auto v) { c.topology = Get<std::string>(n, v, "a string"); }},
      {"link", [&](auto& n, auto v) { c.link = Get<std::string>(n, v, "a string"); }},
      {"link_mode", [&](auto& n, auto v) { c.link_mode = Get<std::string>(n, v, "a string"); }},
      {"gossip_every",
       [&](auto& n, auto v) {
         c.gossip_every = CountOrName(n, v, {{"auto", kGossipEveryAuto}});
       }},
      {"allreduce",
       [&](auto& n, auto v) { c.allreduce = ParseAllReduce(Get<std::string>(n, v, "a string")); }},
      {"mix_order",
       [&](auto& n, auto v) { c.mix_order = ParseMixOrder(Get<std::string>(n, v, "a string")); }},
      {"group_size", [&](auto& n, auto v) { c.group_size = Get<int>(n, v, "an integer"); }},
      {"hot_coords",
       [&](auto& n, auto v) {
         c.hot_coords = CountOrName(n, v, {{"auto", -1}, {"off", 0}});
       }},
      {"hot_sync", [&](auto& n, auto v) { c.hot_sync = Get<int>(n, v, "an integer"); }},
      {"schedule",
       [&](auto& n, auto v) {
         // The CLI's spelling, "free" or "seeded:TAU", through the same parser.
         c.seeded_tau = ParseSchedule(Get<std::string>(n, v, "'free' or 'seeded:TAU'"));
       }},
      {"metrics", [&](auto& n, auto v) { c.metrics_path = Get<std::string>(n, v, "a path"); }},
      {"resume", [&](auto& n, auto v) { c.resume_path = Get<std::string>(n, v, "a path"); }},
      {"init", [&](auto& n, auto v) { c.init_path = Get<std::string>(n, v, "a path"); }},
      {"hardware", [&](auto& n, auto v) { c.hardware = Get<std::string>(n, v, "a string"); }},
      // The file --checkpoint-every writes (the CLI's --save path; Python saves through
      // TrainResult.save at the end).
      {"checkpoint", [&](auto& n, auto v) { c.checkpoint_path = Get<std::string>(n, v, "a path"); }},
      {"memory_budget",
       [&](auto& n, auto v) {
         // The CLI's spelling (512M, 4G) or a number of bytes, through the same parser.
         c.memory_budget = ParseMemoryBudget(
             py::isinstance<py::str>(v) ? py::cast<std::string>(v)
                                        : std::to_string(Get<std::int64_t>(n, v, "bytes or a size such as '4G'")));
       }},
      {"eval_every",
       [&](auto& n, auto v) {
         // The CLI's spelling: N epochs or "auto", through the same parser.
         c.eval_every = ParseEvalEvery(py::isinstance<py::str>(v) ? py::cast<std::string>(v)
                                                                  : std::to_string(Get<int>(n, v, "epochs or 'auto'")));
       }},
      {"checkpoint_every",
       [&](auto& n, auto v) {
         // The CLI's spelling: N epochs or "Ns" seconds, through the same parser.
         const std::string spelled = py::isinstance<py::str>(v)
                                         ? py::cast<std::string>(v)
                                         : std::to_string(Get<int>(n, v, "epochs or 'Ns'"));
         ParseCheckpointEvery(spelled, c);
       }},
  };
  for (const auto& [key, value] : options) {
    const auto name = key.cast<std::string>();
    const auto it = setters.find(name);
    if (it == setters.end()) {
      std::string valid;
      for (const auto& [n, s] : setters) valid += (valid.empty() ? "" : ", ") + n;
      throw py::value_error("unknown option '" + name + "' (expected one of: " + valid + ")");
    }
    it->second(name, value);
  }
  c.Validate();
  return c;
}

py::dict ToDict(const EvalPoint& p) {
  // The metrics file's names (README, "Training").
  py::dict d;
  d["epoch"] = p.epoch;
  d["step"] = p.step;
  d["wall_s"] = p.wall_s;
  d["train_s"] = p.train_s;
  d["virtual_s"] = p.virtual_s;
  d["lr"] = p.lr;
  d["train_loss"] = p.train_loss;
  d["objective"] = p.objective;
  const auto opt = [&d](const char* key, const auto& v) {
    if (v) d[key] = *v;
  };
  opt("train_acc", p.train_acc);
  opt("train_rmse", p.train_rmse);
  opt("test_loss", p.test_loss);
  opt("test_acc", p.test_acc);
  opt("test_rmse", p.test_rmse);
  opt("test_auc", p.test_auc);
  opt("validation_loss", p.validation_loss);
  opt("validation_acc", p.validation_acc);
  opt("validation_rmse", p.validation_rmse);
  opt("validation_auc", p.validation_auc);
  d["samples_per_s"] = p.samples_per_s;
  d["bytes_sent"] = p.bytes_sent;
  d["bytes_sent_max"] = p.bytes_sent_max;
  d["diverged"] = p.diverged;
  opt("gossip_every", p.gossip_every);
  opt("gossip_share", p.gossip_share);
  opt("consensus", p.consensus);
  opt("compress_rel_error", p.compress_rel_error);
  return d;
}

py::dict Summary(const TrainResult& r) {
  py::dict d;
  d["stop_reason"] = std::string(ToString(r.stop_reason));
  d["algo"] = std::string(ToString(r.algorithm));  // the mode that ran (what algo="auto" chose)
  if (!r.algorithm_reason.empty()) d["algo_reason"] = r.algorithm_reason;
  d["threads"] = r.threads;
  d["l2"] = r.l2;
  d["lr"] = r.lr;
  d["lr_searched"] = r.lr_searched;
  d["samples"] = r.samples;
  d["wall_s"] = r.wall_s;
  d["train_s"] = r.train_s;
  d["samples_per_s"] = r.samples_per_s;
  d["peak_rss_mb"] = r.peak_rss_mb;
  d["bytes_sent"] = r.bytes_sent;
  d["bytes_sent_max"] = r.bytes_sent_max;
  d["shuffle"] = std::string(ToString(r.shuffle));
  d["shuffle_copy_bytes"] = r.shuffle_copy_bytes;
  d["hot_coords"] = r.hot_coords;
  d["hot_sync"] = r.hot_sync;
  if (r.epochs_to_target) d["epochs_to_target"] = *r.epochs_to_target;
  if (r.train_s_to_target) d["train_s_to_target"] = *r.train_s_to_target;
  for (const ModeSetting& s : r.settings) {
    std::visit([&](const auto& v) { d[py::str(s.key)] = v; }, s.value);
  }
  py::list lines;
  for (const auto& [label, text] : r.summary) lines.append(py::make_tuple(label, text));
  d["lines"] = lines;
  return d;
}

// Train(), on a thread of its own; see the top of the file.
TrainResult RunTrain(const Dataset& train, const Dataset* test, const py::dict& options,
                     const py::list& callbacks, LiveModel* live) {
  const TrainConfig config = ParseOptions(options);
  std::stop_source stop;
  // Set on the training thread (a callback raised) or the calling thread (a signal), each
  // holding the GIL; read by the calling thread after the join.
  std::optional<py::error_already_set> pending;
  TrainObserver observer{.stop = stop.get_token(), .live = live};
  if (!callbacks.empty()) {
    observer.on_eval = [&](const EvalPoint& p) {
      py::gil_scoped_acquire gil;
      try {
        const py::dict metrics = ToDict(p);
        bool go_on = true;
        for (const py::handle cb : callbacks) {
          const py::object answer = cb(metrics);
          if (!answer.is_none() && !answer.cast<bool>()) go_on = false;
        }
        return go_on;
      } catch (py::error_already_set& e) {
        if (!pending) pending.emplace(std::move(e));
        return false;
      }
    };
  }

  std::mutex mutex;
  std::condition_variable finished_cv;
  bool finished = false;  // guarded by mutex: the training thread sets it last
  std::exception_ptr failure;
  TrainResult result;
  std::thread runner;
  {
    py::gil_scoped_release nogil;
    runner = std::thread([&] {
      try {
        result = Train(train, test, config, observer);
      } catch (...) {
        failure = std::current_exception();
      }
      const std::lock_guard lock(mutex);
      finished = true;
      finished_cv.notify_one();
    });
  }
  for (;;) {
    {
      py::gil_scoped_release nogil;
      std::unique_lock lock(mutex);
      if (finished_cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return finished; }))
        break;
    }
    if (!stop.stop_requested() && PyErr_CheckSignals() != 0) {
      pending.emplace();  // takes the KeyboardInterrupt (or whatever a handler raised)
      stop.request_stop();
    }
  }
  {
    py::gil_scoped_release nogil;
    runner.join();
  }
  if (failure) std::rethrow_exception(failure);
  if (pending) throw std::move(*pending);
  return result;
}

py::array ParamsView(py::object self, const std::vector<float>& params) {
  return ReadOnlyView(params.data(), params.size(), self);
}

py::dict Info(const ModelInfo& i) {
  py::dict d;
  d["kind"] = std::string(ToString(i.kind));
  d["l2"] = i.l2;
  d["num_features"] = i.num_features;
  d["classes"] = i.classes;
  d["hidden"] = i.hidden;
  d["rank"] = i.rank;
  d["users"] = i.users;
  d["items"] = i.items;
  d["mean"] = i.mean;
  return d;
}

}  // namespace

void BindTraining(py::module_& m) {
  py::class_<SavedModel>(m, "Model",
                         "A trained model: what `corral train --save` writes and `corral eval` "
                         "reads (the model file format; pickled as one).")
      .def_property_readonly(
          "params",
          [](py::object self) { return ParamsView(self, self.cast<const SavedModel&>().params); },
          "The parameters, a read-only float32 view")
      .def_property_readonly(
          "info", [](const SavedModel& s) { return Info(s.info); },
          "What the parameters mean: kind, shape, classes, l2")
      .def_property_readonly("kind",
                             [](const SavedModel& s) { return std::string(ToString(s.info.kind)); })
      .def_property_readonly("epochs_done",
                             [](const SavedModel& s) -> py::object {
                               if (!s.training) return py::none();
                               return py::int_(s.training->epochs_done);
                             })
      .def(
          "save",
          [](const SavedModel& s, const std::filesystem::path& path) {
            py::gil_scoped_release nogil;
            SaveModel(path.string(), s);
          },
          py::arg("path"), "Writes the model file (atomically), as `corral train --save` does")
      .def(
          "predict",
          [](const SavedModel& s, const Dataset& data) {
            Predictions p;
            {
              py::gil_scoped_release nogil;
              p = PredictModel(s, data);
            }
            py::array_t<float> out({p.rows, p.columns});
            std::copy(p.values.begin(), p.values.end(), out.mutable_data());
            return out;
          },
          py::arg("data"),
          "Per row: the margin (logistic, hinge), the value (squared), class probabilities "
          "(softmax, mlp; classes order) or the rating (mf); shape (rows, columns)")
      .def(
          "evaluate",
          [](const SavedModel& s, const Dataset& data) {
            Evaluation e;
            {
              py::gil_scoped_release nogil;
              e = EvaluateModel(s, data);
            }
            py::dict d;
            d["rows"] = e.rows;
            d["loss"] = e.loss;
            d["objective"] = e.objective;
            if (e.accuracy) d["accuracy"] = *e.accuracy;
            if (e.rmse) d["rmse"] = *e.rmse;
            return d;
          },
          py::arg("data"), "Loss and accuracy or RMSE, as `corral eval`");
  m.def(
      "load_model",
      [](const std::filesystem::path& path) {
        py::gil_scoped_release nogil;
        return LoadModel(path.string());
      },
      py::arg("path"), "Reads a model file (`corral train --save`, Model.save)");

  py::class_<TrainResult>(m, "TrainResult", "What train() returns")
      .def_property_readonly(
          "params",
          [](py::object self) { return ParamsView(self, self.cast<const TrainResult&>().params); },
          "The trained parameters, a read-only float32 view")
      .def_property_readonly(
          "model", [](const TrainResult& r) { return ToSavedModel(r); },
          "The model with its training state (a corral.Model)")
      .def_property_readonly(
          "history",
          [](const TrainResult& r) {
            py::list l;
            for (const EvalPoint& p : r.history) l.append(ToDict(p));
            return l;
          },
          "One metrics dict per epoch end (the metrics file's fields)")
      .def_property_readonly("summary", &Summary, "The run's summary as a dict")
      .def_readonly("warnings", &TrainResult::warnings)
      .def_property_readonly(
          "stop_reason", [](const TrainResult& r) { return std::string(ToString(r.stop_reason)); })
      .def(
          "save",
          [](const TrainResult& r, const std::filesystem::path& path) {
            const SavedModel s = ToSavedModel(r);
            py::gil_scoped_release nogil;
            SaveModel(path.string(), s);
          },
          py::arg("path"),
          "Writes the model and its training state (`--save`; `resume=` continues it)");

  py::class_<LiveModel>(m, "LiveModel",
                        "Snapshots of a running model, readable from any Python thread while "
                        "train(live=...) runs")
      .def(py::init<>())
      .def(
          "snapshot",
          [](const LiveModel& l) -> py::object {
            std::vector<float> w;
            bool ok = false;
            {
              py::gil_scoped_release nogil;
              ok = l.Snapshot(w);
            }
            if (!ok) return py::none();
            py::array_t<float> out(static_cast<py::ssize_t>(w.size()));
            std::copy(w.begin(), w.end(), out.mutable_data());
            return out;
          },
          "The current parameters (a copy), or None before any run started")
      .def_property_readonly("training", &LiveModel::training)
      .def_property_readonly("snapshots", &LiveModel::snapshots);

  m.def("_train", &RunTrain, py::arg("train"), py::arg("test"), py::arg("options"),
        py::arg("callbacks"), py::arg("live"));
}

}  // namespace corral::python
