"""What a new user meets: import time and the first fit of each estimator, each in a
fresh Python process, and the main job's speed-up on its first run after install.

Run it right after installing the package in a new virtual environment (the README's
first command), so that nothing is cached:

    python benchmarks/bench_cold_start.py          # writes its section of doc/benchmarks.md

Every figure comes from a new interpreter (``subprocess``), so no module, compiled
code or data is warm from an earlier measurement. The compiled solvers are built when
the package is installed; this measures that nothing is left to do at first use.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
from datetime import date

from _doc import write_section

#: One fresh process per estimator: the data loading is done before the clock starts,
#: then the first and the second fit of the same estimator on the same data.
FIT_SCRIPT = r"""
import time, json, warnings
t0 = time.perf_counter()
import sklearn_safescreen as ss
t_import = time.perf_counter() - t0
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.preprocessing import StandardScaler
name = {name!r}
if name == "metric":
    X, y = load_wine(return_X_y=True)
    est = ss.SafeMetricLearner(alpha=1e5)
elif name == "lad":
    X, _ = load_breast_cancer(return_X_y=True)
    X, y = X[:, 1:], X[:, 0]  # mean radius from the other features
    est = ss.SafeLAD(kernel="linear", C=1.0)
else:
    X, y = load_breast_cancer(return_X_y=True)
    est = ss.SafeSVC(kernel=name, C=1.0)
X = StandardScaler().fit_transform(X)
times = []
for _ in range(2):
    t0 = time.perf_counter()
    est.fit(X, y)
    times.append(time.perf_counter() - t0)
print(json.dumps({{"import": t_import, "first": times[0], "second": times[1]}}))
"""

IMPORT_SCRIPT = r"""
import time
t0 = time.perf_counter()
import {module}
print(time.perf_counter() - t0)
"""


def run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip().splitlines()[-1]


def import_seconds(module: str, repeats: int) -> float:
    """Median over fresh processes of the time to import ``module`` (the first import
    is also timed, so the operating system's file cache is as a new user has it after
    installing)."""
    times = sorted(float(run(IMPORT_SCRIPT.format(module=module))) for _ in range(repeats))
    return times[len(times) // 2]


def main_job(args: list[str]) -> tuple[float, float, float]:
    """``python -m sklearn_safescreen``: (path seconds, GridSearchCV seconds, speed-up)
    as it prints them."""
    out = subprocess.run([sys.executable, "-m", "sklearn_safescreen", *args],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(r"RegularizationPathCV:\s+([\d.]+) s.*?GridSearchCV:\s+([\d.]+) s \(([\d.]+)x",
                  out, re.S)
    if m is None:
        raise RuntimeError("could not read the main job's timing line:\n" + out[-2000:])
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-doc", action="store_true", help="print only")
    parser.add_argument("--skip-main-job", action="store_true")
    args = parser.parse_args()
    import json

    lines = []
    # the main job first: right after install is when its first run happens
    if not args.skip_main_job:
        first = main_job([])
        second = main_job([])
        lines.append(f"* `python -m sklearn_safescreen` (default data) right after install: "
                     f"path {first[0]:.2f} s against GridSearchCV {first[1]:.2f} s, "
                     f"**{first[2]:.1f}x**; run again: {second[0]:.2f} s against "
                     f"{second[1]:.2f} s, {second[2]:.1f}x.")
        print(lines[-1], flush=True)
    sk = import_seconds("sklearn", 5)
    pkg = import_seconds("sklearn_safescreen", 5)
    lines.append(f"* `import sklearn_safescreen`: {pkg:.2f} s, of which importing "
                 f"scikit-learn (measured alone) {sk:.2f} s: the package adds "
                 f"**{pkg - sk:.2f} s** (median of five fresh processes).")
    print(lines[-1], flush=True)
    rows = ["| estimator (data) | first fit (s) | second fit (s) | first / (2 x second + 0.2 s) |",
            "|---|---|---|---|"]
    for name, label in [("linear", "SafeSVC linear (breast cancer)"),
                        ("rbf", "SafeSVC rbf (breast cancer)"),
                        ("lad", "SafeLAD linear (breast cancer)"),
                        ("metric", "SafeMetricLearner alpha=1e5 (wine)")]:
        r = json.loads(run(FIT_SCRIPT.format(name=name)))
        bound = 2 * r["second"] + 0.2
        rows.append(f"| {label} | {r['first']:.3f} | {r['second']:.3f} | "
                    f"{r['first'] / bound:.2f} |")
        print(rows[-1], flush=True)
    text = "\n".join([
        "## Cold start (a new user's first calls)",
        "",
        f"Measured {date.today()} on {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, by `python benchmarks/bench_cold_start.py` "
        "in a fresh clone and a new virtual environment, right after the README's install "
        "command; every figure from a new process (standardised data; a ratio below 1 in "
        "the last column means the first fit costs at most twice the second plus 0.2 s).",
        "",
        *lines,
        "",
        *rows,
    ])
    if not args.no_doc:
        write_section("## Cold start", text)


if __name__ == "__main__":
    main()
