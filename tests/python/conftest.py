"""Shared fixtures of the Python tests: the CLI built beside the module, small data files.

ctest runs these with PYTHONPATH at build/python (the package the build assembled) and
CORRAL_CLI naming the `corral` binary of the same build.
"""
import os
import shutil

import numpy as np
import pytest


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("CORRAL_CLI") or shutil.which("corral")
    if not path:
        pytest.fail("CORRAL_CLI is not set (ctest sets it to the corral binary of this build)")
    return path


def random_csr(rows, features, nnz_per_row, seed):
    """A reproducible sparse classification problem as scipy CSR (float32, int32 indices)."""
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    cols = np.sort(np.stack([rng.choice(features, nnz_per_row, replace=False)
                             for _ in range(rows)]), axis=1).astype(np.int32)
    vals = rng.uniform(0.1, 1.0, size=(rows, nnz_per_row)).astype(np.float32)
    # Values exactly representable in %.9g text, so the LIBSVM file holds the same floats.
    indptr = np.arange(0, rows * nnz_per_row + 1, nnz_per_row, dtype=np.int32)
    X = sp.csr_matrix((vals.ravel(), cols.ravel(), indptr), shape=(rows, features))
    w = rng.normal(size=features)
    y = np.where(X @ w > 0, 1.0, -1.0).astype(np.float32)
    return X, y


def write_libsvm(path, X, y):
    with open(path, "w") as f:
        for r in range(X.shape[0]):
            start, end = X.indptr[r], X.indptr[r + 1]
            feats = " ".join(f"{c + 1}:{v:.9g}" for c, v in zip(X.indices[start:end], X.data[start:end]))
            f.write(f"{int(y[r])} {feats}\n")


@pytest.fixture(scope="session")
def sparse_problem(tmp_path_factory):
    X, y = random_csr(rows=2000, features=300, nnz_per_row=12, seed=7)
    path = tmp_path_factory.mktemp("data") / "train.svm"
    write_libsvm(path, X, y)
    return X, y, str(path)
