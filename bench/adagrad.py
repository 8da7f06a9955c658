#!/usr/bin/python3
"""--optimizer adagrad against plain SGD's best fixed step (issue 20's done-when).

For each set: the LIBLINEAR optimum of L2 logistic regression at C=1 (scikit-learn's bundled
LIBLINEAR, solver="liblinear", no intercept; Corral's default l2 = 1/rows is the same
objective), then `corral train --algo hogwild --threads 2` for --epochs epochs with plain SGD at
every fixed step 2^-6 .. 2^3 (the default --lr-decay 0.9) and with --optimizer adagrad (its
searched default step, with the default decay and with --lr-decay 1; and at 2^-3 .. 2^1).
Reported: the first epoch whose objective is within 1% of the optimum, the last epoch's
objective, and the run's step (the searched one where --lr is unset).

  bench/adagrad.py --corral build/engine/cli/corral --data rcv1_small.svm zipf.svm
(the Zipf set: corral data gen classification --rows 200000 --features 100000 --nnz-per-row 20
 --zipf 1.1 --noise 0.05 --seed 1 --out zipf.svm)
"""
import argparse
import json
import os
import subprocess
import tempfile

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import LogisticRegression


def liblinear_optimum(path):
    X, y = load_svmlight_file(path)
    clf = LogisticRegression(C=1.0, solver="liblinear", fit_intercept=False, tol=1e-10,
                             max_iter=10000).fit(X, y)
    w = clf.coef_.ravel()
    sign = np.where(y > 0, 1.0, -1.0)
    n = X.shape[0]
    return float(np.sum(np.logaddexp(0, -sign * (X @ w))) / n + 0.5 / n * w @ w)


def objectives(corral, path, epochs, flags, tmp):
    metrics = os.path.join(tmp, "m.jsonl")
    subprocess.run([corral, "train", "--data", path, "--algo", "hogwild", "--threads", "2",
                    "--epochs", str(epochs), "--metrics", metrics, "--quiet", *flags], check=True)
    lines = [json.loads(line) for line in open(metrics)]
    lr = next(e["lr"] for e in lines if e.get("event") == "summary")
    return [e["objective"] for e in lines if e.get("event") != "summary"], lr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--corral", required=True)
    parser.add_argument("--data", nargs="+", required=True)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--optimum", type=float, nargs="*",
                        help="the optima of --data in order, when already known (skips LIBLINEAR)")
    args = parser.parse_args()
    runs = [(f"sgd --lr 2^{k}", ["--lr", str(2.0 ** k)]) for k in range(-6, 4)]
    runs += [("adagrad (searched)", ["--optimizer", "adagrad"]),
             ("adagrad --lr-decay 1", ["--optimizer", "adagrad", "--lr-decay", "1"])]
    runs += [(f"adagrad --lr 2^{k}", ["--optimizer", "adagrad", "--lr", str(2.0 ** k)])
             for k in range(-3, 2)]
    with tempfile.TemporaryDirectory(prefix="corral-adagrad-") as tmp:
        for i, path in enumerate(args.data):
            optimum = args.optimum[i] if args.optimum else liblinear_optimum(path)
            print(f"{os.path.basename(path)}: LIBLINEAR optimum {optimum:.6f}, target +1% "
                  f"{optimum * 1.01:.6f}")
            print(f"  {'run':24} {'epochs to +1%':>14} {'final objective':>16} {'lr':>10}")
            for name, flags in runs:
                obj, lr = objectives(args.corral, path, args.epochs, flags, tmp)
                reached = next((i + 1 for i, o in enumerate(obj) if o <= optimum * 1.01), None)
                shown = str(reached) if reached else f">{args.epochs}"
                print(f"  {name:24} {shown:>14} {obj[-1]:16.6f} {lr:10.6g}", flush=True)


if __name__ == "__main__":
    main()
