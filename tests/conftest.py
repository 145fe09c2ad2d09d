"""Test configuration: the shared helper modules of tests/ (``_svm_models``,
``_triplet_models``, ``_box_models``) and the independent exact SVM solver of
tests/screening/ (``_svm_truth``) are importable from every test folder."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for folder in (_HERE, _HERE / "screening"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
