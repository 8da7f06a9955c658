#!/usr/bin/python3
"""Corral from Python vs scikit-learn, and the Python layer's overhead over the CLI (issue 19).

1. a9a, logistic, 1 and 2 threads: corral.Classifier(algo="hogwild") against scikit-learn's
   SGDClassifier(loss="log_loss") with the same L2 (alpha = Corral's l2 = 1/rows, LIBLINEAR's
   C=1), no intercept, the same epochs; samples/s of fit() (validation and conversion
   included, both sides; Corral's also includes its step-size search and the evaluation of the
   objective after the last epoch: the estimators' --eval-every auto skips the others, nothing
   watches them), Corral's epochs alone, and Corral's objective against LIBLINEAR's optimum (10529.6, the
   sum form; Corral's mean form times the rows).
2. The same training (a9a read from its file, the same flags) through corral.train and through
   the `corral` binary: wall time of each, the overhead of Python over the CLI.
Every number is the median of --repeat runs, interleaved so that machine noise hits both sides.

  PYTHONPATH=build/python bench/python_vs_sklearn.py --corral build/engine/cli/corral
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

LIBLINEAR_OBJECTIVE = 10529.6  # a9a, C=1, logistic: sum of losses + |w|^2 / 2


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corral", default=os.path.join(here, "..", "build", "engine", "cli", "corral"))
    p.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data"))
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    sys.path.insert(0, os.path.join(here, "..", "build", "python"))
    import numpy as np
    from sklearn.datasets import load_svmlight_file
    from sklearn.linear_model import SGDClassifier
    import corral

    path = os.path.join(args.data, "a9a", "a9a")
    X, y = load_svmlight_file(path, n_features=123)
    rows, epochs = X.shape[0], args.epochs
    l2 = 1.0 / rows

    def objective(w):
        margin = X @ w
        return (np.sum(np.logaddexp(0, -y * margin)) + 0.5 * l2 * rows * np.dot(w, w))

    def sklearn_run():
        clf = SGDClassifier(loss="log_loss", alpha=l2, fit_intercept=False, max_iter=epochs,
                            tol=None, shuffle=True, random_state=1)
        start = time.perf_counter()
        clf.fit(X, y)
        return rows * epochs / (time.perf_counter() - start), objective(clf.coef_.ravel()), None

    def corral_run(threads):
        clf = corral.Classifier(algo="hogwild", threads=threads, epochs=epochs)
        start = time.perf_counter()
        clf.fit(X, y)
        seconds = time.perf_counter() - start
        # Also the rate of the epochs alone (Corral's summary: no conversion, step-size search
        # or per-epoch evaluation), what bench/shared_modes.py reports.
        train_only = clf.history_[-1]["step"] / clf.history_[-1]["train_s"]
        return rows * epochs / seconds, objective(clf.model_.params.astype(np.float64)), train_only

    print(f"a9a ({rows} rows), logistic, {epochs} epochs, median of {args.repeat}:")
    sk, co = [], {1: [], 2: []}
    for _ in range(args.repeat):
        sk.append(sklearn_run())
        for t in co:
            co[t].append(corral_run(t))
    sk_rate = statistics.median(r for r, _, _ in sk)
    sk_obj = statistics.median(o for _, o, _ in sk)
    print(f"  sklearn SGDClassifier         {sk_rate:12,.0f} samples/s  objective {sk_obj:10.1f}"
          f" ({sk_obj / LIBLINEAR_OBJECTIVE - 1:+.2%} vs LIBLINEAR)")
    for t, runs in co.items():
        rate = statistics.median(r for r, _, _ in runs)
        obj = statistics.median(o for _, o, _ in runs)
        epochs_rate = statistics.median(e for _, _, e in runs)
        print(f"  corral.Classifier {t} thread{'s' if t > 1 else ' '}  {rate:12,.0f} samples/s"
              f"  objective {obj:10.1f} ({obj / LIBLINEAR_OBJECTIVE - 1:+.2%} vs LIBLINEAR)"
              f"  {rate / sk_rate:5.2f}x sklearn; epochs alone {epochs_rate:12,.0f} samples/s"
              f" ({epochs_rate / sk_rate:5.2f}x)")

    print(f"corral.train vs the CLI, same training (a9a from its file, 2 threads, {epochs} epochs):")
    flags = dict(threads=2, epochs=epochs, seed=1)
    py_s, cli_s = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            start = time.perf_counter()
            corral.train(corral.load(path), **flags)
            py_s.append(time.perf_counter() - start)
            cmd = [args.corral, "train", "--data", path, "--quiet",
                   "--metrics", os.path.join(tmp, "m.jsonl")]
            for k, v in flags.items():
                cmd += ["--" + k, str(v)]
            start = time.perf_counter()
            subprocess.run(cmd, check=True)
            cli_s.append(time.perf_counter() - start)
    py, cli = statistics.median(py_s), statistics.median(cli_s)
    print(f"  python {py:.3f} s, cli {cli:.3f} s (process start included): "
          f"python overhead {py / cli - 1:+.1%}")


if __name__ == "__main__":
    main()
