#!/usr/bin/python3
"""--class-weight balanced on a skewed set against scikit-learn (issue 20).

ijcnn1 (about 10% positives), logistic, C=1 (Corral's default l2 = 1/rows), no intercept:
Corral at 1 thread for --epochs epochs, without and with --class-weight balanced, against
scikit-learn's LogisticRegression(C=1, class_weight=None / "balanced", fit_intercept=False),
which minimises the same objective (C sum_i c_i loss_i + |w|^2/2 is n times Corral's
(1/n) sum_i c_i loss_i + (1/(2n))|w|^2). Reported on ijcnn1.t: the minority (positive) class's
recall and the accuracy; on the training set: both objectives in Corral's mean form.

  bench/class_weight.py --corral build/engine/cli/corral [--data /work/shared/data/ijcnn1]
"""
import argparse
import json
import os
import subprocess
import tempfile

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import LogisticRegression


def recall_and_accuracy(y_true, y_pred):
    positive = y_true > 0
    recall = np.mean(y_pred[positive] > 0)
    return recall, np.mean((y_pred > 0) == positive)


def objective(w, X, y, weights):
    """Corral's mean form: (1/n) sum_i c_i log(1 + exp(-y_i m_i)) + (1/(2n))|w|^2."""
    m = X @ w
    sign = np.where(y > 0, 1.0, -1.0)
    c = np.where(y > 0, weights[1], weights[0])
    n = X.shape[0]
    return float(np.sum(c * np.logaddexp(0, -sign * m)) / n + 0.5 / n * w @ w)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--corral", required=True)
    parser.add_argument("--data", default="/work/shared/data/ijcnn1")
    parser.add_argument("--epochs", type=int, default=30)
    args = parser.parse_args()
    train_path = os.path.join(args.data, "ijcnn1")
    test_path = os.path.join(args.data, "ijcnn1.t")
    X, y = load_svmlight_file(train_path, n_features=22)
    Xt, yt = load_svmlight_file(test_path, n_features=22)
    n = X.shape[0]
    positives = np.sum(y > 0)
    balanced = (n / (2 * (n - positives)), n / (2 * positives))
    print(f"ijcnn1: {n} rows, {positives / n:.1%} positives; balanced weights "
          f"{balanced[0]:.4f} (negative), {balanced[1]:.4f} (positive)")
    print(f"{'run':34} {'recall+':>8} {'accuracy':>9} {'objective':>10}")
    with tempfile.TemporaryDirectory(prefix="corral-cw-") as tmp:
        for spec, sk_weight, weights in (("none", None, (1.0, 1.0)),
                                         ("balanced", "balanced", balanced)):
            model = os.path.join(tmp, spec + ".model")
            metrics = os.path.join(tmp, spec + ".jsonl")
            subprocess.run([args.corral, "train", "--data", train_path, "--model", "logistic",
                            "--threads", "1", "--epochs", str(args.epochs), "--class-weight", spec,
                            "--save", model, "--metrics", metrics, "--quiet"], check=True)
            predictions = subprocess.run(
                [args.corral, "predict", "--model", model, "--data", test_path, "--output", "-"],
                check=True, capture_output=True, text=True).stdout.splitlines()[1:]
            labels = np.array([float(line.split(",")[0]) for line in predictions])
            evals = [json.loads(line) for line in open(metrics)]
            corral_obj = [e for e in evals if "objective" in e][-1]["objective"]
            r, a = recall_and_accuracy(yt, labels)
            print(f"{'corral --class-weight ' + spec:34} {r:8.4f} {a:9.4f} {corral_obj:10.6f}")

            clf = LogisticRegression(C=1.0, class_weight=sk_weight, fit_intercept=False, tol=1e-8,
                                     max_iter=10000).fit(X, y)
            r, a = recall_and_accuracy(yt, clf.predict(Xt))
            sk_obj = objective(clf.coef_.ravel(), X, y, weights)
            print(f"{'sklearn class_weight=' + str(sk_weight):34} {r:8.4f} {a:9.4f} {sk_obj:10.6f}")


if __name__ == "__main__":
    main()
