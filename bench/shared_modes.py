#!/usr/bin/python3
"""The shared-model modes side by side, in one run, reported as ratios (issue: shared-model engine).

1. a9a, logistic, 1 thread: Corral hogwild vs scikit-learn's SGDClassifier (log loss, L2 alpha =
   Corral's l2, no intercept, shuffling on, same epochs), samples/s of training only; Corral's
   objective against LIBLINEAR's optimum 0.32338 (C=1).
2. A generated sparse set (200,000 rows, 100,000 features, 20 per row, Zipf 1.1): hogwild at 1
   and 2 threads with and without the hot head (--hot-coords off: the plain HOGWILD! loop),
   locked, sync and qsgd at 2 threads; samples/s and final objectives, and the objectives at a
   quarter of the searched step.
3. A generated dense set larger than the caches (100,000 x 2,000, 800 MB as fp32): hogwild fp32
   and buckwild with 8-bit data (16-bit model) at 1 and 2 threads, hogwild++ at 2 (its automatic
   groups, and groups of 1) and --algo auto at 2 (which picks groups of 1 on dense rows), each against
   the bandwidth bound (the machine's streaming bandwidth, a copy's bytes read and written per
   second measured in the same run, over the bytes of a row), and the 8-bit model with stochastic vs nearest rounding.
Every speed is the median of --repeat runs, interleaved so that machine noise hits both sides.

  bench/shared_modes.py --corral build/engine/cli/corral [--data ../shared/data] [--repeat 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import zipf_set

LIBLINEAR_A9A = 0.32338  # 10529.6 / 32561: LIBLINEAR's L2 logistic objective, C = 1


def corral(binary, *args, metrics):
    subprocess.run([binary, *args, "--quiet", "--metrics", metrics], check=True)
    with open(metrics) as f:
        return json.loads(f.read().splitlines()[-1])


def median_runs(repeat, fns):
    """Runs each function `repeat` times, interleaved; returns the list of results per function."""
    results = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            results[i].append(fn())
    return results


def a9a_vs_sklearn(args, tmp):
    from sklearn.datasets import load_svmlight_file
    from sklearn.linear_model import SGDClassifier
    import numpy as np

    path = os.path.join(args.data, "a9a", "a9a")
    if not os.path.exists(path):
        print(f"skip a9a: {path} not found")
        return
    x, y = load_svmlight_file(path, n_features=123)
    rows, l2, epochs = x.shape[0], 3.0712e-5, args.epochs

    def run_sklearn():
        clf = SGDClassifier(loss="log_loss", alpha=l2, fit_intercept=False, max_iter=epochs,
                            tol=None, shuffle=True, random_state=1)
        start = time.perf_counter()
        clf.fit(x, y)
        seconds = time.perf_counter() - start
        margin = x @ clf.coef_.ravel()
        objective = np.mean(np.logaddexp(0, -y * margin)) + 0.5 * l2 * np.sum(clf.coef_ ** 2)
        return rows * epochs / seconds, objective

    def run_corral():
        s = corral(args.corral, "train", "--data", path, "--threads", "1", "--epochs", str(epochs),
                   "--l2", str(l2), metrics=os.path.join(tmp, "a9a.jsonl"))
        return s["samples_per_s"], s["objective"]

    sk, co = median_runs(args.repeat, [run_sklearn, run_corral])
    sk_rate, co_rate = statistics.median(r for r, _ in sk), statistics.median(r for r, _ in co)
    co_obj = statistics.median(o for _, o in co)
    print(f"a9a logistic, 1 thread, {epochs} epochs (median of {args.repeat}):")
    print(f"  sklearn SGDClassifier {sk_rate:12,.0f} samples/s  objective {sk[0][1]:.5f}")
    print(f"  corral hogwild        {co_rate:12,.0f} samples/s  objective {co_obj:.5f}"
          f" ({100 * (co_obj / LIBLINEAR_A9A - 1):+.2f}% vs LIBLINEAR)")
    print(f"  ratio corral/sklearn  {co_rate / sk_rate:.2f}x")


def generated_sparse(args, tmp):
    data = zipf_set.make(args.corral, os.path.join(tmp, "zipf.cache"))
    common = ["train", "--data", data, "--epochs", str(args.epochs)]

    def mode(threads, *extra):
        return lambda: corral(args.corral, *common, "--threads", str(threads), *extra,
                              metrics=os.path.join(tmp, "zipf.jsonl"))

    off = ("--hot-coords", "off")
    names = ["hogwild 1T", "hogwild 2T", "plain 1T (hot off)", "plain 2T (hot off)", "locked 2T"]
    runs = median_runs(args.repeat, [mode(1), mode(2), mode(1, *off), mode(2, *off),
                                     mode(2, "--algo", "locked")])
    once = [mode(2, "--algo", "sync", "--batch", "8")(), mode(2, "--algo", "qsgd", "--batch", "8")()]
    rate = [statistics.median(r["samples_per_s"] for r in rs) for rs in runs]
    obj = [statistics.median(r["objective"] for r in rs) for rs in runs]
    print(f"generated Zipf 1.1 sparse set, logistic, {args.epochs} epochs (median of {args.repeat}):")
    for name, r, rs in zip(names, rate, runs):
        objs = [x["objective"] for x in rs]
        print(f"  {name:22s}{r:12,.0f} samples/s  objective {statistics.median(objs):.5f}"
              f" (runs {min(objs):.5f}..{max(objs):.5f})")
    print(f"  hot coords            {runs[1][0]['hot_coords']}, synced after ~{runs[1][0]['hot_sync']} updates each")
    for name, s in zip(["sync 2T batch 8", "qsgd:8 2T batch 8"], once):
        print(f"  {name:22s}{s['samples_per_s']:12,.0f} samples/s  objective {s['objective']:.5f}"
              f"  bytes sent {s['bytes_sent'] / 1e6:.0f} MB")

    def paired(i, j):  # the median of the per-repeat ratios: both runs met the same machine state
        return statistics.median(a["samples_per_s"] / b["samples_per_s"] for a, b in zip(runs[i], runs[j]))

    worst = max(abs(r["objective"] / obj[0] - 1) for r in runs[1])
    print(f"  hogwild 2T / 1T       {rate[1] / rate[0]:.2f}x samples/s (paired {paired(1, 0):.2f}x),"
          f" objective {100 * (obj[1] / obj[0] - 1):+.2f}% (worst run {100 * worst:.2f}%)")
    print(f"  plain 2T / plain 1T   {rate[3] / rate[2]:.2f}x (paired {paired(3, 2):.2f}x)")
    print(f"  hogwild 1T / plain 1T {rate[0] / rate[2]:.2f}x, hogwild 2T / plain 1T {rate[1] / rate[2]:.2f}x")
    print(f"  locked 2T / hogwild 2T {rate[4] / rate[1]:.2f}x")
    for name, s in zip(["sync", "qsgd"], once):
        print(f"  {name} objective vs hogwild 1T {100 * (s['objective'] / obj[0] - 1):+.2f}%")
    # The searched step (1 on this set) leaves the last iterate +-1% from epoch to epoch even with
    # one thread; at a quarter of it both thread counts end lower and the comparison is not noise.
    small = median_runs(max(3, args.repeat // 2), [mode(1, "--lr", "0.25"), mode(2, "--lr", "0.25")])
    o1 = statistics.median(r["objective"] for r in small[0])
    o2 = [r["objective"] for r in small[1]]
    print(f"  --lr 0.25: hogwild 1T objective {o1:.5f}, 2T {statistics.median(o2):.5f}"
          f" ({100 * (statistics.median(o2) / o1 - 1):+.2f}%, runs {min(o2):.5f}..{max(o2):.5f})")


def _stream_gbs(nbytes, out):
    """One process's streaming bandwidth: the best of 5 copies of an nbytes array, counting the
    bytes read and written (as STREAM does). numpy's reductions (sum, max) run below it here:
    they are bound by their arithmetic, not by memory."""
    import numpy as np
    a = np.ones(nbytes // 4, dtype=np.float32)
    b = np.empty_like(a)
    best = 0.0
    for _ in range(5):
        start = time.perf_counter()
        np.copyto(b, a)
        best = max(best, 2 * a.nbytes / (time.perf_counter() - start))
    out.put(best / 1e9)


def stream_bandwidth(processes, nbytes=800 << 20):
    """GB/s that `processes` processes stream at once, each copying its own arrays."""
    import multiprocessing
    out = multiprocessing.Queue()
    ps = [multiprocessing.Process(target=_stream_gbs, args=(nbytes, out)) for _ in range(processes)]
    for p in ps:
        p.start()
    total = sum(out.get() for _ in ps)
    for p in ps:
        p.join()
    return total


def generated_dense(args, tmp):
    features = 2000
    data = os.path.join(tmp, "dense.cache")
    subprocess.run([args.corral, "data", "gen", "classification", "--rows", "100000", "--features",
                    str(features), "--dense", "--out", data], check=True, stdout=subprocess.DEVNULL)
    cases = [(1, "hogwild"), (1, "buckwild", "--bits", "8"), (2, "hogwild"), (2, "buckwild", "--bits", "8"),
             (2, "hogwild++"), (2, "hogwild++", "--group-size", "1"), (2, "auto"), (1, "hogwild", "--shuffle", "epoch")]

    def mode(threads, *extra):
        return lambda: corral(args.corral, "train", "--data", data, "--threads", str(threads), "--epochs", "5",
                              "--algo", *extra, metrics=os.path.join(tmp, "dense.jsonl"))

    bandwidth = {1: stream_bandwidth(1), 2: stream_bandwidth(2)}  # beside the runs: the same machine state
    runs = median_runs(args.repeat, [mode(*c) for c in cases])
    bandwidth = {t: max(g, stream_bandwidth(t)) for t, g in bandwidth.items()}
    print(f"generated dense set 100,000 x {features:,}, logistic, 5 epochs (median of {args.repeat});"
          f" streaming bandwidth {bandwidth[1]:.1f} GB/s (1 process), {bandwidth[2]:.1f} GB/s (2)")
    print("  the bound: bandwidth / bytes of a row (4 a value, 1 with --bits 8); the model stays in cache")
    rate = []
    for case, rs in zip(cases, runs):
        threads, name = case[0], " ".join(case[1:])
        r = statistics.median(x["samples_per_s"] for x in rs)
        rate.append(r)
        row_bytes = features * (1 if "--bits" in case else 4)
        bound = bandwidth[threads] * 1e9 / row_bytes
        print(f"  {name:24s} {threads}T {r:10,.0f} samples/s  {r * row_bytes / 1e9:5.2f} GB/s"
              f"  {100 * r / bound:5.1f}% of the bound  objective"
              f" {statistics.median(x['objective'] for x in rs):.5f}  shuffle {rs[0].get('shuffle')}"
              + (f"  ran {rs[0].get('algo')}" if name == "auto" else ""))
    print(f"  buckwild --bits 8 / hogwild: 1T {rate[1] / rate[0]:.2f}x, 2T {rate[3] / rate[2]:.2f}x,"
          f" 2T / hogwild++ groups of 1 {rate[3] / rate[5]:.2f}x samples/s")
    print(f"  hogwild 1T --shuffle auto / epoch {rate[0] / rate[7]:.2f}x;"
          f" auto 2T / hogwild 2T {rate[6] / rate[2]:.2f}x")
    one = ["train", "--data", data, "--threads", "2", "--epochs", "1", "--lr", "0.25",
           "--algo", "buckwild", "--model-bits", "8"]
    sto = corral(args.corral, *one, metrics=os.path.join(tmp, "r.jsonl"))
    near = corral(args.corral, *one, "--rounding", "nearest", metrics=os.path.join(tmp, "r.jsonl"))
    print(f"  8-bit model, 1 epoch: stochastic rounding objective {sto['objective']:.5f},"
          f" nearest {near['objective']:.5f} (log 2 = {0.693147:.5f}: no progress)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corral", default="build/engine/cli/corral")
    parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--only", choices=["a9a", "sparse", "dense"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "a9a"):
            a9a_vs_sklearn(args, tmp)
        if args.only in (None, "sparse"):
            generated_sparse(args, tmp)
        if args.only in (None, "dense"):
            generated_dense(args, tmp)


if __name__ == "__main__":
    sys.exit(main())
