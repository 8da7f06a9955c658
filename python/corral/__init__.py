"""Corral from Python: lock-free asynchronous and decentralized SGD on one many-core machine.

Data without copies
    ``load(path, format=...)`` reads every format the ``corral`` CLI reads and returns a
    :class:`Dataset` whose arrays are NumPy views of Corral's memory. ``train`` also takes a
    ``numpy.ndarray`` (dense) or a ``scipy.sparse.csr_matrix``: float32 values and int32
    (or int64 within range) column indices are used in place; anything else is converted once
    (values to float32, indices to uint32). The rows + 1 ``indptr`` offsets are converted to
    uint64 unless they already are 64-bit. Unsorted or duplicate CSR indices are sorted and
    summed in a copy first, and other sparse formats are converted to CSR (a copy). A float32
    ``sample_weight`` array is used in place too (other dtypes are converted once). Do not
    modify the arrays while a run trains on them.

Training
    ``train(X, y, model="logistic", algo="auto", **options)`` takes every option of
    ``corral train`` with underscores for dashes (``lr_decay=0.9``, ``hot_coords="off"``),
    validated by the library's own code with the CLI's messages. It releases the GIL while it
    trains; Ctrl-C (KeyboardInterrupt) stops the workers within a step and is raised after they
    joined. Errors: ValueError for bad input or configuration, RuntimeError for divergence or a
    worker's failure (the CLI's message either way).

Estimators
    :class:`Classifier`, :class:`Regressor` and :class:`MatrixFactorization` follow
    scikit-learn's conventions (fit, partial_fit, predict, score, get_params, pickling).
"""

from __future__ import annotations

import copyreg
import os
import tempfile

import numpy as np

from . import _corral
from ._corral import Dataset, LiveModel, Model, TrainResult, load_model

__version__ = _corral.__version__

__all__ = [
    "Dataset", "LiveModel", "Model", "TrainResult", "load", "load_model", "train", "ratings",
    "as_dataset", "Classifier", "Regressor", "MatrixFactorization", "__version__",
]


def load(path, format="auto", features=0, train=None):
    """Reads a data file as ``corral train --data`` does.

    format: auto, libsvm, idx, ratings, csv or cache (auto: by magic number, extension and
    content). features: the feature dimension (0: the file's own). train: the training
    Dataset, when loading its test set (``--test``): the same dimension, and for ratings the
    same id mapping.
    """
    return _corral._load(os.fspath(path), format=format, features=int(features), train=train)


def ratings(users, items, values, train=None, model=None, name="ratings"):
    """A ratings Dataset from parallel arrays of user ids, item ids and ratings.

    Ids are any non-negative integers, mapped densely as the ratings reader maps them;
    ``train`` (a ratings Dataset) or ``model`` (a trained mf Model) gives the mapping of a test
    set. The arrays are copied into Corral's ratings layout.
    """
    users = _ids(users, "users")
    items = _ids(items, "items")
    values = np.ascontiguousarray(values, dtype=np.float32).ravel()
    return _corral._ratings(users, items, values, train=train, model=model, name=name)


def _ids(a, what):
    a = np.asarray(a).ravel()
    if a.dtype.kind not in "iu" and a.size:
        if not np.all(np.equal(np.mod(a, 1), 0)):
            raise ValueError(f"{what}: expected non-negative integer ids")
    if a.size and np.min(a) < 0:
        raise ValueError(f"{what}: expected non-negative integer ids, got {np.min(a)}")
    return np.ascontiguousarray(a, dtype=np.uint64)


def _all_finite(a, chunk=1 << 20):
    """Whether every value is finite, checked in chunks: no temporary as large as the data."""
    flat = a.reshape(-1)
    return all(np.isfinite(flat[i:i + chunk]).all() for i in range(0, flat.size, chunk))


def _labels(y, rows):
    if y is None:
        raise ValueError("y: labels are needed with an array X (a corral.Dataset carries its own)")
    y = np.ascontiguousarray(y, dtype=np.float32)
    if y.ndim != 1 or y.shape[0] != rows:
        raise ValueError(f"y: expected {rows} labels (one per row of X), got shape {y.shape}")
    if not _all_finite(y):
        raise ValueError("y: labels must be finite (no NaN or Inf)")
    return y


def _weighted(data, sample_weight):
    """data with per-row weights (None: every row weighs 1), viewed in place when they are a
    C-contiguous 1-d float32 array, else converted once. The library checks them (one per row,
    finite, >= 0) with the messages of ``corral train --weights``."""
    if sample_weight is None:
        return data
    w = np.asarray(sample_weight)
    if w.ndim != 1:
        raise ValueError(f"sample_weight: expected a 1-d array, one weight per row, got shape {w.shape}")
    if w.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight: expected numbers, got dtype {w.dtype}")
    with np.errstate(over="ignore"):  # a weight beyond float32 becomes inf, which Corral refuses
        w = np.ascontiguousarray(w, dtype=np.float32)
    return _corral._with_weights(data, w)


def as_dataset(X, y=None, name=None, features=0, format="auto", train=None, sample_weight=None):
    """X as a corral.Dataset, without copying what Corral can use in place.

    X: a Dataset (returned as is, unless sample_weight is given; y must be None), a path
    (loaded with ``load``), a ``scipy.sparse`` matrix or a 2-d array-like. ``features`` widens
    X to that many columns (a test set's dimension; sparse only). sample_weight: one weight per
    row (see ``train``; the Dataset's ``weights``).
    """
    if isinstance(X, Dataset):
        if y is not None:
            raise ValueError("y: a corral.Dataset carries its own labels; pass y=None")
        return _weighted(X, sample_weight)
    if isinstance(X, (str, os.PathLike)):
        if y is not None:
            raise ValueError("y: a data file carries its own labels; pass y=None")
        return _weighted(load(X, format=format, features=features, train=train), sample_weight)
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover - SciPy is a dependency of the estimators only
        sp = None
    if sp is not None and sp.issparse(X):
        X = X.tocsr() if X.format != "csr" else X
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()  # sorts the indices too
        rows, cols = X.shape
        data = np.ascontiguousarray(X.data, dtype=np.float32)
        if not _all_finite(data):
            raise ValueError("X: values must be finite (no NaN or Inf)")
        if X.indices.dtype == np.int32:
            indices = np.ascontiguousarray(X.indices).view(np.uint32)
        else:
            indices = np.ascontiguousarray(X.indices, dtype=np.uint32)
        if X.indptr.dtype in (np.int64, np.uint64):
            indptr = np.ascontiguousarray(X.indptr).view(np.uint64)
        else:
            indptr = np.ascontiguousarray(X.indptr, dtype=np.uint64)
        labels = _labels(y, rows)
        return _weighted(_corral._wrap_csr(indptr, indices, data, labels,
                                           max(int(cols), int(features)), name or "csr_matrix"),
                         sample_weight)
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X: expected a 2-d array (rows x features), got {X.ndim} dimension(s)")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"X: expected numbers, got dtype {X.dtype}")
    X = np.ascontiguousarray(X, dtype=np.float32)
    if not _all_finite(X):
        raise ValueError("X: values must be finite (no NaN or Inf)")
    return _weighted(_corral._wrap_dense(X, _labels(y, X.shape[0]), name or "ndarray"),
                     sample_weight)


def train(X, y=None, model="logistic", algo="auto", *, sample_weight=None, test=None,
          callbacks=None, live=None, format="auto", features=0, **options):
    """Trains a model on X (and labels y), as ``corral train`` does; returns a TrainResult.

    algo: "auto" (the default) picks hogwild++ with groups of 1 at 2 or more threads for mlp
    and for linear models on dense X, else hogwild (as ``corral train``); the result's ``summary["algo"]`` names the mode that
    ran and ``summary["algo_reason"]`` why. Any ``--algo`` name runs that mode.

    X, y: see ``as_dataset`` (a path is read like ``--data``, with ``format`` and
    ``features``). sample_weight: one weight per row of X, finite and >= 0 (``--weights``):
    it scales that sample's loss and gradient, so the objective is (1/n) sum_i s_i loss_i +
    (l2/2)|w|^2. A weight of 0 leaves the row's step at the L2 shrink alone but keeps it in n
    (and in the epoch's order), unlike removing the row; weights all 1 give the unweighted run
    bit for bit. test: a Dataset, a path, or an (X, y) pair, evaluated at every epoch end.
    callbacks: callables taking the epoch's metrics dict; one returning False stops the run.
    live: a LiveModel other threads read snapshots from while it trains.
    options: every other option of ``corral train`` with underscores for dashes: l2, threads,
    epochs, batch, hidden, rank, no_bias, lr, optimizer ("sgd", "adagrad", "momentum"), momentum, lr_decay, lr_schedule ("exp", "inv-sqrt",
    "cosine"), warmup (epochs, or a fraction of epochs below 1), seed, pin, shuffle ("auto",
    the default, "epoch", "index", "off"), target_loss,
    validation (a path, or a fraction of the rows held out), early_stop, metric ("loss", "acc",
    "auc", "rmse"), class_weight ("none", "balanced" or "LABEL:W,...", e.g. "1:5,-1:1"), time_limit, bits, model_bits, rounding, compress, gamma, strict, topology, link,
    link_mode, gossip_every, mix_order, allreduce ("gather", "ring"), group_size, hot_coords,
    hot_sync, schedule ("free" or
    "seeded:TAU"), metrics, resume,
    init, hardware, checkpoint_every (N epochs or "Ns"; it writes to ``checkpoint``, the path
    ``--save`` gives the CLI), memory_budget (bytes, or a size such as "512M" or "4G"),
    eval_every (N epochs or "auto"; default 1 here: the history holds every epoch).
    """
    for name in ("weights", "weight_column"):
        if name in options:
            # The CLI's flags read weights from files; here they are an array.
            raise ValueError(f"{name}: train() takes the weights as sample_weight= (an array, "
                             f"one weight per row), not --{name.replace('_', '-')}")
    data = as_dataset(X, y, features=features, format=format, sample_weight=sample_weight)
    test_data = None
    if test is not None:
        if isinstance(test, tuple):
            test_data = as_dataset(test[0], test[1], name="test", features=data.shape[1])
        else:
            test_data = as_dataset(test, format=format, train=data)
    options = dict(options, model=model, algo=algo)
    return _corral._train(data, test_data, options, list(callbacks or []), live)


def _model_to_bytes(model):
    with tempfile.TemporaryDirectory(prefix="corral-") as d:
        path = os.path.join(d, "model")
        model.save(path)
        with open(path, "rb") as f:
            return f.read()


def _model_from_bytes(data):
    with tempfile.TemporaryDirectory(prefix="corral-") as d:
        path = os.path.join(d, "model")
        with open(path, "wb") as f:
            f.write(data)
        return load_model(path)


# A Model pickles as its model file's bytes (what `corral train --save` writes).
copyreg.pickle(Model, lambda m: (_model_from_bytes, (_model_to_bytes(m),)))

from ._estimators import Classifier, MatrixFactorization, Regressor  # noqa: E402
