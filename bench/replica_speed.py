#!/usr/bin/python3
"""The replica modes against hogwild, side by side in one run, as ratios (issue: replicas at
hardware speed).

1. A generated sparse set (200,000 rows, 100,000 features, 20 per row, Zipf 1.1, noise 0.05,
   seed 1): hogwild and every replica mode at its defaults (--gossip-every auto), 2 threads,
   --lr 0.25, --epochs 10 (or --epochs); samples/s relative to hogwild's and the final
   objective relative to hogwild's, and the period K and gossip share the automatic period
   settled on in the last epoch. dcd and ecd (every step by default: minutes on this set, each
   round O(d)) are left out.
2. a9a (../shared/data/a9a), 2 threads: hogwild vs dpsgd --gossip-every 1 (every step: the
   cost of a round itself).
Every speed is the median of --repeat runs, interleaved with hogwild's so that machine noise
hits both sides; the ratio is taken between medians.

  bench/replica_speed.py --corral build/engine/cli/corral [--data ../shared/data] [--repeat 2]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile

import zipf_set


def corral(binary, args, metrics):
    subprocess.run([binary, "train", *args, "--quiet", "--metrics", metrics], check=True)
    with open(metrics) as f:
        lines = [json.loads(line) for line in f.read().splitlines()]
    return lines[-1], lines[:-1]


def compare(binary, data, common, modes, repeat, tmp):
    """modes: [(label, extra args)], the first is the baseline. Prints one row per mode."""
    speeds = {label: [] for label, _ in modes}
    last = {}
    for _ in range(repeat):
        for label, extra in modes:
            summary, epochs = corral(binary, ["--data", data, *common, *extra],
                                     os.path.join(tmp, "m.jsonl"))
            speeds[label].append(summary["samples_per_s"])
            last[label] = (summary, epochs)
    base_label = modes[0][0]
    base_speed = statistics.median(speeds[base_label])
    base_obj = last[base_label][0]["objective"]
    print(f"  {'mode':<34} {'samples/s':>10} {'vs ' + base_label:>12} {'objective':>10} "
          f"{'obj ratio':>9} {'K':>6} {'share':>6}")
    for label, _ in modes:
        summary, epochs = last[label]
        speed = statistics.median(speeds[label])
        k = summary.get("gossip_every", "")
        share = summary.get("gossip_share")
        print(f"  {label:<34} {speed / 1e6:>9.3f}M {speed / base_speed:>12.3f} "
              f"{summary['objective']:>10.6f} {summary['objective'] / base_obj:>9.4f} "
              f"{k!s:>6} {'' if share is None else f'{100 * share:5.1f}%':>6}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corral", default="build/engine/cli/corral")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        zipf = zipf_set.make(args.corral, os.path.join(tmp, "zipf.cache"))
        common = ["--threads", str(args.threads), "--epochs", str(args.epochs), "--lr", "0.25"]
        print(f"Zipf set, {args.threads} threads, {args.epochs} epochs, --lr 0.25, defaults "
              f"otherwise (median of {args.repeat})")
        compare(args.corral, zipf, common, [
            ("hogwild", ["--algo", "hogwild"]),
            ("dpsgd", ["--algo", "dpsgd"]),
            ("local", ["--algo", "local"]),
            ("choco (qsgd:8)", ["--algo", "choco"]),
            ("choco topk:0.01", ["--algo", "choco", "--compress", "topk:0.01"]),
            ("adpsgd", ["--algo", "adpsgd"]),
            ("dpsgd --gossip-every 64", ["--algo", "dpsgd", "--gossip-every", "64"]),
        ], args.repeat, tmp)

        a9a = os.path.join(args.data, "a9a", "a9a")
        if not os.path.exists(a9a):
            print(f"skip a9a: {a9a} not found")
            return
        print(f"\na9a, {args.threads} threads, {args.epochs} epochs, --lr 0.25 "
              f"(median of {args.repeat})")
        compare(args.corral, a9a, common, [
            ("hogwild", ["--algo", "hogwild"]),
            ("dpsgd --gossip-every 1", ["--algo", "dpsgd", "--gossip-every", "1"]),
            ("dpsgd", ["--algo", "dpsgd"]),
        ], args.repeat, tmp)


if __name__ == "__main__":
    main()
