"""corral.MatrixFactorization: ratings of (user, item) pairs, HOGWILD!'s Netflix task.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/matrix_factorization.py
"""
import pickle

import numpy as np

import corral


def main():
    rng = np.random.default_rng(2)
    users, items, rank = 2000, 1000, 5
    P = rng.normal(scale=0.5, size=(users, rank))
    Q = rng.normal(scale=0.5, size=(items, rank))
    n = 200_000
    pairs = np.column_stack([rng.integers(0, users, n), rng.integers(0, items, n)])
    ratings = 3.5 + np.einsum("ij,ij->i", P[pairs[:, 0]], Q[pairs[:, 1]]) + 0.1 * rng.normal(size=n)
    train, test = slice(0, 180_000), slice(180_000, n)
    mf = corral.MatrixFactorization(rank=rank, threads=2, epochs=20)
    mf.fit(pairs[train], ratings[train])
    rmse = np.sqrt(np.mean((mf.predict(pairs[test]) - ratings[test]) ** 2))
    print(f"test RMSE {rmse:.4f} (ratings' std {ratings.std():.4f})")
    again = pickle.loads(pickle.dumps(mf))  # the model file format underneath
    assert np.array_equal(again.predict(pairs[test]), mf.predict(pairs[test]))
    print("pickled and restored: same predictions")


if __name__ == "__main__":
    main()
