// The umbrella header for embedding Corral: data, models and training.
#pragma once

#include <corral/dataset.h>
#include <corral/error.h>
#include <corral/libsvm.h>
#include <corral/logistic.h>
#include <corral/params.h>
#include <corral/rng.h>
#include <corral/sparse_grad.h>
#include <corral/sparse_step.h>
#include <corral/synthetic.h>
#include <corral/train.h>
