"""The scikit-learn estimators: sklearn's own checks, pickling, partial_fit, the models."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils.estimator_checks import parametrize_with_checks

import corral
from conftest import random_csr


# Checks that fail for a known reason (each must still fail: a fixed one is reported), at most
# three per estimator: (reason, the exception it fails with, a pattern of its message).
_ZERO_WEIGHTS = ("a sample weighted 0 is not a removed sample for SGD: the row keeps its place in "
                 "each epoch's order (every later step sees another model), counts in n (the "
                 "mean loss, the default l2 = 1/n, the step-size search's sample) and takes its "
                 "share of the sparse L2 shrink. scikit-learn's own SGDClassifier and "
                 "SGDRegressor mark this check xfail for the same reason.")
EXPECTED_FAILURES = {
    ("Classifier", "check_sample_weights_invariance(kind=zeros)"):
        (_ZERO_WEIGHTS, AssertionError, "zero sample_weight is not equivalent"),
    ("Regressor", "check_sample_weights_invariance(kind=zeros)"):
        (_ZERO_WEIGHTS, AssertionError, "zero sample_weight is not equivalent"),
}


def _check_name(check):
    """A check's name as scikit-learn's test ids spell it: its function and keywords."""
    keywords = ",".join(f"{k}={v}" for k, v in sorted(check.keywords.items()))
    return f"{check.func.__name__}({keywords})" if keywords else check.func.__name__


def test_at_most_three_expected_failures_per_estimator():
    from collections import Counter
    assert max(Counter(name for name, _ in EXPECTED_FAILURES).values()) <= 3


@parametrize_with_checks([corral.Classifier(), corral.Regressor()])
def test_sklearn_estimator_checks(estimator, check):
    expected = EXPECTED_FAILURES.get((type(estimator).__name__, _check_name(check)))
    if expected is None:
        check(estimator)
        return
    reason, error, pattern = expected
    with pytest.raises(error, match=pattern):
        check(estimator)
    pytest.xfail(reason)


def test_classifier_on_sparse_data_with_any_algorithm_and_threads():
    X, y = random_csr(3000, 200, 10, seed=2)
    labels = np.where(y > 0, "spam", "ham")
    for algo, threads in [("hogwild", 2), ("locked", 2), ("sync", 2), ("dpsgd", 2)]:
        clf = corral.Classifier(algo=algo, threads=threads, epochs=5).fit(X, labels)
        assert list(clf.classes_) == ["ham", "spam"]
        assert clf.n_features_in_ == 200
        assert clf.score(X, labels) > 0.8, algo


def test_classifier_losses_and_probabilities():
    rng = np.random.default_rng(0)
    centers = np.array([[3, 0], [-3, 0], [0, 3]], dtype=np.float32)
    y = rng.integers(0, 3, 600)
    X = centers[y] + rng.normal(size=(600, 2)).astype(np.float32)
    for loss in ["logistic", "softmax", "mlp"]:
        clf = corral.Classifier(loss=loss, hidden=(16,), epochs=10).fit(X, y)
        p = clf.predict_proba(X)
        np.testing.assert_allclose(p.sum(axis=1), 1, rtol=1e-5)
        np.testing.assert_array_equal(clf.classes_[p.argmax(axis=1)], clf.predict(X))
        assert clf.score(X, y) > 0.9, loss
    with pytest.raises(ValueError, match="hinge"):
        corral.Classifier(loss="hinge").fit(X, y)
    hinge = corral.Classifier(loss="hinge").fit(X, y == 0)
    assert not hasattr(hinge, "predict_proba")
    assert hinge.score(X, y == 0) > 0.9


def test_pickle_round_trip_keeps_predictions_and_model_file():
    X, y = random_csr(500, 50, 5, seed=4)
    clf = corral.Classifier(epochs=3).fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
    np.testing.assert_array_equal(back.model_.params, clf.model_.params)


def test_partial_fit_continues_the_run_epoch_by_epoch():
    X, y = random_csr(1000, 60, 6, seed=5)
    whole = corral.Classifier(epochs=3, lr=0.05).fit(X, y)
    step = corral.Classifier(epochs=3, lr=0.05)
    for _ in range(3):
        step.partial_fit(X, y, classes=np.array([-1.0, 1.0]))
    assert step.model_.epochs_done == 3
    # One thread, same seed, same step sizes: continuing is the uninterrupted run, bit for bit.
    np.testing.assert_array_equal(step.model_.params, whole.model_.params)
    with pytest.raises(ValueError):
        step.partial_fit(X[:, :-1], y)


@pytest.mark.parametrize("loss, optimizer", [("logistic", "adagrad"), ("mlp", "momentum")])
def test_partial_fit_carries_the_optimizers_state(loss, optimizer):
    # AdaGrad's accumulators and the heavy-ball velocity travel in the model file between calls:
    # three partial fits are the three-epoch fit bit for bit (C++'s Checkpoint tests show that
    # dropping the state changes the result).
    X, y = random_csr(1000, 60, 6, seed=5)
    params = dict(loss=loss, epochs=3, lr=0.02, hidden=(8,), options={"optimizer": optimizer})
    whole = corral.Classifier(**params).fit(X, y)
    step = corral.Classifier(**params)
    for _ in range(3):
        step.partial_fit(X, y, classes=np.array([-1.0, 1.0]))
    assert step.model_.epochs_done == 3
    np.testing.assert_array_equal(step.model_.params, whole.model_.params)


def test_regressor_fits_a_linear_target():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 8))
    w = rng.normal(size=8)
    y = X @ w + 0.01 * rng.normal(size=2000)
    reg = corral.Regressor(epochs=20, l2=0.0).fit(X, y)
    assert reg.score(X, y) > 0.99
    reg.partial_fit(X, y)
    assert reg.model_.epochs_done == 21


def test_matrix_factorization_learns_low_rank_ratings():
    rng = np.random.default_rng(2)
    users, items, rank = 200, 150, 3
    P, Q = rng.normal(size=(users, rank)), rng.normal(size=(items, rank))
    pairs = np.array([(u, i) for u in range(users) for i in range(items) if rng.random() < 0.3])
    ratings = np.einsum("ij,ij->i", P[pairs[:, 0]], Q[pairs[:, 1]]) + 3.0
    ids = pairs * 7 + 1000  # arbitrary ids, mapped densely
    mf = corral.MatrixFactorization(rank=3, epochs=30, l2=1e-4).fit(ids, ratings)
    rmse = np.sqrt(np.mean((mf.predict(ids) - ratings) ** 2))
    assert rmse < 0.5 * np.std(ratings)
    # An unseen user still gets a rating (the mean plus the item's bias).
    assert np.isfinite(mf.predict(np.array([[999_999, ids[0, 1]]]))).all()
    back = pickle.loads(pickle.dumps(mf))
    np.testing.assert_array_equal(back.predict(ids[:10]), mf.predict(ids[:10]))


def test_estimator_evaluates_the_last_epoch_only_unless_asked_with_the_same_model():
    X, y = random_csr(2000, 100, 8, seed=4)
    last = corral.Classifier(epochs=4).fit(X, y)
    every = corral.Classifier(epochs=4, options={"eval_every": 1}).fit(X, y)
    assert [p["epoch"] for p in last.history_] == [4]
    assert [p["epoch"] for p in every.history_] == [1, 2, 3, 4]
    np.testing.assert_array_equal(last.model_.params, every.model_.params)
    assert last.history_[-1]["objective"] == every.history_[-1]["objective"]
    with pytest.raises(ValueError, match="--eval-every '0'"):
        corral.Classifier(options={"eval_every": 0}).fit(X, y)


def _overlapping_classes(rows=3000, seed=6):
    """Two overlapping Gaussian classes, 4 of 5 rows in class 0, and a column of ones: the
    linear models have no bias term, and its weight is the threshold sample weights move."""
    rng = np.random.default_rng(seed)
    y = (rng.random(rows) < 0.2).astype(np.int64)
    X = rng.normal(size=(rows, 4)).astype(np.float32) + np.where(y[:, None] == 1, 0.5, -0.5)
    X[:, 3] = 1
    return X, y


def test_sample_weight_moves_the_decision_towards_the_heavy_class():
    X, y = _overlapping_classes()
    plain = corral.Classifier(epochs=5).fit(X, y)
    heavy = corral.Classifier(epochs=5).fit(X, y, sample_weight=np.where(y == 1, 10.0, 1.0))
    recall = [np.mean(clf.predict(X)[y == 1] == 1) for clf in (plain, heavy)]
    # Unweighted, the rare class loses much of the overlap (recall 0.59); weighted 10:1 it
    # wins most of it (0.94).
    assert recall[0] < 0.7 and recall[1] > 0.9, recall
    # The same factor as a class weight is the same fit, bit for bit: each derivative is
    # multiplied by c_y * s = 10 * 1 or 1 * 10.
    by_class = corral.Classifier(epochs=5, options={"class_weight": "1:10"}).fit(X, y)
    np.testing.assert_array_equal(by_class.model_.params, heavy.model_.params)
    # score takes sample_weight (scikit-learn's mixin): the weighted accuracy.
    from sklearn.metrics import accuracy_score
    w = np.where(y == 1, 10.0, 1.0)
    assert heavy.score(X, y, sample_weight=w) == accuracy_score(y, heavy.predict(X), sample_weight=w)


@pytest.mark.parametrize("make", [
    lambda: corral.Classifier(epochs=3, lr=0.05, l2=1e-3),
    lambda: corral.Classifier(loss="softmax", epochs=3, lr=0.05, l2=1e-3),
    lambda: corral.Regressor(epochs=3, lr=0.01, l2=1e-3),
])
def test_unit_and_doubled_sample_weights_give_the_expected_fits_bit_for_bit(make):
    # Ones: the unweighted fit. Twos at (lr, l2): the unweighted fit at (2 lr, l2 / 2), as
    # 2 (loss + (l2/4)|w|^2) has the same minimiser and SGD's steps scale by exact powers of 2
    # (test_train.py's test of the same on the raw API gives the algebra).
    X, y = _overlapping_classes(rows=1000)
    if isinstance(make(), corral.Regressor):
        y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + y
    plain = make().fit(X, y)
    ones = make().fit(X, y, sample_weight=np.ones(len(y)))
    np.testing.assert_array_equal(ones.model_.params, plain.model_.params)
    twos = make().fit(X, y, sample_weight=2)  # a scalar weighs every row
    doubled = make().set_params(lr=2 * plain.lr, l2=plain.l2 / 2).fit(X, y)
    np.testing.assert_array_equal(twos.model_.params, doubled.model_.params)


def test_partial_fit_with_sample_weight_continues_the_weighted_run():
    X, y = random_csr(1000, 60, 6, seed=5)
    w = np.random.default_rng(1).uniform(0, 3, X.shape[0])
    whole = corral.Classifier(epochs=3, lr=0.05).fit(X, y, sample_weight=w)
    step = corral.Classifier(epochs=3, lr=0.05)
    for _ in range(3):
        step.partial_fit(X, y, classes=np.array([-1.0, 1.0]), sample_weight=w)
    np.testing.assert_array_equal(step.model_.params, whole.model_.params)
    reg = corral.Regressor(epochs=2, lr=0.05).fit(X, y, sample_weight=w)
    reg.partial_fit(X, y, sample_weight=w)
    assert reg.model_.epochs_done == 3


def test_estimators_refuse_bad_sample_weights():
    X, y = _overlapping_classes(rows=100)
    with pytest.raises(ValueError, match=r"sample_weight.shape == \(5,\), expected \(100,\)"):
        corral.Classifier().fit(X, y, sample_weight=np.ones(5))
    with pytest.raises(ValueError, match="sample_weight: row 2's weight is -1"):
        corral.Regressor().fit(X, y, sample_weight=np.where(np.arange(100) == 2, -1, 1))
    with pytest.raises(ValueError, match="sample_weight contains NaN"):
        corral.Classifier().fit(X, y, sample_weight=np.full(100, np.nan))


def test_matrix_factorization_weighs_each_rating():
    rng = np.random.default_rng(3)
    pairs = np.stack([rng.integers(0, 50, 2000), rng.integers(0, 40, 2000)], axis=1)
    ratings = rng.uniform(1, 5, 2000)
    params = dict(rank=3, epochs=3, lr=0.02, l2=1e-3)
    plain = corral.MatrixFactorization(**params).fit(pairs, ratings)
    ones = corral.MatrixFactorization(**params).fit(pairs, ratings, sample_weight=np.ones(2000))
    np.testing.assert_array_equal(ones.model_.params, plain.model_.params)
    # A rating weighted 0 moves nothing but the L2 shrink: its prediction is not pulled to it.
    target = np.where(np.arange(2000) == 0, 100.0, ratings)
    kept = corral.MatrixFactorization(**params).fit(pairs, target, sample_weight=np.arange(2000) > 0)
    pulled = corral.MatrixFactorization(**params).fit(pairs, target)
    assert abs(kept.predict(pairs[:1])[0] - 100) > abs(pulled.predict(pairs[:1])[0] - 100) + 1
