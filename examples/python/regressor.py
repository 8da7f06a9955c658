"""corral.Regressor: least squares by SGD on a dense NumPy matrix, then partial_fit.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/regressor.py
"""
import numpy as np

import corral


def main():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50000, 20)).astype(np.float32)  # float32: used in place
    w = rng.normal(size=20)
    y = X @ w + 0.1 * rng.normal(size=50000)
    reg = corral.Regressor(algo="hogwild", threads=2, epochs=5, l2=0.0).fit(X, y)
    print(f"R^2 after 5 epochs: {reg.score(X, y):.5f}")
    reg.partial_fit(X, y)  # one more epoch, continuing the same run
    print(f"R^2 after {reg.model_.epochs_done} epochs: {reg.score(X, y):.5f}")
    print("largest weight error:", float(np.max(np.abs(reg.model_.params - w))))


if __name__ == "__main__":
    main()
