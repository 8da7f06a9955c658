"""corral.Classifier: HOGWILD! logistic regression on a sparse set, from NumPy/SciPy.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/classifier.py [a9a a9a.t]

Without arguments it trains on a generated sparse problem; with LIBSVM files it reads them
with corral.load (no copy into Python) and trains on those.
"""
import sys

import numpy as np
import scipy.sparse as sp

import corral


def generated(rows=20000, features=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(rows, features, density=0.01, format="csr", dtype=np.float32, random_state=seed)
    w = rng.normal(size=features)
    y = np.where(X @ w > 0, 1, 0)
    return X, y


def main():
    if len(sys.argv) == 3:
        train = corral.load(sys.argv[1])
        test = corral.load(sys.argv[2], train=train)
        clf = corral.Classifier(algo="hogwild", threads=2, epochs=10)
        # A corral.Dataset carries its labels; the estimators take arrays, so hand them views.
        X = sp.csr_matrix((train.data, train.indices, train.indptr), shape=train.shape)
        Xt = sp.csr_matrix((test.data, test.indices, test.indptr), shape=(test.shape[0], train.shape[1]))
        clf.fit(X, train.labels)
        print(f"test accuracy {clf.score(Xt, test.labels):.4f}")
    else:
        X, y = generated()
        clf = corral.Classifier(algo="hogwild", threads=2, epochs=10).fit(X[:15000], y[:15000])
        print(f"held-out accuracy {clf.score(X[15000:], y[15000:]):.4f}")
    print("P(y=1) of the first rows:", np.round(clf.predict_proba(X[:3])[:, 1], 3))
    print("last epoch:", {k: round(v, 4) for k, v in clf.history_[-1].items()
                          if k in ("epoch", "objective", "samples_per_s")})


if __name__ == "__main__":
    main()
