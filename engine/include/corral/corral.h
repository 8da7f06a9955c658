// The umbrella header for embedding Corral: data, models and training.
#pragma once

#include <corral/cache.h>
#include <corral/class_map.h>
#include <corral/dataset.h>
#include <corral/dense_grad.h>
#include <corral/error.h>
#include <corral/kinds.h>
#include <corral/libsvm.h>
#include <corral/linear.h>
#include <corral/load.h>
#include <corral/losses.h>
#include <corral/mf.h>
#include <corral/mlp.h>
#include <corral/model.h>
#include <corral/model_file.h>
#include <corral/params.h>
#include <corral/ratings_info.h>
#include <corral/rng.h>
#include <corral/shards.h>
#include <corral/softmax.h>
#include <corral/sparse_grad.h>
#include <corral/stats.h>
#include <corral/step.h>
#include <corral/synthetic.h>
#include <corral/train.h>
#include <corral/write.h>
