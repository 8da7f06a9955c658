#!/usr/bin/python3
"""sector softmax (a 5.8M-parameter model) under dpsgd: 2 ranks x 1 thread against 1 process x
2 threads, the same 2 workers, the same run bit for bit (README, "Across machines"), so the
difference is what the MPI transport costs against the shared-memory channels.

Each setting is run --repeat times, the two layouts alternating (and which goes first
alternating), and the medians are compared: samples/s over the run's training time, wall
seconds per epoch, and the share of a worker's time spent in gossip rounds. Two periods: the
automatic one (the default) and --gossip-every 1 (the paper's algorithm, a round every step,
where the transport matters most).

  bench/mpi_sector.py [--corral build/engine/cli/corral] [--data ../shared/data] [--repeat 3]
"""

import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "experiments"))
import common  # noqa: E402


def main():
    args = common.arguments(__doc__, epochs=(3, "epochs per run"), repeat=(3, "runs per layout"),
                            batch=(16, "rows per worker and step"),
                            periods=("auto,1", "--gossip-every values, comma separated"))
    train = common.dataset(args, "sector", "sector.scale")
    base = ["--data", train, "--model", "softmax", "--algo", "dpsgd", "--topology", "ring",
            "--threads", 2, "--epochs", args.epochs, "--batch", args.batch, "--seed", 1,
            "--lr", 0.5, "--eval-every", args.epochs]
    layouts = {"1 process x 2 threads": 1, "2 ranks x 1 thread": 2}
    print(f"sector softmax dpsgd, 2 workers on a ring, {args.epochs} epochs, batch {args.batch}, "
          f"medians of {args.repeat}")
    for period in args.periods.split(","):
        found = {name: [] for name in layouts}
        for i in range(args.repeat):
            order = list(layouts) if i % 2 == 0 else list(reversed(layouts))
            for name in order:
                args.ranks = layouts[name]
                run = common.train(args, f"mpi_sector_{period}_{layouts[name]}_{i}", *base,
                                   "--gossip-every", period)
                if run.summary is None or run.diverged:
                    sys.exit(f"{name}, --gossip-every {period}: no summary\n{run.stderr}")
                found[name].append(run)
        medians = {}
        for name, runs in found.items():
            medians[name] = {
                "samples_per_s": statistics.median(r.get("samples_per_s") for r in runs),
                "epoch_s": statistics.median(r.get("wall_s") / args.epochs for r in runs),
                "gossip_share": statistics.median(r.get("gossip_share", 0.0) for r in runs),
                "objective": statistics.median(r.get("objective") for r in runs),
                "gossip_every": runs[0].get("gossip_every"),
            }
            m = medians[name]
            print(f"--gossip-every {period:4} {name:22}: {m['samples_per_s'] / 1e3:8.1f}k samples/s"
                  f"  {m['epoch_s']:7.3f} s an epoch  gossip {m['gossip_share']:5.1%}"
                  f"  K {m['gossip_every']}  objective {m['objective']:.6f}")
        one, two = (medians[name] for name in layouts)
        print(f"--gossip-every {period:4} 2 ranks / 1 process: samples/s "
              f"{two['samples_per_s'] / one['samples_per_s']:.3f}x, "
              f"epoch time {two['epoch_s'] / one['epoch_s']:.3f}x")


if __name__ == "__main__":
    main()
