#!/usr/bin/python3
"""Staleness: final objective against the delay bound TAU of `--schedule seeded:TAU`.

hogwild with 4 workers under the bounded-delay model (docs/algorithms.md, "Determinism"): the
workers' steps interleaved by the seed, each update applied 0..TAU steps late. The interleaving
does not depend on TAU, so the runs of one seed differ in staleness alone. L2 logistic
regression (the default l2 = 1/rows, C = 1) on a9a and on the generated Zipf set (bench/zipf_set.py), the step size
hogwild's search picks on each (from a one-epoch probe), --epochs 5, seeds 1 and 2 (their
difference at TAU 0 is the run-to-run spread a TAU effect must exceed). A free-running 4-thread
row is printed beside them for scale (not reproducible). Expected (HOGWILD!, De Sa et al.
2015): the objective degrades as TAU grows, slightly for sparse data at small TAU.

  bench/experiments/staleness.py [--taus 0,1,4,16,64,256] [--epochs 5]
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402
import zipf_set  # noqa: E402

SEEDS = (1, 2)


def sweep(args, name, data, taus):
    """Rows (set, tau, seed, objective, samples/s) for every TAU and seed, and the free runs."""
    base = ["--data", data, "--model", "logistic", "--pin", "none"]
    probe = common.train(args, f"staleness_{name}_probe", *base, "--epochs", 1, "--threads", 1, "--seed", 1)
    base += ["--threads", 4]
    lr = probe.get("lr")
    rows = []
    for tau in [*taus, "free"]:
        for seed in SEEDS:
            schedule = "free" if tau == "free" else f"seeded:{tau}"
            run = common.train(args, f"staleness_{name}_{tau}_{seed}", *base, "--epochs", args.epochs,
                               "--lr", lr, "--seed", seed, "--schedule", schedule)
            objective = float("nan") if run.diverged else run.get("objective")
            rows.append([name, tau, seed, objective, run.get("samples_per_s")])
            print(f"{name:5} {schedule:12} seed {seed}  objective {objective:.6f}  "
                  f"{run.get('samples_per_s') / 1e6:6.2f}M samples/s")
    return rows, lr


def main():
    args = common.arguments(__doc__, taus=("0,1,4,16,64,256", "TAU values"), epochs=(5, "epochs"))
    taus = [int(t) for t in args.taus.split(",")]
    with tempfile.TemporaryDirectory(prefix="corral-staleness-") as tmp:
        a9a = common.dataset(args, "a9a", "a9a")
        zipf = zipf_set.make(args.corral, os.path.join(tmp, "zipf.cache"))
        rows, lrs = [], {}
        for name, data in (("a9a", a9a), ("zipf", zipf)):
            got, lrs[name] = sweep(args, name, data, taus)
            rows += got
    path = common.write_csv(args, "staleness", ["set", "tau", "seed", "objective", "samples_per_s"], rows)

    # Per set: the mean over seeds at each TAU, relative to TAU 0; the spread at TAU 0.
    verdicts = []
    print(f"\n{'set':5} {'TAU':>6} {'objective':>11} {'vs TAU 0':>9}   (mean of seeds {SEEDS})")
    for name in ("a9a", "zipf"):
        mean = {}
        for tau in [*taus, "free"]:
            values = [r[3] for r in rows if r[0] == name and r[1] == tau]
            mean[tau] = sum(values) / len(values)
        zero = [r[3] for r in rows if r[0] == name and r[1] == taus[0]]
        spread = max(zero) - min(zero)
        for tau in [*taus, "free"]:
            print(f"{name:5} {str(tau):>6} {mean[tau]:11.6f} {mean[tau] / mean[taus[0]]:9.4f}")
        print(f"{name:5} lr {lrs[name]:g}, seed spread at TAU {taus[0]}: {spread:.2e}")
        verdicts.append(mean[taus[-1]] - mean[taus[0]] > spread)
    dat = os.path.join(args.out, "staleness_plot.csv")
    with open(dat, "w") as f:
        blocks = []
        for name in ("a9a", "zipf"):
            lines = []
            for tau in taus:
                values = [r[3] for r in rows if r[0] == name and r[1] == tau]
                lines.append(f"{max(tau, 0.5)},{sum(values) / len(values)}")
            blocks.append("\n".join(lines))
        f.write("\n\n\n".join(blocks) + "\n")
    common.plot(args, "staleness", f"""
set title 'hogwild, 4 workers, --schedule seeded:TAU, {args.epochs} epochs (TAU 0 drawn at 0.5)'
set xlabel 'TAU (updates a read may miss)'
set logscale x 2
set ylabel 'final objective'
set multiplot layout 1,2
plot '{dat}' index 0 using 1:2 with linespoints title 'a9a'
plot '{dat}' index 1 using 1:2 with linespoints title 'zipf'
unset multiplot
""")
    return common.verdict("staleness", all(verdicts),
                          f"objective at TAU {taus[-1]} above TAU {taus[0]} by more than the seed "
                          f"spread: a9a {verdicts[0]}, zipf {verdicts[1]} ({path})")


if __name__ == "__main__":
    sys.exit(main())
