#!/usr/bin/python3
"""The replica modes against hogwild, side by side in one run, as ratios (issue: replicas at
hardware speed).

1. A generated sparse set (200,000 rows, 100,000 features, 20 per row, Zipf 1.1, noise 0.05,
   seed 1): hogwild and every replica mode at its defaults (--gossip-every auto), 2 threads,
   --lr 0.25, --epochs 10 (or --epochs); samples/s relative to hogwild's and the final
   objective relative to hogwild's, and the period K and gossip share the automatic period
   settled on in the last epoch (an automatic K that moved shows as "final (least-most)").
   With --before BINARY every row runs with that binary too, in the same loop.
2. a9a (../shared/data/a9a), 2 threads: hogwild vs dpsgd --gossip-every 1 (every step: the
   cost of a round itself).
3. Fashion-MNIST (Debian's dataset-fashion-mnist), --model mlp --hidden 256,128 --batch 16
   --lr 0.05, 2 threads, 3 epochs (--mlp-epochs): a dense model of 235k parameters; every
   replica mode at its defaults against hogwild++ (the baseline) and hogwild, with test
   accuracy (points against hogwild++'s) and the mean round's time split (microseconds:
   compute between rounds, encode, wait, decode, mix; metrics round_*_us). A run that fails
   (ecd diverges with qsgd:8 on this model) is reported as such. --before as in 1. Each mode
   runs --mlp-seeds times (default 8), run i with --seed i: one 3-epoch run's accuracy depends
   on its seed by up to 2 points (hogwild++ 0.846-0.867 over seeds 3-10), so the accuracies
   are medians over seeds, and "paired" is the mean of the differences seed by seed.
4. local's sparse rounds (--only local): the Zipf set as in 1, hogwild against local at its
   automatic period and at --gossip-every 16, and a9a against local --gossip-every 1; with
   --before BINARY (e.g. a build of main) local runs with that binary too, in the same loop.
   Bytes moved (MB, all directed edges) per row.
5. dcd and ecd, local steps (--only lagged): the Zipf set as in 1, hogwild against dcd and
   ecd at --gossip-every 8, 64, 512, 4096 (or --periods; --periods "" for the automatic
   period alone) and at auto (and ecd with --compress none at the largest period: the lag
   without the codec). A run that diverges is reported as failed. An automatic K that moved
   shows as "final (least-most)". With --before BINARY the automatic rows run with that binary
   too, in the same loop.
6. Cheap rounds (--only rounds): a9a, hogwild against dpsgd --gossip-every 1 (a round per
   step: what a round costs), and the Zipf set, hogwild against adpsgd at 1 and 2 threads
   (adpsgd's step against hogwild's, with the hot head). With --before BINARY each row runs
   with that binary too, in the same loop; its dpsgd --gossip-every 1 row with
   --time-limit 30 (before the doorbell fix it ran at ~500 samples/s under load: 10 epochs
   took 10 minutes), so that row's objective is not comparable.
Every speed is the median of --repeat runs, interleaved with hogwild's so that machine noise
hits both sides; the ratio is taken between medians. The objective and test accuracy are the
medians of the same runs (one 3-epoch MLP run's accuracy moves by up to a point).

  bench/replica_speed.py --corral build/engine/cli/corral [--data ../shared/data] [--repeat 2]
      [--only zipf|a9a|mlp|local|lagged] [--mlp-epochs 3] [--before BINARY]
      [--periods 8,64,512,4096]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile

import zipf_set


FASHION = "/usr/share/datasets/fashion-mnist"
PHASES = ["compute", "encode", "wait", "decode", "mix"]


def corral(binary, args, metrics):
    """The run's summary and epoch lines; None when it failed (diverged, exit 1)."""
    run = subprocess.run([binary, "train", *args, "--quiet", "--metrics", metrics],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode == 1:
        return None
    if run.returncode != 0:
        raise SystemExit(f"corral train {' '.join(args)} failed: {run.stderr}")
    with open(metrics) as f:
        lines = [json.loads(line) for line in f.read().splitlines()]
    return lines[-1], lines[:-1]


def compare(binary, data, common, modes, repeat, tmp, accuracy=False):
    """modes: [(label, extra args)] or [(label, extra args, binary)], the first is the
    baseline. Prints one row per mode: the median of its runs' samples/s against the
    baseline's, the median of its runs' final objective (the ratio to the baseline's median), or
    with `accuracy` of their test accuracy (the difference in points, and the mean of the
    differences run by run), and from its last run the period, the bytes moved and the last
    epoch's mean round split. With `accuracy` run i of every mode has --seed i (1, 2, ...), so
    the accuracies are over seeds and paired by seed with the baseline's."""
    modes = [m if len(m) == 3 else (*m, binary) for m in modes]
    speeds = {label: [] for label, _, _ in modes}
    quality = "test_acc" if accuracy else "objective"
    # each run's final test accuracy or objective, by run (None: the run failed)
    qualities = {label: [] for label, _, _ in modes}
    last = {}
    for i in range(repeat):
        seed = ["--seed", str(i + 1)] if accuracy else []
        for label, extra, program in modes:
            run = corral(program, ["--data", data, *common, *extra, *seed],
                         os.path.join(tmp, "m.jsonl"))
            if run is None:
                last[label] = None
                qualities[label].append(None)
                continue
            speeds[label].append(run[0]["samples_per_s"])
            qualities[label].append(run[0][quality])
            last[label] = run
    base_label = modes[0][0]
    base_speed = statistics.median(speeds[base_label])
    base_runs = qualities[base_label]
    base_quality = statistics.median(q for q in base_runs if q is not None)
    print(f"  {'mode':<30} {'samples/s':>10} (min-max) {'vs ' + base_label:>12} "
          f"{'acc' if accuracy else 'objective':>10} "
          f"{'pts' if accuracy else 'obj ratio':>9} {'paired' if accuracy else '':>7} {'K':>14} {'share':>6} {'MB sent':>9}   "
          + " ".join(f"{p:>7}" for p in PHASES) + " (us per round)")
    for label, _, _ in modes:
        if last[label] is None or not speeds[label]:
            print(f"  {label:<30} failed (diverged)")
            continue
        summary, epochs = last[label]
        speed = statistics.median(speeds[label])
        k = summary.get("gossip_every", "")
        if "gossip_every_range" in summary:  # an automatic K that moved: final (least-most)
            k = f"{k} ({summary['gossip_every_range']})"
        share = summary.get("gossip_share")
        q = statistics.median(x for x in qualities[label] if x is not None)
        if accuracy:  # and the mean difference from the baseline's run of the same seed
            pairs = [100 * (x - b) for x, b in zip(qualities[label], base_runs)
                     if x is not None and b is not None]
            cols = f"{q:>10.4f} {100 * (q - base_quality):>+9.2f} {statistics.mean(pairs):>+7.2f}"
        else:
            cols = f"{q:>10.6f} {q / base_quality:>9.4f} {'':>7}"
        split = " ".join(f"{summary[f'round_{p}_us']:>7.1f}" if f"round_{p}_us" in summary
                         else f"{'':>7}" for p in PHASES)
        lo, hi = min(speeds[label]) / 1e6, max(speeds[label]) / 1e6
        print(f"  {label:<30} {speed / 1e6:>9.4f}M ({lo:.3g}-{hi:.3g}) {speed / base_speed:>12.3f} {cols} "
              f"{k!s:>14} {'' if share is None else f'{100 * share:5.1f}%':>6} "
              f"{summary.get('bytes_sent', 0) / 1e6:>9.1f}   {split}")


def with_before(args, label, extra, before_extra=()):
    """The row, and with --before its twin run by that binary (label "(before)")."""
    rows = [(label, extra)]
    if args.before:
        rows.append((label + " (before)", [*extra, *before_extra], args.before))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corral", default="build/engine/cli/corral")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--mlp-epochs", type=int, default=3)
    parser.add_argument("--mlp-seeds", type=int, default=8,
                        help="the MLP part's runs per mode, run i with --seed i")
    parser.add_argument("--only", choices=["zipf", "a9a", "mlp", "local", "lagged", "rounds"],
                        help="run one part only")
    parser.add_argument("--before", help="a second corral binary: every row of the zipf, mlp, local and "
                        "rounds parts, and lagged's automatic rows, run with it too, in the same loop")
    parser.add_argument("--periods", default="8,64,512,4096",
                        help="dcd's and ecd's part: the fixed --gossip-every values")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        common = ["--threads", str(args.threads), "--epochs", str(args.epochs), "--lr", "0.25"]
        if args.only in (None, "zipf"):
            zipf_part(args, common, tmp)
        if args.only in (None, "a9a"):
            a9a_part(args, common, tmp)
        if args.only in (None, "mlp"):
            mlp_part(args, tmp)
        if args.only in (None, "local"):
            local_part(args, common, tmp)
        if args.only in (None, "lagged"):
            lagged_part(args, common, tmp)
        if args.only in (None, "rounds"):
            rounds_part(args, tmp)


def rounds_part(args, tmp):
    a9a = a9a_set(args, "cheap rounds: ")
    if a9a is not None:
        common = ["--threads", str(args.threads), "--epochs", str(args.epochs), "--lr", "0.25"]
        compare(args.corral, a9a, common, [
            *with_before(args, "hogwild", ["--algo", "hogwild"]),
            *with_before(args, "dpsgd --gossip-every 1", ["--algo", "dpsgd", "--gossip-every", "1"],
                         ["--time-limit", "30"]),
        ], args.repeat, tmp)
    zipf = zipf_set.make(args.corral, os.path.join(tmp, "zipf.cache"))
    for threads in (1, 2):
        print(f"\ncheap rounds: Zipf set, {threads} thread(s), {args.epochs} epochs, --lr 0.25 "
              f"(median of {args.repeat})")
        common = ["--threads", str(threads), "--epochs", str(args.epochs), "--lr", "0.25"]
        compare(args.corral, zipf, common, [
            *with_before(args, "hogwild", ["--algo", "hogwild"]),
            *with_before(args, "adpsgd", ["--algo", "adpsgd"]),
        ], args.repeat, tmp)


def zipf_part(args, common, tmp):
    zipf = zipf_set.make(args.corral, os.path.join(tmp, "zipf.cache"))
    print(f"Zipf set, {args.threads} threads, {args.epochs} epochs, --lr 0.25, defaults "
          f"otherwise (median of {args.repeat})")
    rows = [
        ("hogwild", ["--algo", "hogwild"]),
        ("dpsgd", ["--algo", "dpsgd"]),
        ("local", ["--algo", "local"]),
        ("dcd", ["--algo", "dcd"]),
        ("ecd", ["--algo", "ecd"]),
        ("choco (qsgd:8)", ["--algo", "choco"]),
        ("choco topk:0.01", ["--algo", "choco", "--compress", "topk:0.01"]),
        ("adpsgd", ["--algo", "adpsgd"]),
        ("dpsgd --gossip-every 64", ["--algo", "dpsgd", "--gossip-every", "64"]),
    ]
    compare(args.corral, zipf, common, [twin for row in rows for twin in with_before(args, *row)],
            args.repeat, tmp)


def a9a_set(args, title):
    """a9a's path after printing the part's title, or None (and a note) when it is missing."""
    a9a = os.path.join(args.data, "a9a", "a9a")
    if not os.path.exists(a9a):
        print(f"skip a9a: {a9a} not found")
        return None
    print(f"\n{title}a9a, {args.threads} threads, {args.epochs} epochs, --lr 0.25 "
          f"(median of {args.repeat})")
    return a9a


def a9a_part(args, common, tmp):
    a9a = a9a_set(args, "")
    if a9a is None:
        return
    compare(args.corral, a9a, common, [
        ("hogwild", ["--algo", "hogwild"]),
        ("dpsgd --gossip-every 1", ["--algo", "dpsgd", "--gossip-every", "1"]),
        ("dpsgd", ["--algo", "dpsgd"]),
    ], args.repeat, tmp)


def local_part(args, common, tmp):
    zipf = zipf_set.make(args.corral, os.path.join(tmp, "zipf.cache"))
    print(f"\nlocal's sparse rounds: Zipf set, {args.threads} threads, {args.epochs} epochs, "
          f"--lr 0.25 (median of {args.repeat})")
    compare(args.corral, zipf, common, [
        ("hogwild", ["--algo", "hogwild"]),
        *with_before(args, "local", ["--algo", "local"]),
        *with_before(args, "local --gossip-every 16", ["--algo", "local", "--gossip-every", "16"]),
    ], args.repeat, tmp)
    a9a = a9a_set(args, "local's sparse rounds: ")
    if a9a is None:
        return
    compare(args.corral, a9a, common, [
        ("hogwild", ["--algo", "hogwild"]),
        *with_before(args, "local --gossip-every 1", ["--algo", "local", "--gossip-every", "1"]),
    ], args.repeat, tmp)


def lagged_part(args, common, tmp):
    zipf = zipf_set.make(args.corral, os.path.join(tmp, "zipf.cache"))
    periods = [p for p in args.periods.split(",") if p]
    print(f"\ndcd and ecd with local steps: Zipf set, {args.threads} threads, {args.epochs} "
          f"epochs, --lr 0.25 (median of {args.repeat})")
    rows = [("hogwild", ["--algo", "hogwild"])]
    for algo in ("dcd", "ecd"):
        rows += [(f"{algo} --gossip-every {k}", ["--algo", algo, "--gossip-every", k]) for k in periods]
        rows.append((f"{algo} (auto)", ["--algo", algo]))
        if args.before:
            rows.append((f"{algo} (auto, before)", ["--algo", algo], args.before))
    if periods:
        rows.append((f"ecd none --gossip-every {periods[-1]}",
                     ["--algo", "ecd", "--compress", "none", "--gossip-every", periods[-1]]))
    compare(args.corral, zipf, common, rows, args.repeat, tmp)


def mlp_part(args, tmp):
    train = os.path.join(FASHION, "train-images-idx3-ubyte.gz")
    if not os.path.exists(train):
        print(f"skip Fashion-MNIST: {train} not found (Debian: dataset-fashion-mnist)")
        return
    common = ["--test", os.path.join(FASHION, "t10k-images-idx3-ubyte.gz"), "--format", "idx",
              "--model", "mlp", "--hidden", "256,128", "--batch", "16", "--lr", "0.05",
              "--threads", str(args.threads), "--epochs", str(args.mlp_epochs)]
    print(f"\nFashion-MNIST, mlp 256,128, batch 16, --lr 0.05, {args.threads} threads, "
          f"{args.mlp_epochs} epochs, defaults otherwise (medians over --seed 1..{args.mlp_seeds}; "
          f"paired: the mean of the differences seed by seed)")
    rows = [
        ("hogwild++", ["--algo", "hogwild++"]),
        ("hogwild", ["--algo", "hogwild"]),
        ("dpsgd", ["--algo", "dpsgd"]),
        ("local", ["--algo", "local"]),
        ("dcd", ["--algo", "dcd"]),
        ("ecd", ["--algo", "ecd"]),
        ("choco", ["--algo", "choco"]),
        ("adpsgd", ["--algo", "adpsgd"]),
        ("sync", ["--algo", "sync"]),
    ]
    compare(args.corral, train, common, [twin for row in rows for twin in with_before(args, *row)],
            args.mlp_seeds, tmp, accuracy=True)


if __name__ == "__main__":
    main()
