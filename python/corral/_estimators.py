"""scikit-learn estimators over corral.train: Classifier, Regressor, MatrixFactorization.

Every estimator takes the algorithm and thread count as parameters (``algo``, ``threads``)
and any other ``corral train`` option through ``options`` (a dict, e.g.
``{"topology": "ring", "compress": "qsgd:8"}``). ``threads=1`` (the default) with a fixed
``seed`` gives the same model on every fit, bit for bit; ``threads=0`` uses every hardware
thread. Fitted estimators pickle through the model file format (corral.Model).

``fit`` and ``partial_fit`` take ``sample_weight`` (one finite weight >= 0 per row, or a scalar
for all; ``corral train --weights``): a sample's weight scales its loss and gradient, so the
objective is (1/n) sum_i s_i loss_i + (l2/2)|w|^2. A weight of 0 keeps the row in n and in the
epoch's order (it still takes its share of the L2 step), unlike removing it: the fit is not the
one without that row. Weights all 1 give the unweighted fit bit for bit.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from . import _corral

_LOSSES = ("logistic", "hinge", "softmax", "mlp")


class _CorralEstimator(BaseEstimator):
    """What the estimators share: options, training, continuing a run (partial_fit)."""

    def _options(self, **model_options):
        # Nothing watches an estimator's epochs (no callbacks): the objective is evaluated
        # after the last epoch only (history_ holds that point) unless options say otherwise.
        options = dict({"eval_every": "auto"}, **(self.options or {}))
        options.update(
            algo=self.algo, threads=self.threads, epochs=self.epochs, batch=self.batch,
            lr=self.lr, lr_decay=self.lr_decay, seed=self.seed, **model_options)
        if self.l2 is not None:
            options["l2"] = self.l2
        return options

    def _train(self, data, options, continue_from=None):
        if continue_from is None:
            return _corral._train(data, None, options, [], None)
        # Continue: the fitted model and its training state as a checkpoint, one epoch more.
        with tempfile.TemporaryDirectory(prefix="corral-") as d:
            path = os.path.join(d, "model")
            continue_from.save(path)
            options = dict(options, resume=path, epochs=continue_from.epochs_done + 1)
            return _corral._train(data, None, options, [], None)

    def _one_epoch(self, fit, *args, **kwargs):
        """fit(...) over one epoch: the first partial_fit starts a run, one epoch long."""
        saved, self.epochs = self.epochs, 1
        try:
            return fit(*args, **kwargs)
        finally:
            self.epochs = saved

    def _keep(self, result):
        self.model_ = result.model
        self.history_ = result.history
        self.warnings_ = list(result.warnings)


def _as_data(X, y, sample_weight=None):
    from . import as_dataset
    return as_dataset(X, y, sample_weight=sample_weight)


def _sample_weight(sample_weight, X):
    """sample_weight as sklearn's estimators take it (None, a scalar, any 1-d array-like of
    len(X)) -> None or float32 (used in place when it already is); Corral checks the values."""
    if sample_weight is None:
        return None
    return _check_sample_weight(sample_weight, X, dtype=np.float32)


class Classifier(ClassifierMixin, _CorralEstimator):
    """A linear or neural classifier trained by Corral.

    loss: logistic (binary; multiclass data trains softmax, multinomial logistic regression),
    hinge (binary linear SVM), softmax, or mlp (``hidden`` layer widths, ReLU).
    algo, threads, epochs, batch, lr (0: searched), lr_decay, l2 (None: 1/rows, LIBLINEAR's
    C=1), seed: as ``corral train``; options: any other of its options.
    """

    def __init__(self, loss="logistic", algo="auto", threads=1, epochs=10, batch=1, lr=0.0,
                 lr_decay=0.9, l2=None, seed=1, hidden=(256, 128), options=None):
        self.loss = loss
        self.algo = algo
        self.threads = threads
        self.epochs = epochs
        self.batch = batch
        self.lr = lr
        self.lr_decay = lr_decay
        self.l2 = l2
        self.seed = seed
        self.hidden = hidden
        self.options = options

    def _model_kind(self, n_classes):
        if self.loss not in _LOSSES:
            raise ValueError(f"loss: unknown '{self.loss}' (expected one of: {', '.join(_LOSSES)})")
        if self.loss in ("logistic", "hinge"):
            if n_classes == 2:
                return self.loss
            if self.loss == "hinge":
                raise ValueError(f"loss='hinge' is binary; y has {n_classes} classes "
                                 "(use loss='softmax' or 'mlp')")
            return "softmax"
        return self.loss

    def _encode(self, y):
        """y as Corral's labels: -1/+1 for a binary model, class indices otherwise."""
        if self.model_kind_ in ("logistic", "hinge"):
            # Two classes and y among them: classes_[1] is +1, the rest -1. One comparison
            # instead of a binary search per label (on a9a the search was ~5% of a fit).
            return np.where(y == self.classes_[1], np.float32(1), np.float32(-1))
        return np.searchsorted(self.classes_, y).astype(np.float32)

    def fit(self, X, y, sample_weight=None):
        """Trains from scratch for ``epochs`` epochs.

        sample_weight: per-row factors on the loss (see the module's docstring); a heavier
        class pulls the decision towards itself as ``class_weight`` in ``options`` does.
        """
        X, y = self._validate_data(X, y, accept_sparse="csr", dtype=np.float32)
        check_classification_targets(y)
        sample_weight = _sample_weight(sample_weight, X)
        self.classes_ = np.unique(y)
        return self._fit(X, y, sample_weight, continue_from=None)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One more epoch over (X, y), continuing the fitted model (or starting one).

        The first call needs ``classes`` (every label there will be) unless it sees them all.
        sample_weight: as fit's, for these rows.
        """
        first = not hasattr(self, "model_")
        X, y = self._validate_data(X, y, accept_sparse="csr", dtype=np.float32, reset=first)
        check_classification_targets(y)
        sample_weight = _sample_weight(sample_weight, X)
        if first:
            self.classes_ = np.unique(y if classes is None else classes)
        elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(f"classes: {np.unique(classes)} differ from the first call's "
                             f"{self.classes_}")
        if not np.all(np.isin(y, self.classes_)):
            raise ValueError("y: labels not in classes_ (give every class to the first "
                             "partial_fit through classes=)")
        if first:
            return self._one_epoch(self._fit, X, y, sample_weight, continue_from=None)
        return self._fit(X, y, sample_weight, continue_from=self.model_)

    def _fit(self, X, y, sample_weight, continue_from):
        if len(self.classes_) < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes; "
                             f"y has 1 class ({self.classes_[0]!r})")
        self.model_kind_ = self._model_kind(len(self.classes_))
        options = self._options(model=self.model_kind_)
        if self.model_kind_ == "mlp":
            options["hidden"] = [int(h) for h in self.hidden]
        data = _as_data(X, self._encode(y), sample_weight)
        self._keep(self._train(data, options, continue_from))
        return self

    def _raw(self, X):
        check_is_fitted(self)
        X = self._validate_data(X, accept_sparse="csr", dtype=np.float32, reset=False)
        data = _as_data(X, np.zeros(X.shape[0], dtype=np.float32))
        out = self.model_.predict(data)
        if self.model_kind_ in ("logistic", "hinge"):
            return out[:, 0]
        # Per-class columns in the model's class order (labels 0..K-1 as trained) -> classes_.
        order = np.asarray(self.model_.info["classes"], dtype=np.int64)
        proba = np.zeros((out.shape[0], len(self.classes_)), dtype=np.float64)
        proba[:, order] = out
        return proba

    def decision_function(self, X):
        """Margins (binary: shape (n,), > 0 is classes_[1]) or per-class log-probabilities."""
        raw = self._raw(X)
        if raw.ndim == 1:
            return raw.astype(np.float64)
        with np.errstate(divide="ignore"):
            logp = np.log(raw)
        if len(self.classes_) == 2:
            return logp[:, 1] - logp[:, 0]
        return logp

    def _has_proba(self):
        return getattr(self, "model_kind_", self.loss) != "hinge"

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities, columns in classes_ order (not for hinge)."""
        raw = self._raw(X)
        if raw.ndim == 1:
            p1 = 1.0 / (1.0 + np.exp(-raw.astype(np.float64)))
            return np.column_stack([1.0 - p1, p1])
        return raw / raw.sum(axis=1, keepdims=True)

    def predict(self, X):
        raw = self._raw(X)
        if raw.ndim == 1:
            return self.classes_[(raw > 0).astype(np.int64)]
        return self.classes_[np.argmax(raw, axis=1)]

    def _more_tags(self):
        return {"binary_only": False, "poor_score": False}


class Regressor(RegressorMixin, _CorralEstimator):
    """Least-squares linear regression trained by Corral (model squared).

    Parameters as Classifier's (no loss: the loss is squared).
    """

    def __init__(self, algo="auto", threads=1, epochs=10, batch=1, lr=0.0, lr_decay=0.9,
                 l2=None, seed=1, options=None):
        self.algo = algo
        self.threads = threads
        self.epochs = epochs
        self.batch = batch
        self.lr = lr
        self.lr_decay = lr_decay
        self.l2 = l2
        self.seed = seed
        self.options = options

    def fit(self, X, y, sample_weight=None):
        """Trains from scratch for ``epochs`` epochs (sample_weight: see the module's docstring)."""
        X, y = self._validate_data(X, y, accept_sparse="csr", dtype=np.float32, y_numeric=True)
        return self._fit(X, y, _sample_weight(sample_weight, X), continue_from=None)

    def partial_fit(self, X, y, sample_weight=None):
        """One more epoch over (X, y), continuing the fitted model (or starting one)."""
        first = not hasattr(self, "model_")
        X, y = self._validate_data(X, y, accept_sparse="csr", dtype=np.float32, y_numeric=True,
                                   reset=first)
        sample_weight = _sample_weight(sample_weight, X)
        if first:
            return self._one_epoch(self._fit, X, y, sample_weight, continue_from=None)
        return self._fit(X, y, sample_weight, continue_from=self.model_)

    def _fit(self, X, y, sample_weight, continue_from):
        data = _as_data(X, np.asarray(y, dtype=np.float32), sample_weight)
        self._keep(self._train(data, self._options(model="squared"), continue_from))
        return self

    def predict(self, X):
        check_is_fitted(self)
        X = self._validate_data(X, accept_sparse="csr", dtype=np.float32, reset=False)
        data = _as_data(X, np.zeros(X.shape[0], dtype=np.float32))
        return self.model_.predict(data)[:, 0].astype(np.float64)


class MatrixFactorization(RegressorMixin, _CorralEstimator):
    """Matrix factorisation of ratings (model mf, HOGWILD!'s Netflix task).

    fit(X, y): X is an (n, 2) array of (user id, item id) pairs (any non-negative integers),
    y the ratings. rank: the factor rank; bias: learn per-user and per-item biases.
    predict(X) gives the ratings of (user, item) pairs; users or items never seen in fit get
    the mean rating plus the biases that are known.
    """

    def __init__(self, rank=10, algo="auto", threads=1, epochs=10, batch=1, lr=0.0,
                 lr_decay=0.9, l2=None, seed=1, bias=True, options=None):
        self.rank = rank
        self.algo = algo
        self.threads = threads
        self.epochs = epochs
        self.batch = batch
        self.lr = lr
        self.lr_decay = lr_decay
        self.l2 = l2
        self.seed = seed
        self.bias = bias
        self.options = options

    @staticmethod
    def _pairs(X):
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != 2:
            raise ValueError(f"X: expected an (n, 2) array of (user, item) ids, got shape {X.shape}")
        return X[:, 0], X[:, 1]

    def fit(self, X, y, sample_weight=None):
        """Trains from scratch; sample_weight: one factor per rating on its loss (see the
        module's docstring)."""
        users, items = self._pairs(X)
        from . import _weighted, ratings
        data = _weighted(ratings(users, items, y), _sample_weight(sample_weight, users))
        self.n_features_in_ = 2
        self._keep(self._train(data, self._mf_options(), None))
        return self

    def partial_fit(self, X, y, sample_weight=None):
        """One more epoch over these ratings, continuing the fitted model (ids it knows)."""
        if not hasattr(self, "model_"):
            return self._one_epoch(self.fit, X, y, sample_weight)
        users, items = self._pairs(X)
        from . import _weighted, ratings
        data = _weighted(ratings(users, items, y, model=self.model_),
                         _sample_weight(sample_weight, users))
        self._keep(self._train(data, self._mf_options(), self.model_))
        return self

    def _mf_options(self):
        return self._options(model="mf", rank=self.rank, no_bias=not self.bias)

    def predict(self, X):
        check_is_fitted(self)
        users, items = self._pairs(X)
        from . import ratings
        data = ratings(users, items, np.zeros(len(users), dtype=np.float32), model=self.model_)
        return self.model_.predict(data)[:, 0].astype(np.float64)
