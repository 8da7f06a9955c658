"""corral.load and the NumPy/SciPy wrappers: shapes, labels, and no copies."""
import numpy as np
import pytest
import scipy.sparse as sp

import corral


def test_version_is_the_projects():
    assert corral.__version__.count(".") == 2


def test_load_reads_libsvm_with_views(sparse_problem):
    X, y, path = sparse_problem
    d = corral.load(path, format="libsvm")
    assert d.shape == X.shape
    assert d.nnz == X.nnz
    np.testing.assert_array_equal(d.labels, y)
    np.testing.assert_array_equal(d.indices, X.indices)
    np.testing.assert_array_equal(d.indptr, X.indptr)
    np.testing.assert_array_equal(d.data, X.data)
    assert not d.labels.flags.writeable
    assert d.labels.base is not None  # a view of the dataset's memory


def test_load_bad_file_raises_value_error_naming_it(tmp_path):
    bad = tmp_path / "bad.svm"
    bad.write_text("1 3:1 2:1\n")
    with pytest.raises(ValueError, match="bad.svm:1"):
        corral.load(bad, format="libsvm")
    with pytest.raises(ValueError, match="unknown|expected"):
        corral.load(bad, format="nope")


def test_csr_float32_int32_is_used_in_place():
    X = sp.random(50, 20, density=0.3, format="csr", dtype=np.float32, random_state=1)
    X.sort_indices()
    y = np.ones(50, dtype=np.float32)
    d = corral.as_dataset(X, y)
    assert np.shares_memory(d.data, X.data)
    assert np.shares_memory(d.indices, X.indices)
    assert np.shares_memory(d.labels, y)
    assert d.shape == (50, 20)


def test_dense_float32_is_used_in_place_and_float64_converted_once():
    X = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    y = np.array([1, -1, 1, -1], dtype=np.float32)
    d = corral.as_dataset(X, y)
    assert d.is_dense and d.shape == (4, 3)
    assert np.shares_memory(d.data, X)
    d64 = corral.as_dataset(X.astype(np.float64), y)
    assert not np.shares_memory(d64.data, X)
    np.testing.assert_array_equal(d64.data, X)


def test_bad_arrays_raise_value_error():
    with pytest.raises(ValueError, match="y: expected 4 labels"):
        corral.as_dataset(np.ones((4, 3)), np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        corral.as_dataset(np.array([[np.nan, 1.0]]), np.ones(1))
    with pytest.raises(ValueError, match="2-d"):
        corral.as_dataset(np.ones(3), np.ones(3))


def test_sample_weights_are_used_in_place_kept_alive_and_converted_once():
    X = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    y = np.array([1, -1, 1, -1], dtype=np.float32)
    assert corral.as_dataset(X, y).weights is None
    w = np.array([1, 2, 0, 0.5], dtype=np.float32)
    d = corral.as_dataset(X, y, sample_weight=w)
    assert np.shares_memory(d.weights, w)
    assert not d.weights.flags.writeable
    # The Dataset keeps the caller's array alive (it views it, as it views X).
    d = corral.as_dataset(X, y, sample_weight=np.array([3, 2, 1, 0], dtype=np.float32))
    import gc
    gc.collect()
    np.testing.assert_array_equal(d.weights, [3, 2, 1, 0])
    # Other dtypes, and a strided float32 view, are converted (copied) once.
    for other in (w.astype(np.float64), [1, 2, 0, 0.5], np.repeat(w, 2)[::2]):
        d = corral.as_dataset(X, y, sample_weight=other)
        assert not np.shares_memory(d.weights, w)
        np.testing.assert_array_equal(d.weights, w)
    # A Dataset (or a file) gets weights too; the weighted copy leaves the original as it was.
    plain = corral.as_dataset(X, y)
    assert np.shares_memory(corral.as_dataset(plain, sample_weight=w).weights, w)
    assert plain.weights is None
