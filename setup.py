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
import tempfile
import textwrap
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
PACKAGE = "sklearn_safescreen"

#: -O3 is portable (no -march: the wheel must run on any x86-64 of its platform); the
#: few hot vector loops are cloned per instruction set instead (_utils/_vec.h). -g0 drops
#: the debug information that Python's own CFLAGS ask for (-g): on Cython's large
#: generated sources it costs compile time and object size, and no machine code; the
#: symbol tables stay for profilers.
COMPILE_ARGS = [] if sys.platform == "win32" else ["-O3", "-g0"]

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
#: every product rounded on its own, or whose results must equal those of another form
#: (the vectorised NumPy form they replace; the greedy solver's masked vector scans,
#: whose choices must be those of its scalar scans on every processor): no contraction
#: of ``a * b + c`` into an FMA, which compilers may otherwise do where the instruction
#: set has one.
EXACT_ROUNDING = {f"{PACKAGE}.problems._box_qp_fast", f"{PACKAGE}.problems._triplet_set_fast",
                  f"{PACKAGE}.screening._balls_fast",
                  f"{PACKAGE}.screening._lp_svm_fast", f"{PACKAGE}.solvers._greedy_fast"}
NO_CONTRACTION = [] if sys.platform == "win32" else ["-ffp-contract=off"]


#: Modules with parallel loops (Cython ``prange``): built with the compiler's OpenMP flags
#: when it has them (see :class:`BuildExt`); without them the loops run on one thread.
OPENMP_MODULES = {f"{PACKAGE}.problems._box_qp_fast", f"{PACKAGE}.problems._triplet_set_fast",
                  f"{PACKAGE}.screening._balls_fast",
                  f"{PACKAGE}.solvers._greedy_fast", f"{PACKAGE}.solvers._tiled_fast",
                  f"{PACKAGE}._utils._openmp_fast"}

#: Set (to anything but "" or "0") to build without OpenMP even where the compiler has it:
#: the single-threaded build of a compiler without OpenMP, for testing that path.
NO_OPENMP_VARIABLE = "SKLEARN_SAFESCREEN_NO_OPENMP"

#: (compile, link) flags to try, in order: GCC and clang (Linux, MinGW), MSVC (whose
#: linker takes no flag), Apple clang with the Homebrew libomp.
OPENMP_FLAG_CANDIDATES = (
    (["-fopenmp"], ["-fopenmp"]),
    (["/openmp"], []),
    (["-Xpreprocessor", "-fopenmp"], ["-lomp"]),
)

_OPENMP_PROBE = textwrap.dedent("""\
    #include <omp.h>
    #include <stdio.h>
    int main(void) {
        int n = 0;
        #pragma omp parallel reduction(+: n)
        n += 1;
        printf("%d %d\\n", n, omp_get_max_threads());
        return 0;
    }
""")


def _openmp_flags(compiler) -> tuple[list[str], list[str]] | None:
    """The (compile, link) flags with which ``compiler`` compiles and links a small
    OpenMP program, or None when no candidate does (or OpenMP is switched off)."""
    if os.environ.get(NO_OPENMP_VARIABLE, "") not in ("", "0"):
        print(f"{NO_OPENMP_VARIABLE} is set: building without OpenMP (one thread)")
        return None
    for compile_flags, link_flags in OPENMP_FLAG_CANDIDATES:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "openmp_probe.c"
            src.write_text(_OPENMP_PROBE)
            try:
                objects = compiler.compile([str(src)], output_dir=tmp,
                                           extra_postargs=compile_flags)
                compiler.link_executable(objects, "openmp_probe", output_dir=tmp,
                                         extra_postargs=link_flags)
            except Exception:  # CompileError, LinkError, or a compiler not found
                continue
        return compile_flags, link_flags
    print("warning: the C compiler does not support OpenMP; the compiled loops of "
          "sklearn_safescreen will run on one thread")
    return None


class BuildExt(build_ext):
    """``build_ext`` that compiles the modules in parallel and adds the OpenMP flags to
    :data:`OPENMP_MODULES` when the compiler has them (checked once per build, as
    scikit-learn's build helpers do)."""

    def finalize_options(self):
        # pip runs ``build_ext`` without ``-j``: compile one module per core unless the
        # caller chose (``-j N``, or ``parallel`` in a setup.cfg). Only the build's wall
        # time depends on it; each module's object code is the same.
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1
        super().finalize_options()

    def build_extensions(self):
        flags = _openmp_flags(self.compiler)
        if flags is not None:
            for ext in self.extensions:
                if ext.name in OPENMP_MODULES:
                    ext.extra_compile_args = list(ext.extra_compile_args) + flags[0]
                    ext.extra_link_args = list(ext.extra_link_args) + flags[1]
        # the largest generated sources first: on a few cores the build then ends with
        # small modules rather than one core compiling a large one alone
        self.extensions.sort(key=lambda ext: -sum(
            os.path.getsize(src) for src in ext.sources if os.path.exists(src)))
        super().build_extensions()


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
                            nthreads=os.cpu_count() or 1),
      cmdclass={"build_ext": BuildExt})
