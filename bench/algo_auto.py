#!/usr/bin/python3
"""--algo auto against the modes it chooses between, at 2 threads, in one run (issue #21).

1. Fashion-MNIST MLP (784-256-128-10, --batch 16, --lr 0.05, --epochs 3): auto vs hogwild vs
   hogwild++ with its default groups (one per L3 domain) and with groups of 1 (what auto sets),
   and the PyTorch HOGWILD! peer of bench/mlp_vs_pytorch.py
   (one epoch: its rate does not change with the epoch) when python3-torch is installed.
2. Logistic regression (--lr 0.25, --epochs 10) on a9a and on the Zipf set (bench/zipf_set.py):
   auto vs hogwild.
Each corral row: samples/s of training (the metrics summary's), the final objective and test
accuracy, the mode auto ran; ratios against hogwild (and the PyTorch peer). Every number is the
median of --repeat runs (--linear-repeat for the linear sets), interleaved so that machine noise
hits every side alike. On the linear sets auto runs hogwild itself: their ratio is the noise.

  /usr/bin/python3 bench/algo_auto.py --corral build/engine/cli/corral [--data ../shared/data]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import mlp_vs_pytorch
import zipf_set


def corral(binary, args, tmp):
    """The metrics summary of one `corral train` run."""
    metrics = os.path.join(tmp, "metrics.jsonl")
    subprocess.run([binary, "train", *args, "--threads", "2", "--quiet", "--metrics", metrics],
                   check=True)
    with open(metrics) as f:
        return json.loads(f.read().splitlines()[-1])


def medians(runs):
    """Per side: median samples/s, objective and test accuracy, and the mode(s) that ran."""
    out = {}
    for side, summaries in runs.items():
        acc = [s["test_acc"] for s in summaries if "test_acc" in s]
        out[side] = {
            "samples_per_s": statistics.median(s["samples_per_s"] for s in summaries),
            "objective": statistics.median(s["objective"] for s in summaries),
            "test_acc": statistics.median(acc) if acc else None,
            "ran": "/".join(sorted({s["algo"] for s in summaries})),
        }
    return out


def compare(title, binary, data_args, sides, repeat, tmp, peer=None):
    """Runs every side `repeat` times interleaved (and `peer`, a () -> (samples/s, acc)); prints."""
    runs = {side: [] for side in sides}
    peer_runs = []
    for _ in range(repeat):
        for side, extra in sides.items():
            runs[side].append(corral(binary, [*data_args, *extra], tmp))
        if peer is not None:
            peer_runs.append(peer())
    m = medians(runs)
    base = m["hogwild"]["samples_per_s"]
    print(f"\n{title} (2 threads, median of {repeat})")
    print(f"{'side':>10} {'ran':>10} {'samples/s':>11} {'vs hogwild':>10} {'vs pytorch':>10}"
          f" {'objective':>10} {'test_acc':>8}")
    peer_rate = statistics.median(r[0] for r in peer_runs) if peer_runs else None
    for side, r in m.items():
        vs_peer = f"{r['samples_per_s'] / peer_rate:10.2f}" if peer_rate else f"{'-':>10}"
        acc = f"{r['test_acc']:8.4f}" if r["test_acc"] is not None else f"{'-':>8}"
        print(f"{side:>10} {r['ran']:>10} {r['samples_per_s']:11,.0f} {r['samples_per_s'] / base:10.2f}"
              f" {vs_peer} {r['objective']:10.6f} {acc}")
    if peer_rate:
        acc = statistics.median(r[1] for r in peer_runs)
        print(f"{'pytorch':>10} {'hogwild':>10} {peer_rate:11,.0f} {peer_rate / base:10.2f}"
              f" {1.0:10.2f} {'-':>10} {acc:8.4f}")
    sys.stdout.flush()
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corral", default="build/engine/cli/corral")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    ap.add_argument("--fashion", default=mlp_vs_pytorch.DATA, help="Fashion-MNIST's IDX folder")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--linear-repeat", type=int, default=5,
                    help="repeats of the linear runs (a9a's take tens of milliseconds: noisy)")
    ap.add_argument("--mlp-epochs", type=int, default=3)
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch peer")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        train = os.path.join(args.fashion, "train-images-idx3-ubyte.gz")
        test = os.path.join(args.fashion, "t10k-images-idx3-ubyte.gz")
        if os.path.exists(train):
            peer = None
            if not args.no_torch:
                try:
                    import torch  # noqa: F401  (Debian's python3-torch)
                    peer = lambda: mlp_vs_pytorch.run_pytorch(train, test, 2, 0.05, 16)
                except ImportError:
                    print("no python3-torch: the PyTorch peer is skipped")
            mlp = ["--data", train, "--test", test, "--format", "idx", "--model", "mlp",
                   "--hidden", "256,128", "--batch", "16", "--lr", "0.05",
                   "--epochs", str(args.mlp_epochs)]
            compare("Fashion-MNIST mlp", args.corral, mlp,
                    {"auto": ["--algo", "auto"], "hogwild": ["--algo", "hogwild"],
                     "hogwild++": ["--algo", "hogwild++"],
                     "hw++ g1": ["--algo", "hogwild++", "--group-size", "1"]},
                    args.repeat, tmp, peer)
        else:
            print(f"skip the mlp: {train} not found (Debian: dataset-fashion-mnist)")

        linear = ["--model", "logistic", "--lr", "0.25", "--epochs", "10"]
        sides = {"auto": ["--algo", "auto"], "hogwild": ["--algo", "hogwild"]}
        a9a = os.path.join(args.data, "a9a", "a9a")
        if os.path.exists(a9a):
            compare("a9a logistic", args.corral,
                    ["--data", a9a, "--test", a9a + ".t", *linear], sides, args.linear_repeat, tmp)
        else:
            print(f"skip a9a: {a9a} not found")
        zipf = zipf_set.make(args.corral, os.path.join(tmp, "zipf.cache"))
        compare("Zipf set logistic", args.corral, ["--data", zipf, *linear], sides, args.linear_repeat,
                tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
