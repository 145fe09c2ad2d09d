"""The tuning values of the greedy kernel solver (:mod:`.greedy_cd`) in one object.

None of them changes what a solve converges to: the solver stops on the same duality
gap whatever they are, and the caller certifies every answer on the full problem. They
choose how it gets there: which rows are computed and kept, when Newton steps are
tried, how the compiled loop scans and shares its work. Two solves with the same
options and inputs make the same updates, bit for bit, on any number of threads.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ._greedy_fast import TEAM_SPINS


@dataclass(frozen=True)
class GreedyOptions:
    """Tuning values of :func:`~.greedy_cd.solve_kernel_greedy` and its row cache.

    Each attribute's description says why it has its value; the measurements behind the
    values are in the section "Kernel SafeSVC profile" of doc/benchmarks.md (git has the
    full profiles).

    Attributes
    ----------
    greedy_min_free : int
        Fewest movable samples for which :func:`~.greedy_cd.prefer_greedy` chooses
        this solver: on fewer, the working sets' cyclic epochs over the cached kernel
        block are cheap, while on many free samples at large ``C`` they crawl.
    min_cache_rows : int
        Fewest rows the row cache holds whatever the budget: a smaller cache would
        recompute a row at nearly every update.
    share_fraction : float
        Columns covering at least this fraction of the samples have their rows
        computed through the kernel's own row cache, whose whole rows the
        certificate's margins then read instead of computing them again.
    prefetch_rows : int
        Rows computed together when the selected variable's row is missing: it and
        the largest other violations (likely the next selections), one blocked kernel
        call; more would compute rows that a warm solve never reads.
    prefetch_rows_cold : int
        The same in a solve from zero, where nearly every variable violates its
        condition alike and most rows are read: larger blocks then waste little.
    extend_fraction : float
        A kept cache serves the next solve when at most this fraction of its columns
        left the free set and the new interior variables add at most this fraction of
        new columns: beyond, widening every kept row costs more than new rows.
    narrow_fraction : float
        A kept cache is narrowed to the new free set only when more than this
        fraction of its columns left it: narrowing copies every cached row, worth it
        only when it frees a good share of each.
    fresh_start_room : float
        A warm solve whose kept columns' rows no longer all fit starts over from every
        free sample when the interior set's rows, times this margin, fit in rows that
        wide: otherwise W grows along the path past what the cache holds.
    restrict_fraction : float
        W is narrowed to the variables shrinking kept when they are fewer than this
        fraction of it: narrower rows let more rows be cached, worth the copy only
        when it frees a good share of each.
    shrink_every : int
        Updates between two shrinking passes, at most (LIBSVM's ``min(n, 1000)``): a
        pass costs about one scan, small against that many updates.
    prefer_cached : float
        A variable whose row is cached is updated instead of the best one when its
        decrease is at least this fraction of the best's: a kernel row costs far more
        than the scans of one update.
    partner_any : bool
        The partner is chosen among every scanned variable (its row computed when
        missing), as LIBSVM's second-order selection, while the cache can hold a row
        for each of them: a better partner saves updates and its row stays cached.
    uncached_partner_gain : float
        When the scanned variables' rows do not all fit, a partner whose row is
        missing is taken only when its second-order gain is at least this factor
        times the best cached partner's: its row may evict rows the next updates read.
    newton_below_gap : float
        Newton steps on the interior variables of a warm-started solve are tried
        once the relative gap over W is below this; by default from the first gap
        check. Greedy steps crawl on thousands of free support vectors at large
        ``C``, while a warm-started solve's interior set is already nearly the final
        one; and a step cannot undo the descent before it (its fixing rounds, then
        its scaling along its direction), so a step from a wrong set only costs its
        own solves. A solve from zero waits for ``newton_retry_gap`` (its first
        interior sets are far from the final one), and so does one on fewer than
        ``newton_early_min_free`` free samples.
    newton_early_min_free : int
        Fewest free samples for which a warm-started solve tries Newton steps from
        the first check: on fewer, an epoch of greedy updates costs less than a
        step's rounds (each a solve and its bookkeeping), and coordinate descent
        settles the bounds first.
    newton_max_steps : int
        Newton steps per solve, at most (each factorises the interior set or borders
        the kept factor); variables returning to W renew half of them, since the
        interior set then changed.
    newton_retry_gap : float
        Once steps tried from a larger gap gained little (the interior set is still
        far from the final one, as on a kernel LAD path whose warm start lies far from
        the next solution), later steps wait for this relative gap, where coordinate
        descent has settled most bounds.
    newton_late_gap : float
        ... and once steps from there gained little too, for this one, until
        variables return to W.
    newton_retries : int
        Steps in a row that may gain little before the next threshold holds: a step
        moves most wrongly interior variables to their bound, so the next one, a few
        updates later, usually lands.
    newton_useful_share : float
        A step gains little when it lowers the objective by less than this share of
        the duality gap before it (the most any step could gain): a step scaled
        down along its direction may still have closed most of the gap.
    newton_fix_rounds : int
        Rounds of a Newton step: after each, the variables the step carries out of
        their box are fixed at the bound they cross and the others solved again (a
        bordered solve with the kept factor). At large ``C`` along a path, the
        variables leaving the interior set overshoot far, and one clipped step
        misplaces the others.
    check_eighths : int
        Eighths of an epoch of updates between two gap checks, at most: the checks'
        schedule grows, and without a cap a solve brought near its end by a Newton
        step would run far past its tolerance before the next check.
    early_pending_check : bool
        Check the pending variables once before the first Newton step of a solve:
        those that return only at its end would make a second factorisation of the
        grown interior set.
    block_rows : int
        Rows computed or copied together outside the cache (bounded temporaries).
    dense_scan_share : float
        The compiled loop's scans read every position of W through a mask, four at a
        time, instead of the listed active positions one by one, while the active
        positions are at least this share of W: a masked position costs a fraction of
        a listed one.
    parallel_min : int
        Fewest positions of W for which the compiled loop's scans and updates are
        shared by the fit's threads: on fewer, a task is too short to repay handing
        it over to the other threads.
    team_patience : int
        Spins past which the loop's wait for its team counts as late; a team too often
        late (its cores busy with other work) is dismissed. The default is the spins
        before a waiting thread yields its core: a longer wait means it had to.
    """

    greedy_min_free: int = 400
    min_cache_rows: int = 16
    share_fraction: float = 0.9
    prefetch_rows: int = 32
    prefetch_rows_cold: int = 128
    extend_fraction: float = 0.25
    narrow_fraction: float = 0.1
    fresh_start_room: float = 1.5
    restrict_fraction: float = 0.7
    shrink_every: int = 1000
    prefer_cached: float = 0.1
    partner_any: bool = True
    uncached_partner_gain: float = 1.5
    newton_below_gap: float = float("inf")
    newton_early_min_free: int = 2000
    newton_max_steps: int = 12
    newton_retry_gap: float = 5e-2
    newton_late_gap: float = 1e-3
    newton_retries: int = 1
    newton_fix_rounds: int = 8
    newton_useful_share: float = 0.1
    check_eighths: int = 2
    early_pending_check: bool = True
    block_rows: int = 256
    dense_scan_share: float = 0.25
    parallel_min: int = 2048
    team_patience: int = TEAM_SPINS

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "bool":
                if not isinstance(value, bool):
                    raise TypeError(f"GreedyOptions.{f.name} must be a bool, got "
                                    f"{value!r}")
            elif isinstance(value, bool) or not isinstance(
                    value, int if f.type == "int" else (int, float)):
                raise TypeError(f"GreedyOptions.{f.name} must be {f.type}, got {value!r}")
            elif not value >= 0:  # also rejects NaN
                raise ValueError(f"GreedyOptions.{f.name} must be >= 0, got {value!r}")
        for name in ("min_cache_rows", "prefetch_rows", "prefetch_rows_cold",
                     "block_rows", "check_eighths", "newton_fix_rounds"):
            if getattr(self, name) < 1:
                raise ValueError(f"GreedyOptions.{name} must be >= 1, got "
                                 f"{getattr(self, name)!r}")

    def loop_arguments(self) -> dict:
        """The keyword arguments of the compiled loop
        (:func:`~._greedy_fast.greedy_updates`) these options set."""
        return dict(dense_share=self.dense_scan_share, parallel_min=self.parallel_min,
                    patience=self.team_patience)


#: The options a solve uses unless it is given others.
DEFAULT_OPTIONS = GreedyOptions()
