#!/usr/bin/python3
"""sync's reduction across ranks: --allreduce gather against ring, and MPI's own all-reduce as the
yardstick (issue #18; docs/algorithms.md, "sync across ranks").

Training: sync on the Fashion-MNIST mlp, 2 ranks x 1 thread, --allreduce gather and ring, each
--repeat times, the two alternating (and which goes first alternating); medians of samples/s and
of the mean wall time a step spends in the reduction (the run's allreduce_ms setting, waiting for
the slower rank included). The objectives must be equal (both are one process's bits).

Alone: corral_allreduce_bench (bench/allreduce_bench.cc) at the model's size, --repeat times:
gather, ring and MPI_Allreduce step by step from a barrier, medians.

  bench/mpi_allreduce.py [--corral build/engine/cli/corral] [--fashion DIR] [--repeat 3]
"""

import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "experiments"))
import common  # noqa: E402

FASHION = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist


def main():
    args = common.arguments(__doc__, epochs=(1, "epochs per run"), repeat=(3, "runs per setting"),
                            batch=(16, "rows per worker and step"),
                            hidden=("256,128", "the mlp's hidden layers"),
                            fashion=(FASHION, "Fashion-MNIST's IDX folder"),
                            steps=(300, "steps of each method in the bench alone"))
    train = os.path.join(args.fashion, "train-images-idx3-ubyte.gz")
    if not os.path.exists(train):
        sys.exit(f"{train}: not found (Debian: dataset-fashion-mnist)")
    widths = [784, *map(int, args.hidden.split(",")), 10]
    d = sum(a * b + b for a, b in zip(widths, widths[1:]))
    base = ["--data", train, "--format", "idx", "--model", "mlp", "--hidden", args.hidden,
            "--algo", "sync", "--threads", 2, "--epochs", args.epochs, "--batch", args.batch,
            "--lr", 0.05, "--seed", 1, "--eval-every", args.epochs]
    args.ranks = 2
    methods = ["gather", "ring"]
    print(f"Fashion-MNIST mlp {args.hidden} ({d} parameters), sync, 2 ranks x 1 thread, "
          f"{args.epochs} epoch(s), batch {args.batch}, medians of {args.repeat}")
    found = {m: [] for m in methods}
    for i in range(args.repeat):
        for m in methods if i % 2 == 0 else reversed(methods):
            run = common.train(args, f"mpi_allreduce_{m}_{i}", *base, "--allreduce", m)
            if run.summary is None or run.diverged or run.get("allreduce") != m:
                sys.exit(f"--allreduce {m}: no summary, or another reduction ran\n{run.stderr}")
            found[m].append(run)
    medians = {}
    for m, runs in found.items():
        medians[m] = {key: statistics.median(r.get(key) for r in runs)
                      for key in ("samples_per_s", "allreduce_ms", "objective")}
        x = medians[m]
        print(f"training --allreduce {m:6}: {x['samples_per_s'] / 1e3:7.2f}k samples/s  "
              f"{x['allreduce_ms']:7.3f} ms a step reducing  objective {x['objective']:.6f}")
    g, r = medians["gather"], medians["ring"]
    print(f"training ring/gather: samples/s {r['samples_per_s'] / g['samples_per_s']:.3f}x, "
          f"reduction time {r['allreduce_ms'] / g['allreduce_ms']:.3f}x; objectives "
          f"{'equal' if r['objective'] == g['objective'] else 'DIFFER'}")

    bench = os.path.join(os.path.dirname(args.corral), "..", "..", "bench",
                         "corral_allreduce_bench")
    if not os.path.exists(bench):
        sys.exit(f"{bench}: not built (cmake --build build --target corral_allreduce_bench)")
    alone = {m: [] for m in ("gather", "ring", "mpi")}
    for i in range(args.repeat):
        # across_ranks splits a --threads over the ranks: 1 worker each, which the bench's
        # default is, so that pair is dropped for its own arguments.
        command, env = common.across_ranks([bench, "--threads", "2"], 2)
        command = command[:-2] + [str(d), str(args.steps)]
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            sys.exit(f"{' '.join(command)} failed:\n{done.stderr}")
        for m in alone:
            alone[m].append(float(re.search(rf"^{m} ms (\S+)", done.stdout, re.M).group(1)))
    a = {m: statistics.median(v) for m, v in alone.items()}
    print(f"alone at d = {d}, 2 ranks x 1 worker, {args.steps} steps each: gather "
          f"{a['gather']:.3f} ms, ring {a['ring']:.3f} ms, MPI_Allreduce {a['mpi']:.3f} ms; "
          f"ring/gather {a['ring'] / a['gather']:.3f}x, ring/mpi {a['ring'] / a['mpi']:.3f}x, "
          f"gather/mpi {a['gather'] / a['mpi']:.3f}x")


if __name__ == "__main__":
    main()
