"""Build of the compiled core: every ``.pyx`` module of the package is a C extension,
compiled ahead of time when the package is installed (``pip install .`` or
``pip install -e .``), so nothing is compiled at first use.

Setuptools with Cython rather than meson-python: ``pip install -e .`` (the README's
command) then builds the extensions in place within pip's isolated build environment,
whereas a meson-python editable install rebuilds on import and needs the build tools
installed beside the package (``--no-build-isolation``).
"""

import os
import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent
PACKAGE = "sklearn_safescreen"

#: -O3 is portable (no -march: the wheel must run on any x86-64 of its platform); the
#: few hot vector loops are cloned per instruction set instead (_utils/_vec.h).
COMPILE_ARGS = [] if sys.platform == "win32" else ["-O3"]

#: Safety does not depend on these: every index is computed by the package itself, and
#: the Python wrappers check shapes before entering compiled loops.
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "initializedcheck": False,
    "cdivision": True,
    "embedsignature": True,
}


#: Modules whose error-free transformations (compensated sums and dot products) need
#: every product rounded on its own: no contraction of ``a * b + c`` into an FMA, which
#: compilers may otherwise do where the instruction set has one.
EXACT_ROUNDING = {f"{PACKAGE}.problems._box_qp_fast"}
NO_CONTRACTION = [] if sys.platform == "win32" else ["-ffp-contract=off"]


def extensions() -> list[Extension]:
    sources = sorted((HERE / PACKAGE).rglob("*.pyx"))
    names = [".".join(p.relative_to(HERE).with_suffix("").parts) for p in sources]
    # the C headers the modules include: an edited header rebuilds them
    headers = sorted(str(p.relative_to(HERE)) for p in (HERE / PACKAGE).rglob("*.h"))
    return [Extension(name, [str(p.relative_to(HERE))], include_dirs=[str(HERE)],
                      depends=headers,
                      extra_compile_args=COMPILE_ARGS
                      + (NO_CONTRACTION if name in EXACT_ROUNDING else []))
            for name, p in zip(names, sources, strict=True)]


setup(ext_modules=cythonize(extensions(), compiler_directives=DIRECTIVES,
                            nthreads=os.cpu_count() or 1))
