/* The CPU backend's worker pool: a kernel whose wf_kernel.cpu_grain is set runs its range
 * [0, n) in pieces, on the stream's own thread and on the pool's threads at once.
 *
 * One pool serves every CPU device and stream of the process (the CPU devices share the
 * machine's cores, so a pool each would only oversubscribe them). The thread that launches a
 * piecewise kernel (a stream's worker, or a graph replay on it) posts a job, runs pieces itself
 * and waits until every thread that took part has left the job: it never waits for a pool thread
 * to wake up, so a launch costs no more than the one-piece call when the pool is busy or asleep.
 * Pieces are claimed with one atomic counter; which thread runs which piece changes from run to
 * run, and that is why only kernels whose elements are independent (as on a GPU) opt in: their
 * result does not depend on it. A one-launch frame (a kernel of cpu_grain 0 whose stages need
 * each other's results) splits each stage the same way through wf_cpu_parallel_for.
 *
 * The hand-over is what a stage of a few tens of microseconds pays, thousands of times a frame
 * (an XPBD colour), so neither side sleeps while the other is about to answer: a pool thread
 * that ran out of work spins for a short while (a substep launches its kernels back to back)
 * before it sleeps on a condition variable, and the launcher, its own pieces done, spins on the
 * job's user count (atomic) while the others finish theirs, and sleeps only after that long.
 * Both spins yield the core every few microseconds, for the machine's other threads. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "gpu_internal.h"

typedef struct pool_job {
  void (*fn)(const void *, size_t, size_t);
  const void *args;
  size_t n, piece;       /* elements, and elements a piece (the last one may be shorter) */
  uint32_t pieces;       /* ceil(n / piece) */
  _Atomic uint32_t next; /* the next piece to claim */
  _Atomic int users;     /* pool threads inside the job (they join under the pool's lock) */
  struct pool_job *link;
} pool_job;

static struct {
  pthread_mutex_t m;
  pthread_cond_t work, left; /* a job was posted; a pool thread left a job */
  pool_job *jobs;            /* open jobs, newest first */
  _Atomic uint64_t posted;   /* jobs posted so far: what spinning threads watch */
  int sleepers;              /* pool threads waiting on `work` */
  int leavers;               /* launchers waiting on `left` */
  int threads;               /* pool threads (the launching thread makes one more) */
  bool up, stop;
  pthread_t *th;
} P = {.m = PTHREAD_MUTEX_INITIALIZER,
       .work = PTHREAD_COND_INITIALIZER,
       .left = PTHREAD_COND_INITIALIZER};

#define SPIN_NS 50000L /* how long either side spins before it sleeps */

static long ns_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

static void run_pieces(pool_job *j) {
  uint32_t k;
  while ((k = atomic_fetch_add_explicit(&j->next, 1u, memory_order_relaxed)) < j->pieces) {
    size_t b = (size_t)k * j->piece, e = b + j->piece;
    j->fn(j->args, b, e < j->n ? e : j->n);
  }
}

/* The oldest open job with pieces left, under the lock. */
static pool_job *open_job(void) {
  pool_job *found = NULL;
  for (pool_job *j = P.jobs; j; j = j->link)
    if (atomic_load_explicit(&j->next, memory_order_relaxed) < j->pieces) found = j;
  return found;
}

static void *pool_thread(void *arg) {
  (void)arg;
  uint64_t seen = 0;
  pthread_mutex_lock(&P.m);
  for (;;) {
    pool_job *j = open_job();
    if (!j) {
      if (P.stop) break;
      /* spin about 50 us for the next kernel of the substep before going to sleep */
      seen = atomic_load_explicit(&P.posted, memory_order_relaxed);
      pthread_mutex_unlock(&P.m);
      struct timespec t0;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      for (int i = 0;; i++) {
        if (atomic_load_explicit(&P.posted, memory_order_relaxed) != seen) break;
        if ((i & 63) == 63) {
          if (ns_since(&t0) > SPIN_NS) break;
          sched_yield();
        }
      }
      pthread_mutex_lock(&P.m);
      if (!open_job() && !P.stop && atomic_load(&P.posted) == seen) {
        P.sleepers++;
        pthread_cond_wait(&P.work, &P.m);
        P.sleepers--;
      }
      continue;
    }
    atomic_fetch_add_explicit(&j->users, 1, memory_order_relaxed);
    pthread_mutex_unlock(&P.m);
    run_pieces(j);
    pthread_mutex_lock(&P.m);
    /* the last access to j: its launcher may return as soon as it reads 0 */
    if (atomic_fetch_sub_explicit(&j->users, 1, memory_order_release) == 1 && P.leavers)
      pthread_cond_broadcast(&P.left);
  }
  pthread_mutex_unlock(&P.m);
  return NULL;
}

/* The threads the process may run on (its CPU affinity), at least 1. */
static int usable_cores(void) {
#ifdef CPU_COUNT
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

int wf__cpu_pool_threads(void) {
  const wf_init_desc *d = wf__init_desc();
  int want = d && d->cpu_threads > 0 ? d->cpu_threads : usable_cores();
  return want > WF_MAX_CPU_THREADS ? WF_MAX_CPU_THREADS : want;
}

/* Starts the pool on first use, under the lock: threads - 1 pool threads. False when it has
 * none (one thread wanted, or none could be started: pieces then run on the launching thread). */
static bool pool_up(void) {
  if (P.up) return P.threads > 0;
  P.up = true;
  P.stop = false;
  int want = wf__cpu_pool_threads() - 1;
  P.th = want > 0 ? calloc((size_t)want, sizeof *P.th) : NULL;
  P.threads = 0;
  for (int i = 0; P.th && i < want; i++) {
    if (pthread_create(&P.th[P.threads], NULL, pool_thread, NULL) != 0) break;
    P.threads++;
  }
  if (want > 0 && P.threads < want)
    wf__log(WF_LOG_WARN, "cpu backend: started %d of %d worker threads", P.threads, want);
  return P.threads > 0;
}

void wf__cpu_pool_run(void (*fn)(const void *, size_t, size_t), const void *args, size_t n,
                      size_t grain) {
  if (grain == 0 || n < 2 * grain) {
    fn(args, 0, n);
    return;
  }
  pthread_mutex_lock(&P.m);
  if (!pool_up()) {
    pthread_mutex_unlock(&P.m);
    fn(args, 0, n);
    return;
  }
  /* about four pieces a thread, for balance, none smaller than the grain, and a multiple of the
     threads where there are more pieces than threads: 5 pieces on 2 threads end with one
     thread idle for a fifth of the kernel (an XPBD colour of 367 constraints), 4 do not */
  size_t T = (size_t)P.threads + 1, want = T * 4u, by_grain = n / grain;
  size_t pieces = want < by_grain ? want : by_grain;
  if (pieces > T) pieces -= pieces % T;
  pool_job j = {.fn = fn, .args = args, .n = n};
  j.piece = (n + pieces - 1) / pieces;
  j.pieces = (uint32_t)((n + j.piece - 1) / j.piece);
  atomic_init(&j.next, 0u);
  atomic_init(&j.users, 0);
  j.link = P.jobs;
  P.jobs = &j;
  atomic_fetch_add_explicit(&P.posted, 1u, memory_order_relaxed);
  if (P.sleepers) pthread_cond_broadcast(&P.work);
  pthread_mutex_unlock(&P.m);
  run_pieces(&j);
  /* every piece is claimed: wait for the pool threads still in one, spinning first. A thread
     joins only under the lock while the job is listed, so 0 read under the lock stays 0. */
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; atomic_load_explicit(&j.users, memory_order_acquire) > 0; i++)
    if ((i & 63) == 63) {
      if (ns_since(&t0) > SPIN_NS) break;
      sched_yield();
    }
  pthread_mutex_lock(&P.m);
  while (atomic_load_explicit(&j.users, memory_order_acquire) > 0) {
    P.leavers++;
    pthread_cond_wait(&P.left, &P.m);
    P.leavers--;
  }
  pool_job **p = &P.jobs;
  while (*p != &j)
    p = &(*p)->link;
  *p = j.link;
  pthread_mutex_unlock(&P.m);
}

void wf__cpu_pool_stop(void) {
  pthread_mutex_lock(&P.m);
  if (!P.up) {
    pthread_mutex_unlock(&P.m);
    return;
  }
  P.stop = true;
  pthread_cond_broadcast(&P.work);
  int n = P.threads;
  pthread_t *th = P.th;
  pthread_mutex_unlock(&P.m);
  for (int i = 0; i < n; i++)
    pthread_join(th[i], NULL);
  free(th);
  pthread_mutex_lock(&P.m);
  P.th = NULL;
  P.threads = 0;
  P.up = false;
  P.stop = false;
  pthread_mutex_unlock(&P.m);
}

void wf_cpu_parallel_for(void (*fn)(const void *args, size_t begin, size_t end), const void *args,
                         size_t n, size_t grain) {
  wf__cpu_pool_run(fn, args, n, grain);
}
