"""Agreement statistics: this project against the krippendorff package and statsmodels.

Run: ``python benchmarks/bench_agreement.py`` (``--quick`` stops at 1e5 units).

Every measurement runs in its own subprocess on the same seeded data: the median wall
time of the call and its peak traced memory (tracemalloc, which numpy reports to; timed
runs are separate from traced runs). A competitor that runs out of memory or time is
reported as failed, with the reason. Ratios are ours / theirs, measured in this run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
import warnings

import numpy as np

TIMEOUT = 300


def make_data(kind: str, raters: int, units: int) -> np.ndarray:
    rng = np.random.default_rng(12345)
    if kind == "integer":
        truth = rng.integers(1, 11, size=units)
        data = np.clip(truth + rng.integers(-2, 3, size=(raters, units)), 1, 10).astype(float)
    else:  # continuous: calibrated z-scores, nearly every value distinct
        truth = rng.normal(size=units)
        data = truth + rng.normal(scale=0.5, size=(raters, units))
    data[rng.random(size=data.shape) < 0.10] = np.nan
    return data


def prepare(impl: str, data: np.ndarray) -> np.ndarray:
    """Input in each implementation's own layout; not timed."""
    if impl in ("ours-fleiss", "statsmodels"):
        return np.ascontiguousarray(np.nan_to_num(data, nan=0).T.astype(int))  # items x raters
    return data


def call(impl: str, data: np.ndarray, level: str) -> float:
    if impl == "ours-alpha":
        from debate.stats import krippendorff_alpha

        return krippendorff_alpha(data, level)  # type: ignore[arg-type]
    if impl == "krippendorff":
        import krippendorff

        return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    if impl == "ours-fleiss":
        from debate.stats import fleiss_kappa_from_labels

        return fleiss_kappa_from_labels(data)
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    table, _ = aggregate_raters(data)
    return float(fleiss_kappa(table))


def worker(spec: dict[str, object]) -> dict[str, object]:
    impl, level, repeat = str(spec["impl"]), str(spec["level"]), int(spec["repeat"])  # type: ignore[call-overload]
    data = prepare(impl, make_data(str(spec["kind"]), int(spec["raters"]), int(spec["units"])))  # type: ignore[call-overload]
    warnings.simplefilter("ignore")
    call(impl, data[:50] if impl in ("ours-fleiss", "statsmodels") else data[:, :50], level)
    times = []
    value = float("nan")
    for _ in range(repeat):
        start = time.perf_counter()
        value = call(impl, data, level)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    call(impl, data, level)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"seconds": statistics.median(times), "peak_mb": peak / 2**20, "value": value}


def run(spec: dict[str, object]) -> dict[str, object]:
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--worker", json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {TIMEOUT} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return {"error": last[:80]}
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def fmt(r: dict[str, object]) -> str:
    if "error" in r:
        return f"failed ({r['error']})"
    return f"{float(r['seconds']):9.4f} s {float(r['peak_mb']):9.1f} MB"  # type: ignore[arg-type]


def ratio(ours: dict[str, object], theirs: dict[str, object], key: str) -> str:
    if "error" in ours or "error" in theirs:
        return "-"
    return f"{float(ours[key]) / max(float(theirs[key]), 1e-12):.3f}"  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    sizes = [1_000, 10_000, 100_000] + ([] if args.quick else [1_000_000])
    rows = []
    print(f"{'case':<34} {'ours':>24} {'theirs':>34} {'time ratio':>10} {'mem ratio':>9}")
    for kind, level, pair in (
        ("integer", "interval", ("ours-alpha", "krippendorff")),
        ("integer", "ordinal", ("ours-alpha", "krippendorff")),
        ("continuous", "interval", ("ours-alpha", "krippendorff")),
        ("integer", "nominal", ("ours-fleiss", "statsmodels")),
    ):
        for raters in (4, 16):
            for units in sizes:
                repeat = 1 if units >= 1_000_000 else 3
                base = {
                    "kind": kind,
                    "level": level,
                    "raters": raters,
                    "units": units,
                    "repeat": repeat,
                }
                ours = run({**base, "impl": pair[0]})
                skip = kind == "continuous" and units > 10_000
                theirs = (
                    {"error": f"not run: V x V matrix of ~{raters * units} distinct values"}
                    if skip
                    else run({**base, "impl": pair[1]})
                )
                name = f"{pair[0][5:]} {kind} {level} {raters}x{units:.0e}"
                print(
                    f"{name:<34} {fmt(ours):>24} {pair[1][:12]:>12} {fmt(theirs):>21} "
                    f"{ratio(ours, theirs, 'seconds'):>10} {ratio(ours, theirs, 'peak_mb'):>9}",
                    flush=True,
                )
                rows.append({"case": name, "ours": ours, "theirs": theirs})
    print(json.dumps(rows), file=sys.stderr)


if __name__ == "__main__":
    main()
