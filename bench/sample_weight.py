#!/usr/bin/python3
"""--weights FILE against scikit-learn's sample_weight, and against --class-weight (issue 20).

ijcnn1, logistic, C=1 (Corral's default l2 = 1/rows), no intercept, 1 thread, --epochs epochs.
Two kinds of per-row weights:
- random: seeded, uniform in [0, 3) with one row in eight weighing 0;
- balanced: each row its class's balanced weight n / (2 n_c), which must train what
  --class-weight balanced trains (the same objective, reached by the same steps).
Each is compared with scikit-learn's LogisticRegression(C=1, fit_intercept=False) fitted with
sample_weight=, which minimises C sum_i s_i loss_i + |w|^2/2, n times Corral's objective
(1/n) sum_i s_i loss_i + (1/(2n))|w|^2. Reported: the objective both reach on the training set,
in Corral's mean form, computed here for both models from the saved parameters.

  bench/sample_weight.py --corral build/engine/cli/corral [--data /work/shared/data/ijcnn1]
"""
import argparse
import os
import subprocess
import tempfile

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import LogisticRegression


def objective(w, X, y, s):
    """Corral's mean form: (1/n) sum_i s_i log(1 + exp(-y_i m_i)) + (1/(2n))|w|^2."""
    sign = np.where(y > 0, 1.0, -1.0)
    n = X.shape[0]
    return float(np.sum(s * np.logaddexp(0, -sign * (X @ w))) / n + 0.5 / n * w @ w)


def corral_params(corral, model, features):
    """The parameters of a saved logistic model: `corral predict`'s margins of unit rows."""
    with tempfile.NamedTemporaryFile("w", suffix=".svm", delete=False) as unit:
        for u in range(features):
            unit.write(f"1 {u + 1}:1\n")
    out = subprocess.run([corral, "predict", "--model", model, "--data", unit.name, "--output", "-",
                          "--format", "libsvm"], check=True, capture_output=True, text=True).stdout
    os.unlink(unit.name)
    header, *rows = out.splitlines()
    column = header.split(",").index("score")  # logistic's score is the margin <w, x> = w_u here
    return np.array([float(r.split(",")[column]) for r in rows])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--corral", required=True)
    parser.add_argument("--data", default="/work/shared/data/ijcnn1")
    parser.add_argument("--epochs", type=int, default=30)
    args = parser.parse_args()
    train_path = os.path.join(args.data, "ijcnn1")
    X, y = load_svmlight_file(train_path, n_features=22)
    n = X.shape[0]
    rng = np.random.default_rng(1)
    random = rng.uniform(0, 3, n) * (rng.integers(0, 8, n) != 0)
    positives = np.sum(y > 0)
    balanced = np.where(y > 0, n / (2 * positives), n / (2 * (n - positives)))
    print(f"ijcnn1: {n} rows; objective (1/n) sum s_i loss_i + |w|^2/(2n) at each model")
    print(f"{'weights':10} {'corral --weights':>17} {'sklearn':>10} {'ratio':>8} {'--class-weight balanced':>24}")
    with tempfile.TemporaryDirectory(prefix="corral-sw-") as tmp:
        for name, s in (("random", random), ("balanced", balanced)):
            weights = os.path.join(tmp, name + ".txt")
            np.savetxt(weights, s, fmt="%.9g")
            model = os.path.join(tmp, name + ".model")
            common = [args.corral, "train", "--data", train_path, "--model", "logistic", "--threads", "1",
                      "--epochs", str(args.epochs), "--quiet"]
            subprocess.run(common + ["--weights", weights, "--save", model], check=True)
            ours = objective(corral_params(args.corral, model, 22), X, y, s)
            clf = LogisticRegression(C=1.0, fit_intercept=False, tol=1e-10, max_iter=100000)
            theirs = objective(clf.fit(X, y, sample_weight=s).coef_.ravel(), X, y, s)
            by_class = ""
            if name == "balanced":
                cw = os.path.join(tmp, "cw.model")
                subprocess.run(common + ["--class-weight", "balanced", "--save", cw], check=True)
                by_class = f"{objective(corral_params(args.corral, cw, 22), X, y, s):.6f}"
            print(f"{name:10} {ours:17.6f} {theirs:10.6f} {ours / theirs:8.4f} {by_class:>24}")


if __name__ == "__main__":
    main()
