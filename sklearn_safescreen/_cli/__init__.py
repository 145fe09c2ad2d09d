"""``python -m sklearn_safescreen``: the command line, in modules (options, data, run).

The entry point is :func:`sklearn_safescreen._cli.run.main`, which
:mod:`sklearn_safescreen.__main__` calls.
"""
