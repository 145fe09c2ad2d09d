# The thread team of the greedy kernel solver's compiled loop (_greedy_fast.pyx), apart
# from the loop itself: the positions the scans read and the chunks' candidates, the
# chunk tasks (a selection scan, a partner scan, a gradient update over fixed chunks of
# positions, _greedy_scan.h), the team that shares them among the threads of one
# parallel region, and the merges of the chunks' candidates in chunk order.
#
# Everything here is inline (no module of its own at run time). The first thread runs
# the loop and posts each task (team_run, team_update); the others run team_work until
# the loop is over. Fixed chunks merged in their order make every choice and every
# gradient value the same, bit for bit, whatever the number of threads.

from libc.stdint cimport int64_t

cdef extern from "sklearn_safescreen/solvers/_greedy_team.h" nogil:
    int GT_SPINS
    int gt_atomics()
    int gt_thread_num()
    int gt_team_size()
    long gt_load(const long* p)
    void gt_store(long* p, long v)
    void gt_relax(int* spins)

cdef extern from "sklearn_safescreen/solvers/_greedy_scan.h" nogil:
    void gs_select(Py_ssize_t m, const double* g, const double* a, const double* lo,
                   const double* hi, const double* diag, const double* inv_diag,
                   const int64_t* slot, const double* on, double* vmax,
                   Py_ssize_t* best, double* best_score, Py_ssize_t* cached,
                   double* cached_score)
    void gs_partner(Py_ssize_t m, const double* g, const double* a, const double* lo,
                    const double* hi, const double* diag, const double* sign,
                    const int64_t* slot, const double* on, const double* row,
                    Py_ssize_t first, double sigma, double h_i, double s_i, double qii,
                    double tau, Py_ssize_t* partner, double* b2, double* c,
                    Py_ssize_t* cached, double* cached_b2, double* cached_c)
    int gs_gain_beats(double b2, double c, Py_ssize_t j, double b2_best, double c_best,
                      Py_ssize_t best)
    void gs_update(Py_ssize_t m, double* g, double d1, const double* r1, double d2,
                   const double* r2)

# The masked scans and the gradient updates run over fixed chunks of positions, each
# chunk's best candidates merged in chunk order: the choices (and every gradient value)
# are then the same whatever the number of threads that share the chunks.
cdef enum:
    CHUNK = 512


cdef struct Positions:
    # the arrays the scans read, over every position of W
    double* g
    const double* a
    const double* lo
    const double* hi
    const double* diag
    const double* inv_diag
    const double* sign
    const int64_t* slot  # NULL: every row cached
    const double* on
    Py_ssize_t m


cdef struct Chunks:
    # one entry per chunk: the selection scan's and the partner scan's candidates
    double* vmax
    Py_ssize_t* best
    double* best_score
    Py_ssize_t* cached
    double* cached_score
    Py_ssize_t* partner
    double* b2
    double* c
    Py_ssize_t* cached_partner
    double* cached_b2
    double* cached_c


cdef inline void select_chunk(const Positions* p, const Chunks* out,
                              Py_ssize_t k) noexcept nogil:
    cdef Py_ssize_t s = k * CHUNK
    cdef Py_ssize_t e = min(p.m, s + CHUNK)
    gs_select(e - s, p.g + s, p.a + s, p.lo + s, p.hi + s, p.diag + s, p.inv_diag + s,
              (p.slot + s) if p.slot != NULL else NULL, p.on + s, &out.vmax[k],
              &out.best[k], &out.best_score[k], &out.cached[k], &out.cached_score[k])
    if out.best[k] >= 0:
        out.best[k] += s
    if out.cached[k] >= 0:
        out.cached[k] += s


cdef inline void update_chunk(const Positions* p, const Chunks* out, Py_ssize_t k,
                              double d1, const double* row1, double d2,
                              const double* row2, bint select) noexcept nogil:
    # the gradient's chunk, then (the next scan fused with the update) its candidates
    cdef Py_ssize_t s = k * CHUNK
    gs_update(min(p.m, s + CHUNK) - s, p.g + s, d1, row1 + s, d2,
              (row2 + s) if row2 != NULL else NULL)
    if select:
        select_chunk(p, out, k)


cdef inline void partner_chunk(const Positions* p, const Chunks* out, Py_ssize_t k,
                               const double* row, Py_ssize_t first, double sigma,
                               double h_i, double s_i, double qii,
                               double tau) noexcept nogil:
    cdef Py_ssize_t s = k * CHUNK
    cdef Py_ssize_t e = min(p.m, s + CHUNK)
    gs_partner(e - s, p.g + s, p.a + s, p.lo + s, p.hi + s, p.diag + s, p.sign + s,
               (p.slot + s) if p.slot != NULL else NULL, p.on + s, row + s, first - s,
               sigma, h_i, s_i, qii, tau, &out.partner[k], &out.b2[k], &out.c[k],
               &out.cached_partner[k], &out.cached_b2[k], &out.cached_c[k])
    if out.partner[k] >= 0:
        out.partner[k] += s
    if out.cached_partner[k] >= 0:
        out.cached_partner[k] += s


cdef enum:
    SELECT = 0
    PARTNER = 1
    UPDATE = 2
    MAX_TEAM = 16
    # the team is dismissed when more than one task in LATE_SHARE made the first
    # thread wait past its spins, over at least LATE_WINDOW tasks: each late task
    # waited for a time slice of the scheduler (another process holds that core),
    # which costs far more than the task, so a team often late is slower than one
    # thread; a window of tasks keeps one late wait from dismissing it
    LATE_WINDOW = 64
    LATE_SHARE = 8


cdef struct Team:
    # The threads of one greedy_updates call: the first runs the loop and posts each
    # scan or update as a task (its kind and arguments, then a new ``phase``); every
    # thread runs the task on its own contiguous share of the chunks (so a thread keeps
    # reading the same part of the arrays, in its own cache) and the first waits for
    # the others' ``done``. The loop's decisions between tasks take well under a
    # microsecond, so the others wait spinning (then yielding), not in the OpenMP
    # runtime, whose parallel region per task (a sleep and a wake-up of each thread
    # with the passive wait policy) would cost more than the task.
    long phase  # the task's number; -1: the loop is over
    long done[MAX_TEAM]
    int nt  # the threads that share the tasks now
    int size  # the team's size (when the region started)
    long tasks  # tasks handed to the team in this call
    long late  # of which the first thread waited past its spins for
    bint gave_up  # the team was dismissed (the others were too often late)
    int patience  # a wait of the first thread is late past this many spins
    int kind
    Positions* pos
    Chunks* ch
    Py_ssize_t n_chunks
    double d1
    double d2
    const double* row1  # the first variable's row (both tasks that read a row)
    const double* row2
    bint select
    Py_ssize_t first
    double sigma
    double h_i
    double s_i
    double qii
    double tau  # the curvature used where a pair's is not positive


cdef inline void team_chunks(Team* T, int tid) noexcept nogil:
    cdef Py_ssize_t k
    cdef Py_ssize_t start = tid * T.n_chunks // T.nt
    cdef Py_ssize_t stop = (tid + 1) * T.n_chunks // T.nt
    for k in range(start, stop):
        if T.kind == UPDATE:
            update_chunk(T.pos, T.ch, k, T.d1, T.row1, T.d2, T.row2, T.select)
        elif T.kind == SELECT:
            select_chunk(T.pos, T.ch, k)
        else:
            partner_chunk(T.pos, T.ch, k, T.row1, T.first, T.sigma, T.h_i, T.s_i,
                          T.qii, T.tau)


cdef inline void team_run(Team* T, int kind) noexcept nogil:
    # one task over every chunk, on every thread of the team; returns when it is done
    cdef long p
    cdef int w, spins
    T.kind = kind
    if T.nt == 1:
        team_chunks(T, 0)
        return
    p = T.phase + 1
    gt_store(&T.phase, p)  # publishes the task's arguments written before it
    team_chunks(T, 0)
    for w in range(1, T.nt):
        spins = 0
        while gt_load(&T.done[w]) != p:
            gt_relax(&spins)
        if spins >= T.patience:
            T.late += 1
    T.tasks += 1
    if T.tasks >= LATE_WINDOW and T.late * LATE_SHARE > T.tasks:
        # the others' cores are taken by other work (each late task cost a time slice
        # of the scheduler): the first thread goes on alone, with the same chunks
        gt_store(&T.phase, -1)
        T.nt = 1
        T.gave_up = True


cdef inline void team_update(Team* T, double d1, const double* row1, double d2,
                             const double* row2, bint select) noexcept nogil:
    # g += d1 row1 + d2 row2 (row2 may be NULL), then the selection scan if ``select``
    T.d1 = d1
    T.row1 = row1
    T.d2 = d2
    T.row2 = row2
    T.select = select
    team_run(T, UPDATE)


cdef inline void team_work(Team* T, int tid) noexcept nogil:
    # a thread other than the first: run each posted task on its chunks until the end
    cdef long seen = 0, p
    cdef int spins
    while True:
        spins = 0
        p = gt_load(&T.phase)
        while p == seen:
            gt_relax(&spins)
            p = gt_load(&T.phase)
        if p < 0:
            return
        seen = p
        team_chunks(T, tid)
        gt_store(&T.done[tid], p)


cdef inline void merge_select(const Chunks* out, Py_ssize_t n_chunks, double* vmax,
                             Py_ssize_t* best, double* best_score, Py_ssize_t* cached,
                             double* cached_score) noexcept nogil:
    # the largest score, and among equal scores the first position (chunk order)
    cdef Py_ssize_t k
    vmax[0] = 0.0
    best[0] = -1
    best_score[0] = 0.0
    cached[0] = -1
    cached_score[0] = 0.0
    for k in range(n_chunks):
        if out.vmax[k] > vmax[0]:
            vmax[0] = out.vmax[k]
        if out.best[k] >= 0 and out.best_score[k] > best_score[0]:
            best[0] = out.best[k]
            best_score[0] = out.best_score[k]
        if out.cached[k] >= 0 and out.cached_score[k] > cached_score[0]:
            cached[0] = out.cached[k]
            cached_score[0] = out.cached_score[k]


cdef inline void merge_partner(const Chunks* out, Py_ssize_t n_chunks,
                              Py_ssize_t* partner, double* b2, double* c,
                              Py_ssize_t* cached, double* cached_b2,
                              double* cached_c) noexcept nogil:
    # the largest second-order gain, and among equal gains the first position
    cdef Py_ssize_t k
    partner[0] = -1
    b2[0] = 0.0
    c[0] = 1.0
    cached[0] = -1
    cached_b2[0] = 0.0
    cached_c[0] = 1.0
    for k in range(n_chunks):
        if out.partner[k] >= 0 and (partner[0] < 0 or gs_gain_beats(
                out.b2[k], out.c[k], out.partner[k], b2[0], c[0], partner[0])):
            partner[0] = out.partner[k]
            b2[0] = out.b2[k]
            c[0] = out.c[k]
        if out.cached_partner[k] >= 0 and (cached[0] < 0 or gs_gain_beats(
                out.cached_b2[k], out.cached_c[k], out.cached_partner[k], cached_b2[0],
                cached_c[0], cached[0])):
            cached[0] = out.cached_partner[k]
            cached_b2[0] = out.cached_b2[k]
            cached_c[0] = out.cached_c[k]
