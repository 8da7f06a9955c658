#!/usr/bin/python3
"""Shuffling at memory speed (issue 23), in one run, reported as ratios.

The generated Zipf set (200,000 rows, 100,000 features, 20 per row, Zipf 1.1), logistic,
--lr 0.25, 10 epochs: hogwild at 1 and 2 threads with --shuffle index (rows read through the
shuffled index: what Corral did before), epoch (the same order, each worker's rows copied into
it every epoch and streamed) and off (storage order: no shuffling, the bound). Prints samples/s
(median of --repeat runs, interleaved so that machine noise hits every setting alike), the
ratios epoch/index and epoch/off, 2 threads / 1 thread, and the final objectives (epoch and
index visit the same samples in the same order: at 1 thread their objectives are equal).

  bench/shuffle.py --corral build/engine/cli/corral [--repeat 3] [--epochs 10]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile

import zipf_set

SHUFFLES = ("index", "epoch", "off")


def corral(binary, *args, metrics):
    subprocess.run([binary, *args, "--quiet", "--metrics", metrics], check=True)
    with open(metrics) as f:
        return json.loads(f.read().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corral", required=True, help="the corral binary")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]

    with tempfile.TemporaryDirectory() as tmp:
        data = zipf_set.make(args.corral, os.path.join(tmp, "zipf.cache"))
        metrics = os.path.join(tmp, "m.jsonl")
        runs = {(t, s): [] for t in threads for s in SHUFFLES}
        for _ in range(args.repeat):
            for t in threads:
                for s in SHUFFLES:
                    runs[(t, s)].append(corral(
                        args.corral, "train", "--data", data, "--algo", "hogwild", "--threads",
                        str(t), "--lr", "0.25", "--epochs", str(args.epochs), "--shuffle", s,
                        metrics=metrics))

    speed = {k: statistics.median(r["samples_per_s"] for r in v) for k, v in runs.items()}
    print(f"hogwild on the Zipf set, {args.epochs} epochs, median of {args.repeat}")
    print(f"{'threads':>7} {'shuffle':>7} {'samples/s':>11} {'objective (each run)':>28} "
          f"{'copy MB':>8}")
    for (t, s), v in runs.items():
        objectives = " ".join(f"{r['objective']:.6f}" for r in v)
        copy_mb = v[0].get("shuffle_copy_bytes", 0) / 1e6
        used = v[0].get("shuffle", "?")
        note = "" if used == s else f"  (ran as {used})"
        print(f"{t:>7} {s:>7} {speed[(t, s)] / 1e6:>10.2f}M {objectives:>28} {copy_mb:>8.1f}{note}")
    print()
    for t in threads:
        print(f"{t} thread(s): epoch/index {speed[(t, 'epoch')] / speed[(t, 'index')]:.2f}x, "
              f"epoch/off {speed[(t, 'epoch')] / speed[(t, 'off')]:.2f}x, "
              f"off/index {speed[(t, 'off')] / speed[(t, 'index')]:.2f}x")
    if len(threads) > 1:
        lo, hi = threads[0], threads[-1]
        for s in SHUFFLES:
            print(f"{s}: {hi} threads / {lo} thread {speed[(hi, s)] / speed[(lo, s)]:.2f}x")


if __name__ == "__main__":
    main()
