"""The generated Zipf set the benches and issues quote: 200k rows, 100k features, 20 non-zeros
per row with Zipf(1.1) feature frequencies, 5% label noise, seed 1 (about 35 MB as a cache)."""
import subprocess

ARGS = ["--rows", "200000", "--features", "100000", "--nnz-per-row", "20", "--zipf", "1.1",
        "--noise", "0.05", "--seed", "1"]


def make(corral, path):
    """Writes the set to `path` (a .cache file) with the `corral` binary; returns `path`."""
    subprocess.run([corral, "data", "gen", "classification", *ARGS, "--out", path],
                   check=True, stdout=subprocess.DEVNULL)
    return path
