"""What the paper experiments share: running the corral binary, reading its metrics, writing CSV
and drawing PNGs with gnuplot (Debian gnuplot-nox), and the verdict line each prints.

Every experiment is one command: it writes NAME.csv and NAME.png into --out (default
bench/experiments/out) and ends with a line `VERDICT <name>: PASS|FAIL <why>`. With `--ranks R`
(R > 1) every run is `mpirun -np R corral train` with each run's --threads split over the R
ranks (the same workers, README "Across machines"), so a verdict can be checked across processes.
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def arguments(doc, **extra):
    """The options every experiment takes, plus `extra` (name -> (default, help))."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corral", default=os.path.join(ROOT, "build", "engine", "cli", "corral"),
                        help="the corral binary")
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"),
                        help="the folder with a9a/, sector/, ...")
    parser.add_argument("--out", default=os.path.join(HERE, "out"), help="where CSV and PNG go")
    parser.add_argument("--ranks", default=1, type=int,
                        help="run every training under mpirun with this many ranks, the workers "
                             "(--threads) split evenly over them")
    for name, (default, text) in extra.items():
        parser.add_argument("--" + name.replace("_", "-"), default=default, type=type(default),
                            help=text)
    args = parser.parse_args()
    if not os.access(args.corral, os.X_OK):
        sys.exit(f"{args.corral}: not an executable; build first or pass --corral")
    os.makedirs(args.out, exist_ok=True)
    return args


def dataset(args, *parts):
    path = os.path.join(args.data, *parts)
    if not os.path.exists(path):
        sys.exit(f"{path}: not found (pass --data DIR with the shared datasets)")
    return path


class Run:
    """One `corral train`: its evaluation points, its summary, and whether it diverged."""

    def __init__(self, points, summary, diverged, stderr):
        self.points, self.summary, self.diverged, self.stderr = points, summary, diverged, stderr

    def get(self, key, default=float("nan")):
        value = self.summary.get(key, default) if self.summary else default
        return default if value is None else value

    def first_reaching(self, target, clock="virtual_s"):
        """The clock at the first evaluation point whose objective is <= target, or None."""
        for p in self.points:
            if p.get("objective") is not None and p["objective"] <= target:
                return p.get(clock, p.get("wall_s"))
        return None


def train(args, name, *options):
    """Runs corral train with --metrics; exit 1 (divergence) is a result, not an error."""
    metrics = os.path.join(args.out, name + ".jsonl")
    command = [args.corral, "train", *map(str, options), "--quiet", "--metrics", metrics]
    env = None
    if args.ranks > 1:
        command, env = across_ranks(command, args.ranks)
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    points, summary = [], None
    if os.path.exists(metrics):
        with open(metrics) as f:
            for line in f:
                record = json.loads(line)
                if record.get("event") == "summary":
                    summary = record
                else:
                    points.append(record)
    diverged = done.returncode == 1 or any(p.get("diverged") for p in points)
    return Run(points, summary, diverged, done.stderr)


def across_ranks(command, ranks):
    """`command` (a corral train) as `mpirun -np ranks` with its --threads split over the ranks."""
    if "--threads" not in command:
        sys.exit("--ranks needs runs that give --threads (the workers to split over the ranks)")
    at = command.index("--threads") + 1
    workers = int(command[at])
    if workers % ranks != 0:
        sys.exit(f"--ranks {ranks}: a run of {workers} workers does not split evenly over them")
    command = command[:at] + [str(workers // ranks)] + command[at + 1:]
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        sys.exit("--ranks needs mpirun (Debian: openmpi-bin)")
    # As root Open MPI wants its two variables; --oversubscribe: more ranks than cores is allowed.
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return [mpirun, "-np", str(ranks), "--oversubscribe", *command], env


def write_csv(args, name, header, rows):
    path = os.path.join(args.out, name + ".csv")
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    print(f"wrote {path}")
    return path


def plot(args, name, script):
    """Runs a gnuplot script (the PNG terminal and output are set here); skips without gnuplot."""
    png = os.path.join(args.out, name + ".png")
    gp = os.path.join(args.out, name + ".gp")
    with open(gp, "w") as f:
        f.write(f"set terminal pngcairo size 1000,600\nset output '{png}'\nset datafile separator ','\n")
        f.write(script)
    if shutil.which("gnuplot") is None:
        print(f"gnuplot is not installed (Debian: apt install gnuplot-nox); wrote {gp}")
        return
    subprocess.run(["gnuplot", gp], check=True)
    print(f"wrote {png}")


def verdict(name, ok, why):
    print(f"VERDICT {name}: {'PASS' if ok else 'FAIL'} {why}")
    return 0 if ok else 1
