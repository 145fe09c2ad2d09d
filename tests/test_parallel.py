"""The OpenMP loops: the same results, bit for bit, on one thread and on several; the
thread count of a fit from ``n_jobs``, ``OMP_NUM_THREADS`` and threadpoolctl's limits.

Every test passes in a build without OpenMP too (``SKLEARN_SAFESCREEN_NO_OPENMP=1`` at
build time), where every loop runs on one thread whatever it is asked."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler
from sklearn_safescreen.problems._box_qp_fast import (
    add_rows,
    dot2_accumulate,
    dot2_add_rows,
    dot2_csr,
    dot2_dense,
    dot2_rows,
    gap_terms,
    gather_signed_rows,
    row_sq_norms,
    symmetric_kernel_block,
    symmetric_kernel_diag,
)
from sklearn_safescreen.screening._balls_fast import gap_ball_masks
from threadpoolctl import threadpool_limits

from sklearn_safescreen import SafeSVC
from sklearn_safescreen._utils import openmp
from sklearn_safescreen.problems import kernels

#: thread counts compared with one thread (3: more threads than this machine's cores)
THREADS = (2, 3)


def _same(a, b):
    """Bit for bit, signed zeros and NaNs included."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes()


def test_team_size_follows_the_build():
    if openmp.openmp_built():
        assert openmp.team_size(2) == 2
    else:
        assert openmp.team_size(4) == 1
        assert openmp.effective_n_threads() == 1
        assert openmp.effective_n_threads(-1) == 1
    assert openmp.team_size(1) == 1
    with pytest.raises(ValueError):
        openmp.team_size(0)


@pytest.mark.parametrize("kind", [0, 1, 2])
@pytest.mark.parametrize("n, m, d", [(1, 3001, 7), (5, 1100, 20), (301, 9, 3),
                                     (257, 130, 31), (3, 2, 0)])
def test_kernel_blocks_do_not_depend_on_the_threads(kind, n, m, d):
    """Wide blocks are split by columns and narrow ones by rows: every value is the
    one-thread value, and the diagonal is still the diagonal's routine's."""
    rng = np.random.default_rng(n * m + d)
    X = rng.standard_normal((max(n, m), d)) * 0.7
    sq = row_sq_norms(X)
    A, Bt = X[:n].copy(), np.ascontiguousarray(X[:m].T)
    args = (A, sq[:n], Bt, sq[:m], kind, 0.3, 1.0, 3.0)
    one = symmetric_kernel_block(*args, n_threads=1)
    for nt in THREADS:
        _same(symmetric_kernel_block(*args, n_threads=nt), one)
    _same(symmetric_kernel_block(*args), one)  # automatic count
    k = min(n, m)
    _same(np.diag(one[:k, :k]), symmetric_kernel_diag(sq[:k], kind, 0.3, 1.0, 3.0))


def test_kernel_rows_of_the_row_cache_do_not_depend_on_the_threads():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((2500, 12))
    km = kernels.KernelMatrix(X, "rbf", {"gamma": 0.1}, bias=1.0)
    rows = np.array([4, 2000, 17], dtype=np.int64)
    with threadpool_limits(limits=1, user_api="openmp"):
        one = km.rows_over(np.arange(2500))(rows)
    _same(km.rows_over(np.arange(2500))(rows), one)
    _same(km.block(rows, np.arange(2500)), one)


def _rows_and_coef(rng, n_rows, n_cols, m):
    A = rng.standard_normal((n_rows, n_cols)) * np.exp(rng.uniform(0, 20, (n_rows, 1)))
    rows = rng.choice(n_rows, size=m, replace=False).astype(np.int64)
    coef = rng.standard_normal(m)
    coef[::5] = 0.0  # skipped terms
    return A, rows, coef


@pytest.mark.parametrize("n_cols", [1, 1023, 1025, 3000])
def test_compensated_margins_do_not_depend_on_the_threads(n_cols):
    """Each output element's compensated sum runs over the rows in the same order on
    any number of threads (the columns are split, never a sum)."""
    rng = np.random.default_rng(n_cols)
    A, rows, coef = _rows_and_coef(rng, 60, n_cols, 40)

    def run(func, *args, nt):
        s, c, ab = np.zeros(n_cols), np.zeros(n_cols), np.zeros(n_cols)
        func(s, c, ab, *args, n_threads=nt)
        return s, c, ab

    for func, args in ((dot2_add_rows, (A, rows, coef)),
                       (dot2_accumulate, (np.ascontiguousarray(A[rows]), coef))):
        one = run(func, *args, nt=1)
        for nt in THREADS:
            for got, want in zip(run(func, *args, nt=nt), one, strict=True):
                _same(got, want)
    # the cached rows and the computed blocks are the same product
    for got, want in zip(run(dot2_accumulate, np.ascontiguousarray(A[rows]), coef, nt=2),
                         run(dot2_add_rows, A, rows, coef, nt=1), strict=True):
        _same(got, want)


@pytest.mark.parametrize("n, d", [(1, 5), (700, 3), (2049, 40), (300, 600)])
def test_linear_margins_do_not_depend_on_the_threads(n, d):
    rng = np.random.default_rng(n + d)
    X = rng.standard_normal((n, d)) * np.exp(rng.uniform(0, 20, (n, d)))
    coef, w = rng.standard_normal(n), rng.standard_normal(d)
    for func, args in ((dot2_dense, (X, coef)), (dot2_rows, (X, w))):
        one = func(*args, n_threads=1)
        for nt in THREADS:
            for got, want in zip(func(*args, n_threads=nt), one, strict=True):
                _same(got, want)
    S = sp.random(n, d, density=0.3, format="csr", random_state=0)
    for index_dtype in (np.int32, np.int64):
        ind, ptr = S.indices.astype(index_dtype), S.indptr.astype(index_dtype)
        one = dot2_csr(S.data, ind, ptr, w, n_threads=1)
        for nt in THREADS:
            for got, want in zip(dot2_csr(S.data, ind, ptr, w, n_threads=nt), one,
                                 strict=True):
                _same(got, want)


@pytest.mark.parametrize("n_cols", [5, 1024, 2500])
def test_plain_row_sums_do_not_depend_on_the_threads(n_cols):
    """``g += coef @ A[rows]``: every element gets the rows' rounded products in order,
    as NumPy's row-by-row updates give them (an independent oracle)."""
    rng = np.random.default_rng(n_cols)
    A, rows, coef = _rows_and_coef(rng, 50, n_cols, 30)
    g0 = rng.standard_normal(n_cols)
    want = g0.copy()
    for r, c in zip(rows, coef, strict=True):
        if c != 0.0:
            want += c * A[r]
    for nt in (1, *THREADS):
        g = g0.copy()
        add_rows(g, A, rows, coef, n_threads=nt)
        _same(g, want)


@pytest.mark.parametrize("every", [True, False])
def test_signed_row_copies_do_not_depend_on_the_threads(every):
    """``dst[dst_rows[k]] = src[src_rows[k], cols] * s_k * s_cols``, against NumPy's
    gather and products (an independent oracle), on 1, 2 and 3 threads."""
    rng = np.random.default_rng(11)
    src = rng.standard_normal((40, 700))
    cols = np.arange(700) if every else rng.permutation(700)[:500]
    m = cols.size
    src_rows = rng.permutation(40)[:25]
    dst_rows = rng.permutation(30)[:25]
    s_rows = rng.choice([-1.0, 1.0], 25)
    s_cols = rng.choice([-1.0, 1.0], m)
    base = rng.standard_normal((30, m))
    want = base.copy()
    want[dst_rows] = src[np.ix_(src_rows, cols)] * s_rows[:, None] * s_cols[None, :]
    arg = np.empty(0, dtype=np.int64) if every else cols.astype(np.int64)
    for nt in (1, *THREADS):
        dst = base.copy()
        gather_signed_rows(dst, dst_rows, src, src_rows, arg, s_rows, s_cols,
                           n_threads=nt)
        _same(dst, want)
    with pytest.raises(IndexError):
        gather_signed_rows(base.copy(), dst_rows + 30, src, src_rows, arg, s_rows, s_cols)


def test_gap_terms_and_ball_masks_do_not_depend_on_the_threads():
    rng = np.random.default_rng(3)
    n = 5000
    q, p = rng.standard_normal(n), rng.standard_normal(n)
    lo, hi = np.zeros(n), rng.uniform(0.5, 2.0, n)
    alpha = np.clip(rng.standard_normal(n), lo, hi)
    rows = rng.permutation(n).astype(np.int64)
    sqnorm = rng.uniform(0, 3, n)
    one = gap_terms(q, p, lo, hi, alpha, rows, n_threads=1)
    masks = gap_ball_masks(q, p, sqnorm, 0.05, 1e-12, n_threads=1)
    assert masks[0].any() and masks[1].any()
    for nt in THREADS:
        _same(gap_terms(q, p, lo, hi, alpha, rows, n_threads=nt), one)
        for got, want in zip(gap_ball_masks(q, p, sqnorm, 0.05, 1e-12, n_threads=nt), masks,
                             strict=True):
            _same(got, want)


def test_effective_threads_follow_n_jobs_and_threadpoolctl():
    full = openmp.effective_n_threads()
    assert full >= 1
    assert openmp.effective_n_threads(1) == 1
    assert openmp.effective_n_threads(-1) == full
    assert openmp.effective_n_threads(10_000) == full  # never more than allowed
    assert openmp.effective_n_threads(-10_000) == 1
    with pytest.raises(ValueError):
        openmp.effective_n_threads(0)
    with threadpool_limits(limits=1, user_api="openmp"):
        assert openmp.effective_n_threads() == 1
        assert openmp.effective_n_threads(-1) == 1


def test_omp_num_threads_is_respected():
    code = ("from sklearn_safescreen._utils import openmp; "
            "print(openmp.effective_n_threads(), openmp.current_n_threads())")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["1", "1"]


def _path_data(n=2400):
    X, y = make_classification(n, 20, n_informative=10, flip_y=0.05, random_state=0)
    return StandardScaler().fit_transform(X), y


def _record_threads(monkeypatch):
    """The OpenMP count the compiled loops see at every kernel evaluation of a fit."""
    seen = []
    compute = kernels.KernelMatrix._compute

    def spy(self, rows, cols, out=None):
        seen.append(openmp.current_n_threads())
        return compute(self, rows, cols, out=out)

    monkeypatch.setattr(kernels.KernelMatrix, "_compute", spy)
    return seen


def test_a_fit_uses_the_threads_it_is_given(monkeypatch):
    X, y = _path_data(600)
    seen = _record_threads(monkeypatch)
    with threadpool_limits(limits=1, user_api="openmp"):
        SafeSVC(kernel="rbf", gamma=0.05, C=1.0).fit(X, y)
    assert seen and set(seen) == {1}
    seen.clear()
    SafeSVC(kernel="rbf", gamma=0.05, C=1.0, n_jobs=1).fit(X, y)
    assert seen and set(seen) == {1}
    seen.clear()
    SafeSVC(kernel="rbf", gamma=0.05, C=1.0).fit(X, y)
    assert seen and set(seen) == {openmp.effective_n_threads()}
    assert openmp.current_n_threads() == openmp.effective_n_threads()  # fit is over


def test_an_rbf_path_is_the_same_on_one_and_on_two_threads():
    """Every parallel loop computes each element as one thread does, so a warm-started
    RBF path gives the same model bit for bit (and so within its certified gap)."""
    X, y = _path_data()
    Cs = np.logspace(-1, 2, 4)

    def walk(n_jobs):
        est = SafeSVC(kernel="rbf", gamma=0.05, warm_start=True, n_jobs=n_jobs)
        out = []
        for C in Cs:
            est.set_params(C=C).fit(X, y)
            out.append((est.dual_coef_.copy(), est.support_.copy(),
                        est.decision_function(X), est.screening_report_.n_screened))
        return out

    one, two = walk(1), walk(2)
    for a, b in zip(one, two, strict=True):
        _same(a[0], b[0])
        _same(a[1], b[1])
        _same(a[2], b[2])
        assert a[3] == b[3]


@pytest.mark.parametrize("user", [None, "ACTIVE"])
def test_the_wait_policy_is_passive_unless_the_user_chose(user):
    """Set before the runtime loads (it reads the variable once), never over the
    user's choice."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    if user is not None:
        env["OMP_WAIT_POLICY"] = user
    code = "import os, sklearn_safescreen; print(os.environ['OMP_WAIT_POLICY'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == (user or "PASSIVE")


def test_path_cv_folds_on_threads_share_the_openmp_threads(monkeypatch):
    """Folds run at once on threads divide the OpenMP threads between them (each fit
    taking every core would oversubscribe the machine): 4 threads, 2 folds at once."""
    from sklearn.datasets import make_classification

    from sklearn_safescreen import RegularizationPathCV, SafeSVC, _search_walk
    from sklearn_safescreen._utils import openmp

    seen = []
    walk_fold = _search_walk._walk_fold

    def spy(*args, **kwargs):
        seen.append(openmp.current_n_threads())
        return walk_fold(*args, **kwargs)

    monkeypatch.setattr(_search_walk, "effective_n_threads", lambda n_jobs=None: 4)
    monkeypatch.setattr(_search_walk, "_walk_fold", spy)
    X, y = make_classification(120, 5, random_state=0)
    RegularizationPathCV(SafeSVC(kernel="linear"), values=[0.1, 1.0], cv=2,
                         n_jobs=2).fit(X, y)
    assert seen == [2, 2]


def _greedy_problem(n, seed):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 6)
    sign = np.where(rng.rand(n) < 0.5, -1.0, 1.0)
    Q = sign[:, None] * np.exp(-0.1 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    Q *= sign[None, :]
    return Q, sign


@pytest.mark.parametrize("n_active_share", [1.0, 0.1])  # masked scans / the listed ones
@pytest.mark.parametrize("missing", [False, True])  # every row cached / some missing
def test_the_greedy_loop_is_the_same_on_one_and_on_several_threads(n_active_share,
                                                                   missing):
    """The loop's scans and gradient updates shared by a team of threads: fixed chunks
    of positions merged in their order, so every choice and every gradient value is
    the same bit for bit whatever the team's size."""
    from sklearn_safescreen.solvers import _greedy_fast

    n = 1300
    Q, sign = _greedy_problem(n, 0)
    diag = Q.diagonal().copy()
    rng = np.random.RandomState(1)
    slot = np.arange(n, dtype=np.int64)
    if missing:
        slot[rng.rand(n) < 0.3] = -1
    rows = np.ascontiguousarray(Q[np.flatnonzero(slot >= 0)])
    slot[slot >= 0] = np.arange(rows.shape[0])
    n_active = max(2, int(n_active_share * n))

    def run(n_threads):
        a = np.zeros(n)
        g = -np.ones(n)
        active = rng_order.permutation(n).astype(np.int64)
        out = []
        calls = 0
        while calls < 50:
            res = _greedy_fast.greedy_updates(
                a, g, np.zeros(n), np.full(n, 2.0), diag, 1.0 / diag, sign, active,
                n_active, n, rows, slot, np.zeros(rows.shape[0], dtype=np.int64), 0,
                400, 1e-9, 50, True, 0.9, 0, 2.0, 0, n_threads, dense_share=0.25,
                parallel_min=256)
            out.append((res[:8], a.copy(), g.copy(), active.copy(), res.team_size))
            calls += 1
            if res[0] != _greedy_fast.NEED_ROW:
                break
            # stand-in for the solver's fetch: cache the asked row in place of another
            need = res[5]
            taken = np.flatnonzero(slot >= 0)
            evicted = taken[calls % taken.size]
            rows[slot[evicted]] = Q[need]
            slot[need], slot[evicted] = slot[evicted], -1
        return out

    rows0, slot0 = rows.copy(), slot.copy()
    rng_order = np.random.RandomState(2)
    one = run(1)
    for k in THREADS:
        rows[:], slot[:] = rows0, slot0
        rng_order = np.random.RandomState(2)
        other = run(k)
        assert len(other) == len(one)
        for x, y in zip(one, other, strict=True):
            assert x[0][:4] == y[0][:4] and x[0][5:] == y[0][5:]
            _same(x[0][4], y[0][4])  # the violation
            _same(x[1], y[1])
            _same(x[2], y[2])
            _same(x[3], y[3])
        if openmp.openmp_built():
            assert other[0][4] == k  # the team ran with every thread asked for
    assert one[0][4] == 1
    assert one[-1][0][1] > 0  # updates were made


def test_an_rbf_path_is_the_same_with_the_greedy_loop_on_a_team(monkeypatch):
    """The whole path with the loop's team forced on (W of any size): the same model,
    bit for bit, on one thread and on two."""
    from sklearn_safescreen.solvers import greedy_cd

    monkeypatch.setattr(greedy_cd, "DEFAULT_OPTIONS",
                        replace(greedy_cd.DEFAULT_OPTIONS, parallel_min=0))
    test_an_rbf_path_is_the_same_on_one_and_on_two_threads()


@pytest.mark.parametrize("size", [(1 << 18) + 1, 3 * (1 << 18) + 7])
def test_the_rbf_exponential_does_not_depend_on_the_threads(size):
    """The RBF blocks' exponential in contiguous parts on several threads: each value
    is NumPy's for that value alone, so the parts give one call's values."""
    from sklearn_safescreen.problems import _box_qp_fast

    x = -30.0 * np.random.RandomState(0).rand(size)
    ref = np.exp(x)
    for nt in (1,) + THREADS:
        y = x.copy()
        _box_qp_fast._exp_in_place(y, nt)
        _same(y, ref)


def _tiled_system(n, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 5)
    sq = (X ** 2).sum(1)
    A = np.exp(-0.2 * np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0))
    return A + 1e-6 * np.eye(n), rng.randn(n, 3)


@pytest.mark.parametrize("n", [1, 255, 256, 700])
def test_tiled_cholesky_and_solves_do_not_depend_on_the_threads(n):
    """The Newton steps' factor and solutions: each tile computed by one BLAS call, so
    the same bit for bit on any number of threads, and right (against the matrix)."""
    from sklearn_safescreen.solvers._tiled_fast import tiled_cho_solve, tiled_cholesky

    A, B = _tiled_system(n)
    with threadpool_limits(1, user_api="blas"):
        runs = []
        for nt in (1,) + THREADS:
            L = np.array(A, order="F")
            assert tiled_cholesky(L, nt) == 0
            X = np.array(B, order="F")
            tiled_cho_solve(L, X, nt)
            runs.append((np.tril(L), X))
    for L, X in runs[1:]:
        _same(L, runs[0][0])
        _same(X, runs[0][1])
    L = runs[0][0]
    np.testing.assert_allclose(L @ L.T, A, atol=1e-12)
    np.testing.assert_allclose(A @ runs[0][1], B, atol=1e-8 * np.abs(B).max() * n)


def test_tiled_cholesky_reports_the_first_minor_that_is_not_positive_definite():
    from sklearn_safescreen.solvers._tiled_fast import tiled_cholesky

    A, _ = _tiled_system(600)
    A[400, 400] = -1.0  # the minor of order 401 is not positive definite
    assert tiled_cholesky(np.asfortranarray(A), 2) == 401


def test_greedy_loops_running_at_once_share_the_threads():
    """Loops on threads of one process (one-vs-rest tasks, folds) split the fit's
    threads among their teams instead of each taking them all."""
    from sklearn_safescreen.solvers.greedy_cd import _LoopTeam

    total = openmp.current_n_threads()
    with _LoopTeam() as first:
        assert first == total
        with _LoopTeam() as second:
            assert second == max(1, total // 2)
        with _LoopTeam() as third:  # the second is over
            assert third == max(1, total // 2)
    assert _LoopTeam.running == 0


def test_a_team_whose_threads_are_late_is_dismissed_with_the_same_answer():
    """When the others' cores are busy (here: every wait counted as late), the first
    thread dismisses the team and goes on alone over the same chunks: the answer is
    the one-thread answer, bit for bit."""
    from sklearn_safescreen.solvers import _greedy_fast

    if not openmp.openmp_built():
        pytest.skip("one thread only in this build")
    n = 900
    Q, sign = _greedy_problem(n, 3)
    diag = Q.diagonal().copy()
    rows = np.ascontiguousarray(Q)

    def run(n_threads):
        a, g = np.zeros(n), -np.ones(n)
        out = _greedy_fast.greedy_updates(
            a, g, np.zeros(n), np.full(n, 2.0), diag, 1.0 / diag, sign,
            np.arange(n, dtype=np.int64), n, n, rows, np.arange(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64), 0, 2000, 1e-9, 50, True, 0.9, 0, 2.0, 0,
            n_threads, dense_share=0.25, parallel_min=256, patience=0)
        return out[:8], a, g, out.team_gave_up

    one, two = run(1), run(2)
    assert not one[3] and two[3]  # dismissed after its first tasks
    assert one[0][:4] == two[0][:4] and one[0][5:] == two[0][5:]
    _same(one[1], two[1])
    _same(one[2], two[2])
    assert one[0][1] > 100  # past the tasks after which the team was dismissed


def test_greedy_loops_on_threads_each_return_their_own_outcome():
    """Calls of the compiled loop running at once on threads of one process (as the
    one-vs-rest tasks of a fit): each returns its own outcome (its team's size, whether
    its team was dismissed) and iterates, those it gets when it runs alone. Half the
    calls count every wait as late (their team is dismissed), half never do."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from sklearn_safescreen.solvers import _greedy_fast

    n, n_tasks, n_calls = 700, 4, 3
    problems = [_greedy_problem(n, 10 + k) for k in range(n_tasks)]
    # patience 0 (every wait late: dismissed after its first tasks) or never late
    patience = [0 if k % 2 == 0 else 2**31 - 1 for k in range(n_tasks)]

    def task(k, barrier=None):
        Q, sign = problems[k]
        diag = Q.diagonal().copy()
        rows = np.ascontiguousarray(Q)
        a, g = np.zeros(n), -np.ones(n)
        active = np.arange(n, dtype=np.int64)
        n_active, clock, since, out = n, 0, 0, []
        if barrier is not None:
            barrier.wait()
        for _ in range(n_calls):  # calls that interleave with the other tasks'
            res = _greedy_fast.greedy_updates(
                a, g, np.zeros(n), np.full(n, 2.0), diag, 1.0 / diag, sign, active,
                n_active, n, rows, np.arange(n, dtype=np.int64),
                np.zeros(n, dtype=np.int64), clock, 300, 1e-9, 50, True, 0.9, 0, 2.0,
                since, 2, dense_share=0.25, parallel_min=256, patience=patience[k])
            n_active, clock, since = res.n_active, res.clock, res.since_shrink
            out.append(res)
        return out, a, g

    alone = [task(k) for k in range(n_tasks)]
    barrier = threading.Barrier(n_tasks)
    with ThreadPoolExecutor(n_tasks) as pool:
        together = list(pool.map(lambda k: task(k, barrier), range(n_tasks)))
    for k, ((o1, a1, g1), (o2, a2, g2)) in enumerate(zip(alone, together, strict=True)):
        for r1, r2 in zip(o1, o2, strict=True):
            assert r1[:4] == r2[:4] and r1[5:] == r2[5:]
            _same(r1.violation, r2.violation)
        _same(a1, a2)
        _same(g1, g2)
        built = openmp.openmp_built()
        assert all(r.team_size == (2 if built else 1) for r in o2)
        # the dismissed teams are those told to count every wait, and only them
        assert all(r.team_gave_up == (built and patience[k] == 0) for r in o2)
        assert o2[-1].updates == 300  # every call ran its whole budget


def test_greedy_solves_on_threads_match_a_sequential_run(monkeypatch):
    """Whole greedy solves (the loop's team forced on for W of any size) running at
    once on threads give, each, the answer of a sequential run, bit for bit."""
    from concurrent.futures import ThreadPoolExecutor

    from sklearn_safescreen.problems.box_qp import BoxQP
    from sklearn_safescreen.problems.kernels import KernelMatrix
    from sklearn_safescreen.solvers import greedy_cd

    Cs = [0.3, 1.0, 3.0, 10.0]
    monkeypatch.setattr(greedy_cd, "DEFAULT_OPTIONS",
                        replace(greedy_cd.DEFAULT_OPTIONS, parallel_min=0))
    # two threads for the team of each solve, also when they all run at once
    monkeypatch.setattr(greedy_cd, "current_n_threads", lambda: 2 * len(Cs))
    X, y = _path_data(1200)
    y = np.where(y > 0, 1.0, -1.0)
    n = y.size

    def solve(C):
        km = KernelMatrix(X, "rbf", {"gamma": 0.05}, 1.0, cache_size=20.0)
        problem = BoxQP(sign=y, p=np.ones(n), lo=np.zeros(n), hi=np.full(n, C),
                        sqnorm=km.diag(), kernel=km)
        res = greedy_cd.solve_kernel_greedy(problem, np.zeros(n), np.zeros(n, bool),
                                            tol=1e-8, max_iter=10000, random_state=None)
        return res.alpha, res.gap, res.n_iter

    sequential = [solve(C) for C in Cs]
    with ThreadPoolExecutor(len(Cs)) as pool:
        together = list(pool.map(solve, Cs))
    for s, t in zip(sequential, together, strict=True):
        _same(s[0], t[0])
        assert s[1:] == t[1:]
