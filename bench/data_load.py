#!/usr/bin/env python3
"""Loading ijcnn1.t side by side: Corral at 1 and 2 threads, Corral's binary cache, and
scikit-learn's load_svmlight_file (Debian python3-sklearn), plus peak memory per load.

    bench/data_load.py [--build build] [--data ../shared/data/ijcnn1/ijcnn1.t] [--repetitions 5]

Times are medians over the repetitions (ranges printed too); the ratios are taken within this
one run, so a busy machine slows both sides alike. Needs build/bench/corral_data_bench and
build/bench/corral_data_memory (CORRAL_BUILD_BENCH=ON, the default).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def corral_rows(build, data, repetitions):
    """{(name, threads): [seconds per load]} from the Google Benchmark binary."""
    env = dict(os.environ, CORRAL_DATA_DIR=os.path.dirname(os.path.dirname(os.path.abspath(data))))
    out = subprocess.run(
        [os.path.join(build, "bench", "corral_data_bench"), "--benchmark_format=json",
         f"--benchmark_repetitions={repetitions}", "--benchmark_report_aggregates_only=false"],
        check=True, capture_output=True, text=True, env=env).stdout
    rows = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name, threads = b["run_name"].split("/")[0], int(b["run_name"].split("threads:")[1].split("/")[0])
        scale = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}[b["time_unit"]]
        rows.setdefault((name, threads), []).append(b["real_time"] * scale)
    return rows


def sklearn_times(data, repetitions):
    from sklearn.datasets import load_svmlight_file  # imported here: its import is slow
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        load_svmlight_file(data)
        times.append(time.perf_counter() - start)
    return times


def memory(build, path, threads):
    out = subprocess.run([os.path.join(build, "bench", "corral_data_memory"), path, str(threads)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def describe(times, mb):
    med = statistics.median(times)
    return f"{med * 1e3:8.1f} ms  {mb / med:7.1f} MB/s  (range {min(times) * 1e3:.1f}-{max(times) * 1e3:.1f} ms)"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(here, "..", "build"))
    parser.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data", "ijcnn1", "ijcnn1.t"))
    parser.add_argument("--repetitions", type=int, default=5)
    args = parser.parse_args()
    if not os.path.exists(args.data):
        sys.exit(f"{args.data}: not found")
    mb = os.path.getsize(args.data) / 1e6

    rows = corral_rows(args.build, args.data, args.repetitions)
    sk = sklearn_times(args.data, args.repetitions)
    print(f"{args.data} ({mb:.1f} MB), {args.repetitions} repetitions, medians")
    for (name, threads), times in sorted(rows.items()):
        label = "corral text" if name == "BM_LoadLibsvm" else "corral cache"
        print(f"  {label:13s} threads {threads}: {describe(times, mb)}")
    print(f"  {'scikit-learn':13s} load_svmlight_file: {describe(sk, mb)}")
    t1 = statistics.median(rows[("BM_LoadLibsvm", 1)])
    t2 = statistics.median(rows[("BM_LoadLibsvm", 2)])
    cache = statistics.median(rows[("BM_LoadCache", 1)])
    print(f"  corral 1 thread vs scikit-learn: {statistics.median(sk) / t1:.1f}x faster")
    print(f"  corral 2 threads vs 1 thread:    {t1 / t2:.2f}x")
    print(f"  cache vs text (1 thread):        {t1 / cache:.1f}x faster")

    cache_path = "/tmp/corral_data_load_bench.cache"
    subprocess.run([os.path.join(args.build, "engine", "cli", "corral"), "data", "convert",
                    "--data", args.data, "--out", cache_path], check=True, capture_output=True)
    print("peak memory while loading (VmHWM; budget = 1.5 x dataset + 32 MiB)")
    for path, threads in [(args.data, 1), (args.data, 2), (cache_path, 1)]:
        m = memory(args.build, path, threads)
        print(f"  {os.path.basename(path):28s} threads {threads}: peak +{m['load_peak_mib']:.1f} MiB, "
              f"dataset {m['dataset_mib']:.1f} MiB, budget {m['budget_mib']:.1f} MiB")
    os.remove(cache_path)


if __name__ == "__main__":
    main()
