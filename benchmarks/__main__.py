"""``python -m benchmarks [--quick | --full]``: regenerate the benchmark report's summary
table and figures (see ``benchmarks/run.py``)."""

from benchmarks.run import main

main()
