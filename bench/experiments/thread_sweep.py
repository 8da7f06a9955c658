#!/usr/bin/python3
"""Experiment 4: thread sweep of every replica mode next to hogwild, with `corral scale`.

a9a, L2 logistic regression (C = 1), --epochs 10, --target-loss LIBLINEAR's optimum + 1%: for
each mode `corral scale --threads LIST --csv` gives samples/s and time to target per thread
count; this script joins them, states every speed relative to hogwild's first row (measured in
this same run), and draws samples/s and time to target against threads. Every mode uses
hogwild's searched step size. Quote the ratios, not the absolute numbers, and only for thread
counts up to the machine's cores (more workers than cores share them: correct, not faster).

  bench/experiments/thread_sweep.py [--threads 1,2,4,8] [--modes hogwild,dpsgd,...]
"""

import csv
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

LIBLINEAR_A9A = 0.32338
MODES = {  # mode -> extra options
    "hogwild": [], "hogwild++": ["--group-size", "1"], "local": ["--gossip-every", "8"],
    "dpsgd": ["--topology", "ring", "--gossip-every", "1"],
    "adpsgd": ["--topology", "ring", "--gossip-every", "1"],
    "dcd": ["--topology", "ring", "--compress", "qsgd:8", "--gossip-every", "1"],
    "ecd": ["--topology", "ring", "--compress", "qsgd:8", "--gossip-every", "1"],
    "choco": ["--topology", "ring", "--compress", "topk:0.1", "--gossip-every", "1"],
}


def scale(args, mode, threads, lr):
    path = os.path.join(args.out, f"thread_sweep_{mode.replace('+', 'p')}.csv")
    command = [args.corral, "scale", "--threads", threads, "--data", common.dataset(args, "a9a", "a9a"),
               "--model", "logistic", "--l2", "3.0712e-5", "--epochs", str(args.epochs),
               "--target-loss", str(LIBLINEAR_A9A * 1.01), "--algo", mode, "--seed", "1",
               "--quiet", "--csv", path, *MODES[mode]]
    if lr is not None:
        command += ["--lr", str(lr)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"{mode}: corral scale failed ({done.returncode}): {done.stderr.strip()}")
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    args = common.arguments(__doc__, threads=("1,2,4,8", "thread counts"),
                            modes=(",".join(MODES), "modes to sweep"), epochs=(10, "epochs"))
    modes = args.modes.split(",")
    if modes[0] != "hogwild":
        modes.insert(0, "hogwild")
    # hogwild's searched step size, from a one-epoch run, is every mode's step size.
    probe = common.train(args, "thread_sweep_probe", "--data", common.dataset(args, "a9a", "a9a"),
                         "--model", "logistic", "--l2", "3.0712e-5", "--epochs", 1, "--threads", 1,
                         "--seed", 1)
    lr = probe.get("lr")
    results = {mode: scale(args, mode, args.threads, lr) for mode in modes}
    base = float(results["hogwild"][0]["samples_per_s"]) if results["hogwild"] else float("nan")
    rows = []
    print(f"{'mode':10} {'threads':>7} {'samples/s':>12} {'vs hogwild 1st':>15} {'time_to_target':>15} "
          f"{'objective':>10}")
    for mode in modes:
        for r in results[mode]:
            ratio = float(r["samples_per_s"]) / base
            rows.append([mode, r["threads"], r["samples_per_s"], f"{ratio:.3f}", r["time_to_target_s"],
                         r["epochs_to_target"], r["objective"]])
            print(f"{mode:10} {r['threads']:>7} {float(r['samples_per_s']):12.0f} {ratio:15.2f} "
                  f"{r['time_to_target_s'] or '-':>15} {float(r['objective']):10.5f}")
    path = common.write_csv(args, "thread_sweep", ["mode", "threads", "samples_per_s",
                                                   "vs_hogwild_first", "time_to_target_s",
                                                   "epochs_to_target", "objective"], rows)
    blocks = []
    for mode in modes:  # gnuplot's `index` wants one blank-line-separated block per series
        blocks.append("\n".join(",".join(map(str, r)) for r in rows if r[0] == mode))
    dat = os.path.join(args.out, "thread_sweep_plot.csv")
    with open(dat, "w") as f:
        f.write("\n\n\n".join(blocks) + "\n")
    series = lambda col: ", \\\n     ".join(  # noqa: E731
        f"'{dat}' index {k} using 2:{col} with linespoints title '{m}'" for k, m in enumerate(modes))
    common.plot(args, "thread_sweep", f"""
set multiplot layout 1,2 title 'a9a logistic, {args.epochs} epochs: thread sweep (ratios to hogwild, same run)'
set xlabel 'threads'
set logscale x 2
set ylabel 'samples/s relative to hogwild at {args.threads.split(",")[0]} thread(s)'
set key top left
plot {series(4)}
set ylabel 'seconds to LIBLINEAR objective + 1%'
plot {series(5)}
unset multiplot
""")
    found = [m for m in modes if results[m]]
    return common.verdict("thread_sweep", len(found) == len(modes),
                          f"swept {len(found)}/{len(modes)} modes ({path})")


if __name__ == "__main__":
    sys.exit(main())
