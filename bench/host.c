/* The benchmark host: runs the same workload on both contenders (bench.h), in one
 * process, interleaved in blocks (A B A B …), and prints one JSON line.
 *
 *   host perf --fixture PATH [--first ours|floor] [--startup-ms 50] [options]
 *       connect 1 server and --many servers (timed, alternating, median of the reps), in two
 *       variants: `instant` (the fixture as is: it answers initialize at once) and `startup`
 *       (the fixture run with --init-delay-ms N, N = --startup-ms: a server that takes N ms
 *       to start, as real ones do; --startup-ms 0 skips this variant),
 *       sequential echo latency (blocks of calls, alternating), throughput with
 *       groups×per_group host threads each doing blocking calls (alternating windows),
 *       elicitation round trip (blocks, alternating); client CPU per call for each.
 *   host rss --who ours|floor --servers N --fixture PATH [--calls 200] [--asks 5]
 *       connect N servers, a few echo calls and elicitations, print the peak RSS
 *       (getrusage ru_maxrss) of this process while still connected. With other --calls /
 *       --asks counts it doubles as a plain workload for valgrind/perf (bench/README.md).
 *
 * Built twice by scripts/bench: build/bench/host (both contenders; links libtoolnexus) and
 * build/bench/host-floor (-DFLOOR_ONLY: the floor alone, so its RSS does not include the
 * library's pages).
 */
#include "bench.h"
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <unistd.h>

const char *const *fixture_args = NULL;
int fixture_nargs = 0;

void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* user + system CPU of the whole process (all threads: the caller's and the client's), ns */
static uint64_t cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
         ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* nearest-rank percentile, in the samples' unit; sorts in place */
static double pct(uint64_t *v, size_t n, double p) {
  qsort(v, n, sizeof *v, cmp_u64);
  size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return (double)v[rank - 1];
}

/* ------------------------------------------------------------------ parameters */

typedef struct {
  const char *fixture, *first, *who;
  int many;                    /* the "50" */
  int connect1_reps, connectN_reps;
  int startup_ms, startup1_reps, startupN_reps; /* the connect `startup` variant */
  int seq_calls, seq_blocks, seq_warmup;
  int ask_calls, ask_blocks, ask_warmup;
  int conc_groups, conc_per_group, conc_windows, conc_warmup_ms, conc_ms;
  int servers, rss_calls, rss_asks;
} params;

static void parse(int argc, char **argv, params *p) {
  *p = (params){.first = "ours", .who = "ours", .many = 50, .connect1_reps = 7,
                .connectN_reps = 3, .startup_ms = 50, .startup1_reps = 3,
                .startupN_reps = 3, .seq_calls = 5000, .seq_blocks = 10, .seq_warmup = 300,
                .ask_calls = 1000, .ask_blocks = 10, .ask_warmup = 50, .conc_groups = 4,
                .conc_per_group = 4, .conc_windows = 4, .conc_warmup_ms = 30, .conc_ms = 150,
                .servers = 1, .rss_calls = 200, .rss_asks = 5};
  for (int i = 2; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) die("%s needs a value", a);
    if (!strcmp(a, "--fixture")) p->fixture = v;
    else if (!strcmp(a, "--first")) p->first = v;
    else if (!strcmp(a, "--who")) p->who = v;
    else if (!strcmp(a, "--many")) p->many = atoi(v);
    else if (!strcmp(a, "--servers")) p->servers = atoi(v);
    else if (!strcmp(a, "--calls")) p->rss_calls = atoi(v);
    else if (!strcmp(a, "--asks")) p->rss_asks = atoi(v);
    else if (!strcmp(a, "--seq")) p->seq_calls = atoi(v);
    else if (!strcmp(a, "--ask")) p->ask_calls = atoi(v);
    else if (!strcmp(a, "--conc-ms")) p->conc_ms = atoi(v);
    else if (!strcmp(a, "--connect1-reps")) p->connect1_reps = atoi(v);
    else if (!strcmp(a, "--connectN-reps")) p->connectN_reps = atoi(v);
    else if (!strcmp(a, "--startup-ms")) p->startup_ms = atoi(v);
    else if (!strcmp(a, "--startup1-reps")) p->startup1_reps = atoi(v);
    else if (!strcmp(a, "--startupN-reps")) p->startupN_reps = atoi(v);
    else die("unknown option %s", a);
  }
  if (!p->fixture || access(p->fixture, X_OK) != 0) die("--fixture PATH (executable) is required");
  if (p->startup_ms < 0 || p->startup1_reps < 1 || p->startupN_reps < 1 || p->connect1_reps < 1 ||
      p->connectN_reps < 1)
    die("--startup-ms must be >= 0 and the connect reps >= 1");
  if (p->seq_calls % p->seq_blocks || p->ask_calls % p->ask_blocks)
    die("--seq and --ask must be multiples of 10");
}

#ifdef FLOOR_ONLY
const client_ops ours_ops = {0}; /* not in this binary; main() refuses perf and rss --who ours */
#endif

static const client_ops *ops_named(const char *name) {
  if (!strcmp(name, "floor")) return &floor_ops;
#ifndef FLOOR_ONLY
  if (!strcmp(name, "ours")) return &ours_ops;
#endif
  die("no contender named %s in this binary", name);
}

/* ------------------------------------------------------------------ one contender's figures */

typedef struct {
  const client_ops *ops;
  void *h;                            /* its 1-server connection for the call tests */
  uint64_t *c1, *cN;                  /* connect times, ns: instant fixture */
  uint64_t *s1, *sN;                  /* connect times, ns: fixture with --init-delay-ms */
  uint64_t *seq, seq_cpu;             /* per-call latencies, ns; CPU over all of them */
  uint64_t *ask, ask_cpu;
  unsigned long conc_calls;
  uint64_t conc_ns, conc_cpu;
} contender;

static uint64_t time_connect(contender *c, const char *fixture, int n) {
  uint64_t a = now_ns();
  void *h = c->ops->connect(fixture, n);
  uint64_t b = now_ns();
  c->ops->check(h, n);
  c->ops->disconnect(h);
  return b - a;
}

/* n timed calls of fn, latencies appended at *lat, CPU added to *cpu */
static void timed_calls(contender *c, int (*fn)(void *), int n, uint64_t *lat, uint64_t *cpu) {
  uint64_t cpu0 = cpu_ns();
  for (int i = 0; i < n; i++) {
    uint64_t a = now_ns();
    if (fn(c->h) != 0) die("%s: call failed", c->ops->name);
    lat[i] = now_ns() - a;
  }
  *cpu += cpu_ns() - cpu0;
}

/* ------------------------------------------------------------------ throughput */

typedef struct {
  _Alignas(64) atomic_ulong done;
  contender *c;
  pthread_barrier_t *start;
  atomic_int *stop, *failed;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  pthread_barrier_wait(w->start);
  while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
    if (w->c->ops->echo(w->c->h) != 0) {
      atomic_store(w->failed, 1);
      break;
    }
    atomic_fetch_add_explicit(&w->done, 1, memory_order_relaxed);
  }
  return NULL;
}

static unsigned long done_sum(worker *w, int n) {
  unsigned long s = 0;
  for (int i = 0; i < n; i++) s += atomic_load_explicit(&w[i].done, memory_order_relaxed);
  return s;
}

/* One window: groups×per_group threads each loop a blocking echo call on the same server, so
 * that many calls are in flight. Counted over conc_ms after a warm-up, sampled here. */
static void conc_window(contender *c, const params *p) {
  int n = p->conc_groups * p->conc_per_group;
  worker *w = aligned_alloc(64, sizeof(worker) * (size_t)n);
  pthread_t *t = calloc((size_t)n, sizeof *t);
  pthread_barrier_t start;
  atomic_int stop = 0, failed = 0;
  pthread_barrier_init(&start, NULL, (unsigned)n + 1);
  for (int i = 0; i < n; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].c = c;
    w[i].start = &start;
    w[i].stop = &stop;
    w[i].failed = &failed;
    if (pthread_create(&t[i], NULL, work, &w[i])) die("pthread_create");
  }
  pthread_barrier_wait(&start);
  sleep_ms((unsigned)p->conc_warmup_ms);
  unsigned long k0 = done_sum(w, n);
  uint64_t t0 = now_ns(), cpu0 = cpu_ns();
  sleep_ms((unsigned)p->conc_ms);
  unsigned long k1 = done_sum(w, n);
  uint64_t t1 = now_ns(), cpu1 = cpu_ns();
  atomic_store(&stop, 1);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  if (atomic_load(&failed)) die("%s: a call failed in the throughput test", c->ops->name);
  pthread_barrier_destroy(&start);
  c->conc_calls += k1 - k0;
  c->conc_ns += t1 - t0;
  c->conc_cpu += cpu1 - cpu0;
  free(w);
  free(t);
}

/* ------------------------------------------------------------------ perf */

static void print_figures(const char *key, contender *c, const params *p) {
  int ns = p->seq_calls, na = p->ask_calls;
  double c1 = pct(c->c1, (size_t)p->connect1_reps, 50) / 1e6;
  double cN = pct(c->cN, (size_t)p->connectN_reps, 50) / 1e6;
  double sq50 = pct(c->seq, (size_t)ns, 50) / 1e3, sq99 = pct(c->seq, (size_t)ns, 99) / 1e3;
  double ak50 = pct(c->ask, (size_t)na, 50) / 1e3, ak99 = pct(c->ask, (size_t)na, 99) / 1e3;
  printf("\"%s\":{\"connect1_ms\":%.3f,\"connect%d_ms\":%.3f,\"seq_p50_us\":%.2f,"
         "\"seq_p99_us\":%.2f,\"seq_cpu_us_per_call\":%.2f,\"conc_calls_per_s\":%.0f,"
         "\"conc_cpu_us_per_call\":%.2f,\"ask_p50_us\":%.2f,\"ask_p99_us\":%.2f,"
         "\"ask_cpu_us_per_call\":%.2f",
         key, c1, p->many, cN, sq50, sq99, (double)c->seq_cpu / 1e3 / ns,
         (double)c->conc_calls / ((double)c->conc_ns / 1e9),
         c->conc_calls ? (double)c->conc_cpu / 1e3 / (double)c->conc_calls : 0, ak50, ak99,
         (double)c->ask_cpu / 1e3 / na);
  if (p->startup_ms > 0)
    printf(",\"connect1_startup_ms\":%.3f,\"connect%d_startup_ms\":%.3f}",
           pct(c->s1, (size_t)p->startup1_reps, 50) / 1e6, p->many,
           pct(c->sN, (size_t)p->startupN_reps, 50) / 1e6);
  else
    putchar('}');
}

__attribute__((unused)) static void perf(const params *p) {
  contender cs[2] = {{.ops = &ours_ops}, {.ops = &floor_ops}};
  int first = strcmp(p->first, "floor") == 0; /* index of the contender that goes first */
  contender *ord[2] = {&cs[first], &cs[1 - first]};
  for (int k = 0; k < 2; k++) {
    contender *c = &cs[k];
    c->c1 = calloc((size_t)p->connect1_reps, 8);
    c->cN = calloc((size_t)p->connectN_reps, 8);
    c->s1 = calloc((size_t)p->startup1_reps, 8);
    c->sN = calloc((size_t)p->startupN_reps, 8);
    c->seq = calloc((size_t)p->seq_calls, 8);
    c->ask = calloc((size_t)p->ask_calls, 8);
  }

  /* untimed warm-up of each: first threads, first spawns, lazy binding, malloc arenas */
  for (int k = 0; k < 2; k++) ord[k]->ops->disconnect(ord[k]->ops->connect(p->fixture, 1));

  /* connect, instant fixture: A B A B … */
  for (int i = 0; i < p->connect1_reps; i++)
    for (int k = 0; k < 2; k++) ord[k]->c1[i] = time_connect(ord[k], p->fixture, 1);
  for (int i = 0; i < p->connectN_reps; i++)
    for (int k = 0; k < 2; k++) ord[k]->cN[i] = time_connect(ord[k], p->fixture, p->many);

  /* connect, servers that take startup_ms to answer initialize: A B A B … */
  if (p->startup_ms > 0) {
    char delay[16];
    snprintf(delay, sizeof delay, "%d", p->startup_ms);
    const char *const args[] = {"--init-delay-ms", delay};
    fixture_args = args;
    fixture_nargs = 2;
    for (int i = 0; i < p->startup1_reps; i++)
      for (int k = 0; k < 2; k++) ord[k]->s1[i] = time_connect(ord[k], p->fixture, 1);
    for (int i = 0; i < p->startupN_reps; i++)
      for (int k = 0; k < 2; k++) ord[k]->sN[i] = time_connect(ord[k], p->fixture, p->many);
    fixture_args = NULL;
    fixture_nargs = 0;
  }

  /* the call tests run on one connected server per contender (the other one sits idle) */
  for (int k = 0; k < 2; k++) {
    contender *c = ord[k];
    c->h = c->ops->connect(p->fixture, 1);
    c->ops->check(c->h, 1);
  }

  /* sequential echo: warm-up, then blocks alternating A B A B … */
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < p->seq_warmup; i++)
      if (ord[k]->ops->echo(ord[k]->h)) die("%s: warm-up call failed", ord[k]->ops->name);
  int sb = p->seq_calls / p->seq_blocks;
  for (int b = 0; b < p->seq_blocks; b++)
    for (int k = 0; k < 2; k++)
      timed_calls(ord[k], ord[k]->ops->echo, sb, ord[k]->seq + b * sb, &ord[k]->seq_cpu);

  /* throughput: windows alternating A B A B … */
  for (int wdw = 0; wdw < p->conc_windows; wdw++)
    for (int k = 0; k < 2; k++) conc_window(ord[k], p);

  /* elicitation round trip: warm-up, then blocks alternating */
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < p->ask_warmup; i++)
      if (ord[k]->ops->ask(ord[k]->h)) die("%s: warm-up elicitation failed", ord[k]->ops->name);
  int ab = p->ask_calls / p->ask_blocks;
  for (int b = 0; b < p->ask_blocks; b++)
    for (int k = 0; k < 2; k++)
      timed_calls(ord[k], ord[k]->ops->ask, ab, ord[k]->ask + b * ab, &ord[k]->ask_cpu);

  for (int k = 0; k < 2; k++) ord[k]->ops->disconnect(ord[k]->h);

  printf("{\"mode\":\"perf\",\"first\":\"%s\",\"seq_calls\":%d,\"ask_calls\":%d,"
         "\"conc_in_flight\":%d,\"conc_window_ms\":%d,\"startup_ms\":%d,",
         ord[0]->ops->name, p->seq_calls, p->ask_calls, p->conc_groups * p->conc_per_group,
         p->conc_windows * p->conc_ms, p->startup_ms);
  print_figures("ours", &cs[0], p);
  putchar(',');
  print_figures("floor", &cs[1], p);
  printf("}\n");
}

/* ------------------------------------------------------------------ rss */

static void rss(const params *p) {
  const client_ops *o = ops_named(p->who);
  void *h = o->connect(p->fixture, p->servers);
  o->check(h, p->servers);
  for (int i = 0; i < p->rss_calls; i++)
    if (o->echo(h)) die("%s: echo failed", o->name);
  for (int i = 0; i < p->rss_asks; i++)
    if (o->ask(h)) die("%s: elicitation failed", o->name);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru); /* still connected: ru_maxrss is the peak so far, KiB */
  o->disconnect(h);
  printf("{\"mode\":\"rss\",\"who\":\"%s\",\"servers\":%d,\"rss_kb\":%ld}\n", o->name,
         p->servers, ru.ru_maxrss);
}

int main(int argc, char **argv) {
  /* The floor needs SIGPIPE ignored (a dead child is then a write error); toolnexus handles
   * it itself. Setting it for the whole process changes nothing for the library. */
  signal(SIGPIPE, SIG_IGN);
  if (argc < 2) die("usage: host perf|rss --fixture PATH [options] (see bench/README.md)");
  params p;
  parse(argc, argv, &p);
  if (!strcmp(argv[1], "perf")) {
#ifdef FLOOR_ONLY
    die("this binary has only the floor; perf needs build/bench/host");
#else
    perf(&p);
#endif
  } else if (!strcmp(argv[1], "rss")) {
    rss(&p);
  } else {
    die("unknown mode %s", argv[1]);
  }
  return 0;
}
