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
 *       The connect phase also times each disconnect, the era probe (ours connecting with
 *       "protocol" auto vs legacy), and, given --floor-bin PATH (build/bench/host-floor), cold
 *       start: a fresh `host cold` / `host-floor cold` process each time. The throughput phase
 *       adds, for ours, windows of 16 tn_call_tool_async calls in flight from one thread.
 *       Then (unless --http 0) the HTTP leg: the fixture's HTTP mode, one server per
 *       contender, ours by URL and the hand-written floor_http.c: connect/disconnect,
 *       sequential echo, 16 in flight, elicitation (--http-seq, --http-ask calls). Then, given
 *       --https-cert FILE --https-key FILE --https-ca FILE (a server certificate for
 *       127.0.0.1, its key, the CA that signed it), the same again over HTTPS: the fixture with
 *       --tls-cert/--tls-key, ours with "tls":{"caFile":…}, floor_http.c on OpenSSL (this
 *       binary must be built with -DBENCH_TLS). Then (unless --fleet 0) the many-server leg,
 *       ours only: --fleet F HTTP fixtures started here (F processes in --http mode, one port
 *       each; default 100) and one config of F stdio servers s0..s{F-1} plus those F HTTP
 *       servers s{F}..s{2F-1}: connect of 1 stdio server vs the whole config (--fleet-reps
 *       each, alternating), and 16 host threads in blocking echo calls on s0 alone vs spread
 *       round-robin over all 2F servers (also over the F stdio ones, over one HTTP server, over
 *       the F HTTP ones), --fleet-windows windows of each, alternating; the connect of each
 *       half alone beside the whole; for reference the floor's client of F stdio servers, s0
 *       alone vs spread over the F (the same windows); then the connects again with every server
 *       (stdio and HTTP) started with --init-delay-ms N (--startup-ms).
 *   host cold --who ours|floor --fixture PATH
 *       connect one server, one echo call, disconnect, exit (timed from outside).
 *   host rss --who ours|floor --servers N --fixture PATH [--calls 200] [--asks 5]
 *            [--transport stdio|http] [--calls-each 0]
 *       connect N servers, a few echo calls and elicitations, print the peak RSS
 *       (getrusage ru_maxrss) of this process while still connected. With other --calls /
 *       --asks counts it doubles as a plain workload for valgrind/perf (bench/README.md).
 *       Ours only: --transport http connects N HTTP fixtures this process starts (other
 *       processes: their memory is not counted); --calls-each K adds K echo calls on each of
 *       the N servers before the measurement.
 *   host cycles --who ours|floor --servers N --fixture PATH [--cycles 10]
 *       connect N servers, check, disconnect, --cycles times: a connect workload for
 *       valgrind/perf (two runs with different --cycles cancel start-up, bench/README.md).
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
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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
  const char *fixture, *first, *who, *self, *floor_bin;
  int http;                    /* run the HTTP leg */
  const char *https_cert, *https_key; /* run the HTTPS leg (with https_ca_file) */
  int cold_reps, probe_reps, async_windows;
  int http_connect_reps, http_seq, http_ask;
  int many;                    /* the "50" */
  int connect1_reps, connectN_reps;
  int startup_ms, startup1_reps, startupN_reps; /* the connect `startup` variant */
  int seq_calls, seq_blocks, seq_warmup;
  int ask_calls, ask_blocks, ask_warmup;
  int conc_groups, conc_per_group, conc_windows, conc_warmup_ms, conc_ms;
  int servers, rss_calls, rss_asks, cycles;
  int fleet, fleet_reps, fleet_windows; /* the many-server leg: servers per transport (0: skip) */
  const char *transport;       /* rss: "stdio" or "http" (a fleet of HTTP fixtures) */
  int calls_each;              /* rss: echo calls on every server (ours only) */
} params;

static void parse(int argc, char **argv, params *p) {
  *p = (params){.first = "ours", .who = "ours", .many = 50, .connect1_reps = 7,
                .connectN_reps = 3, .startup_ms = 50, .startup1_reps = 3,
                .startupN_reps = 3, .seq_calls = 5000, .seq_blocks = 10, .seq_warmup = 300,
                .ask_calls = 1000, .ask_blocks = 10, .ask_warmup = 50, .conc_groups = 4,
                .conc_per_group = 4, .conc_windows = 4, .conc_warmup_ms = 30, .conc_ms = 150,
                .servers = 1, .rss_calls = 200, .rss_asks = 5, .cycles = 10, .http = 1, .cold_reps = 5,
                .probe_reps = 7, .async_windows = 4, .http_connect_reps = 7,
                .http_seq = 2000, .http_ask = 500, .fleet = 100, .fleet_reps = 3,
                .fleet_windows = 3, .transport = "stdio"};
  p->self = argv[0];
  for (int i = 2; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) die("%s needs a value", a);
    if (!strcmp(a, "--fixture")) p->fixture = v;
    else if (!strcmp(a, "--first")) p->first = v;
    else if (!strcmp(a, "--floor-bin")) p->floor_bin = v;
    else if (!strcmp(a, "--http")) p->http = atoi(v);
    else if (!strcmp(a, "--https-cert")) p->https_cert = v;
    else if (!strcmp(a, "--https-key")) p->https_key = v;
    else if (!strcmp(a, "--https-ca")) https_ca_file = v;
    else if (!strcmp(a, "--http-seq")) p->http_seq = atoi(v);
    else if (!strcmp(a, "--http-ask")) p->http_ask = atoi(v);
    else if (!strcmp(a, "--cold-reps")) p->cold_reps = atoi(v);
    else if (!strcmp(a, "--who")) p->who = v;
    else if (!strcmp(a, "--many")) p->many = atoi(v);
    else if (!strcmp(a, "--fleet")) p->fleet = atoi(v);
    else if (!strcmp(a, "--fleet-reps")) p->fleet_reps = atoi(v);
    else if (!strcmp(a, "--fleet-windows")) p->fleet_windows = atoi(v);
    else if (!strcmp(a, "--transport")) p->transport = v;
    else if (!strcmp(a, "--calls-each")) p->calls_each = atoi(v);
    else if (!strcmp(a, "--servers")) p->servers = atoi(v);
    else if (!strcmp(a, "--calls")) p->rss_calls = atoi(v);
    else if (!strcmp(a, "--asks")) p->rss_asks = atoi(v);
    else if (!strcmp(a, "--cycles")) p->cycles = atoi(v);
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
  if (p->fleet < 0 || p->fleet_reps < 1 || p->fleet_windows < 1 || p->calls_each < 0 ||
      p->servers < 1)
    die("--fleet must be >= 0, --fleet-reps, --fleet-windows and --servers >= 1, --calls-each >= 0");
  if (strcmp(p->transport, "stdio") && strcmp(p->transport, "http"))
    die("--transport stdio|http");
  if (!p->https_cert != !p->https_key || !p->https_cert != !https_ca_file)
    die("--https-cert, --https-key and --https-ca go together");
#ifndef BENCH_TLS
  if (p->https_cert) die("the HTTPS leg needs this binary built with -DBENCH_TLS (OpenSSL)");
#endif
  if (p->seq_calls % p->seq_blocks || p->ask_calls % p->ask_blocks || p->http_seq % 10 ||
      p->http_ask % 10)
    die("--seq and --ask must be multiples of 10");
}

#ifdef FLOOR_ONLY
/* perf and what only it uses are compiled out of this binary */
#pragma GCC diagnostic ignored "-Wunused-function"
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
  const char *target;                 /* what its connect gets: the fixture's path, or a URL */
  uint64_t *c1, *cN;                  /* connect times, ns: instant fixture */
  uint64_t *d1;                       /* disconnect times after the c1 connects, ns */
  uint64_t *pa, *pl;                  /* ours only: connect with "protocol" auto / legacy */
  uint64_t *cold;                     /* a fresh process: load, connect, one call, disconnect */
  double async_calls, async_ns, async_cpu_us; /* ours only: async windows */
  uint64_t *s1, *sN;                  /* connect times, ns: fixture with --init-delay-ms */
  uint64_t *seq, seq_cpu;             /* per-call latencies, ns; CPU over all of them */
  uint64_t *ask, ask_cpu;
  unsigned long conc_calls;
  uint64_t conc_ns, conc_cpu;
} contender;

/* connect time, ns; the disconnect's (check first, untimed) in *disc when non-NULL */
static uint64_t time_connect2(contender *c, const char *fixture, int n, uint64_t *disc) {
  uint64_t a = now_ns();
  void *h = c->ops->connect(fixture, n);
  uint64_t b = now_ns();
  c->ops->check(h, n);
  uint64_t d0 = now_ns();
  c->ops->disconnect(h);
  if (disc) *disc = now_ns() - d0;
  return b - a;
}

static uint64_t time_connect(contender *c, const char *fixture, int n) {
  return time_connect2(c, fixture, n, NULL);
}

/* wall time of one fresh process `bin cold --who WHO --fixture F`: exec, library load,
 * connect one server, one echo call, disconnect, exit */
static uint64_t time_cold(const char *bin, const char *who, const char *fixture) {
  char *argv[] = {(char *)bin, "cold", "--who", (char *)who, "--fixture", (char *)fixture, NULL};
  pid_t pid;
  uint64_t a = now_ns();
  if (posix_spawn(&pid, bin, NULL, NULL, argv, environ) != 0) die("spawn %s", bin);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  uint64_t b = now_ns();
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) die("%s cold failed", bin);
  return b - a;
}

/* the fixture in HTTP mode on 127.0.0.1 (port chosen by the kernel), HTTPS with cert and key
 * (both NULL: plain), with --init-delay-ms delay when delay is not NULL; its URL in url */
static pid_t start_http_fixture(const char *fixture, const char *cert, const char *key,
                                const char *delay, char *url, size_t cap) {
  int fds[2];
  if (pipe(fds) != 0) die("pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  char *argv[10] = {(char *)fixture, "--http", "127.0.0.1:0"};
  int argc = 3;
  if (cert) {
    argv[argc++] = "--tls-cert";
    argv[argc++] = (char *)cert;
    argv[argc++] = "--tls-key";
    argv[argc++] = (char *)key;
  }
  if (delay) {
    argv[argc++] = "--init-delay-ms";
    argv[argc++] = (char *)delay;
  }
  argv[argc] = NULL;
  pid_t pid;
  if (posix_spawn(&pid, fixture, &fa, NULL, argv, environ) != 0) die("spawn fixture --http");
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  char line[256];
  size_t n = 0;
  while (n < sizeof line - 1) {
    ssize_t k = read(fds[0], line + n, 1);
    if (k <= 0 || line[n] == '\n') break;
    n++;
  }
  line[n] = 0;
  close(fds[0]);
  if (sscanf(line, "listening on %255s", url) != 1 || strlen(url) >= cap)
    die("fixture --http%s said: %s", cert ? " --tls-cert …" : "", line);
  return pid;
}

/* n HTTP fixtures (plain, --init-delay-ms delay unless NULL), each its own process on a port of
 * its own, started one after another; stopped (SIGTERM, reaped) by fleet_stop */
typedef struct {
  int n;
  pid_t *pids;
  char **urls;
} fleet;

static void fleet_start(fleet *f, const char *fixture, int n, const char *delay) {
  f->n = n;
  f->pids = calloc((size_t)n, sizeof *f->pids);
  f->urls = calloc((size_t)n, sizeof *f->urls);
  if (!f->pids || !f->urls) die("out of memory");
  for (int i = 0; i < n; i++) {
    f->urls[i] = malloc(256);
    if (!f->urls[i]) die("out of memory");
    f->pids[i] = start_http_fixture(fixture, NULL, NULL, delay, f->urls[i], 256);
    for (int j = 0; j < i; j++)
      if (!strcmp(f->urls[i], f->urls[j])) die("two HTTP fixtures at %s", f->urls[i]);
  }
}

static void fleet_stop(fleet *f) {
  for (int i = 0; i < f->n; i++)
    if (kill(f->pids[i], SIGTERM) != 0) die("kill fixture %d: %s", (int)f->pids[i], strerror(errno));
  for (int i = 0; i < f->n; i++) {
    while (waitpid(f->pids[i], NULL, 0) < 0)
      if (errno != EINTR) die("waitpid fixture %d: %s", (int)f->pids[i], strerror(errno));
    free(f->urls[i]);
  }
  free(f->pids);
  free(f->urls);
  f->n = 0;
}

/* the number of threads of this process (/proc/self/status), -1 if unknown */
static int thread_count(void) {
  FILE *fp = fopen("/proc/self/status", "r");
  if (!fp) return -1;
  char line[256];
  int n = -1;
  while (fgets(line, sizeof line, fp))
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  fclose(fp);
  return n;
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

/* median of n ns samples, in ms (sorts in place) */
static double med_ms(uint64_t *v, int n) { return pct(v, (size_t)n, 50) / 1e6; }

/* ours: the MRTR ask's p50 (µs), measured in the same run as the legacy ask; < 0: not run */
static double mrtr_ask_p50_us = -1;

static void print_calls(contender *c, int ns, int na) {
  double sq50 = pct(c->seq, (size_t)ns, 50) / 1e3, sq99 = pct(c->seq, (size_t)ns, 99) / 1e3;
  double ak50 = pct(c->ask, (size_t)na, 50) / 1e3, ak99 = pct(c->ask, (size_t)na, 99) / 1e3;
  printf("\"seq_p50_us\":%.2f,\"seq_p99_us\":%.2f,\"seq_cpu_us_per_call\":%.2f,"
         "\"conc_calls_per_s\":%.0f,\"conc_cpu_us_per_call\":%.2f,\"ask_p50_us\":%.2f,"
         "\"ask_p99_us\":%.2f,\"ask_cpu_us_per_call\":%.2f",
         sq50, sq99, (double)c->seq_cpu / 1e3 / ns,
         (double)c->conc_calls / ((double)c->conc_ns / 1e9),
         c->conc_calls ? (double)c->conc_cpu / 1e3 / (double)c->conc_calls : 0, ak50, ak99,
         (double)c->ask_cpu / 1e3 / na);
  if (c->async_ns > 0)
    printf(",\"async_conc_calls_per_s\":%.0f,\"async_cpu_us_per_call\":%.2f",
           c->async_calls / (c->async_ns / 1e9), c->async_cpu_us);
}

static void print_figures(const char *key, contender *c, const params *p, int ours) {
  printf("\"%s\":{\"connect1_ms\":%.3f,\"connect%d_ms\":%.3f,\"disconnect1_ms\":%.3f,", key,
         med_ms(c->c1, p->connect1_reps), p->many, med_ms(c->cN, p->connectN_reps),
         med_ms(c->d1, p->connect1_reps));
  print_calls(c, p->seq_calls, p->ask_calls);
  if (ours)
    printf(",\"connect1_auto_ms\":%.3f,\"connect1_legacy_ms\":%.3f", med_ms(c->pa, p->probe_reps),
           med_ms(c->pl, p->probe_reps));
  if (ours && mrtr_ask_p50_us >= 0) printf(",\"mrtr_ask_p50_us\":%.2f", mrtr_ask_p50_us);
  if (p->floor_bin && p->cold_reps > 0)
    printf(",\"cold_start_ms\":%.3f", med_ms(c->cold, p->cold_reps));
  if (p->startup_ms > 0)
    printf(",\"connect1_startup_ms\":%.3f,\"connect%d_startup_ms\":%.3f}",
           med_ms(c->s1, p->startup1_reps), p->many, med_ms(c->sN, p->startupN_reps));
  else
    putchar('}');
}

static void alloc_calls(contender *c, int nseq, int nask) {
  c->seq = calloc((size_t)nseq, 8);
  c->ask = calloc((size_t)nask, 8);
}

/* the call tests on one connected server per contender (c->h), interleaved in blocks: nseq
 * sequential echo calls, the throughput windows (and, for ours when `async`, an async window
 * after each of its synchronous ones), nask elicitation round trips */
static void call_tests(contender *ord[2], const params *p, int nseq, int nask, int async) {
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < p->seq_warmup; i++)
      if (ord[k]->ops->echo(ord[k]->h)) die("%s: warm-up call failed", ord[k]->ops->name);
  int sb = nseq / p->seq_blocks;
  for (int b = 0; b < p->seq_blocks; b++)
    for (int k = 0; k < 2; k++)
      timed_calls(ord[k], ord[k]->ops->echo, sb, ord[k]->seq + b * sb, &ord[k]->seq_cpu);

  for (int wdw = 0; wdw < p->conc_windows; wdw++)
    for (int k = 0; k < 2; k++) {
      contender *c = ord[k];
      conc_window(c, p);
#ifndef FLOOR_ONLY
      if (async && c->ops == &ours_ops && wdw < p->async_windows) {
        int in_flight = p->conc_groups * p->conc_per_group;
        double cpu_us, rate = ours_async_window(c->h, in_flight, p->conc_ms, &cpu_us);
        c->async_calls += rate * p->conc_ms / 1e3;
        c->async_ns += p->conc_ms * 1e6;
        c->async_cpu_us += cpu_us / p->async_windows;
      }
#else
      (void)async;
#endif
    }

  for (int k = 0; k < 2; k++)
    for (int i = 0; i < p->ask_warmup; i++)
      if (ord[k]->ops->ask(ord[k]->h)) die("%s: warm-up elicitation failed", ord[k]->ops->name);
  int ab = nask / p->ask_blocks;
  for (int b = 0; b < p->ask_blocks; b++)
    for (int k = 0; k < 2; k++)
      timed_calls(ord[k], ord[k]->ops->ask, ab, ord[k]->ask + b * ab, &ord[k]->ask_cpu);
}

#ifndef FLOOR_ONLY
/* The HTTP leg (key "http"), or with cert and key the HTTPS leg (key "https"): the fixture in
 * HTTP(S) mode, one server process per contender; ours through a {"url":…} config (HTTPS:
 * with "tls":{"caFile":…}), the floor through floor_http.c. Connect + disconnect, then the
 * calls. */
__attribute__((unused)) static void http_leg(const params *p, int first, const char *key,
                                             const char *cert, const char *tls_key) {
  contender cs[2] = {{.ops = &ours_ops}, {.ops = &floor_http_ops}};
  contender *ord[2] = {&cs[first], &cs[1 - first]};
  char urls[2][256];
  pid_t pids[2];
  for (int k = 0; k < 2; k++) {
    pids[k] = start_http_fixture(p->fixture, cert, tls_key, NULL, urls[k], sizeof urls[k]);
    cs[k].target = urls[k];
    cs[k].c1 = calloc((size_t)p->http_connect_reps, 8);
    cs[k].d1 = calloc((size_t)p->http_connect_reps, 8);
    alloc_calls(&cs[k], p->http_seq, p->http_ask);
  }
  for (int k = 0; k < 2; k++) ord[k]->ops->disconnect(ord[k]->ops->connect(ord[k]->target, 1));
  for (int i = 0; i < p->http_connect_reps; i++)
    for (int k = 0; k < 2; k++)
      ord[k]->c1[i] = time_connect2(ord[k], ord[k]->target, 1, &ord[k]->d1[i]);
  for (int k = 0; k < 2; k++) {
    ord[k]->h = ord[k]->ops->connect(ord[k]->target, 1);
    ord[k]->ops->check(ord[k]->h, 1);
  }
  params q = *p;
  q.ask_warmup = 20;
  call_tests(ord, &q, p->http_seq, p->http_ask, 0);
  for (int k = 0; k < 2; k++) ord[k]->ops->disconnect(ord[k]->h);
  for (int k = 0; k < 2; k++) {
    kill(pids[k], SIGTERM);
    waitpid(pids[k], NULL, 0);
  }
  printf(",\"%s\":{\"seq_calls\":%d,\"ask_calls\":%d,", key, p->http_seq, p->http_ask);
  for (int k = 0; k < 2; k++) {
    contender *c = &cs[k];
    printf("%s\"%s\":{\"connect1_ms\":%.3f,\"disconnect1_ms\":%.3f,", k ? "," : "",
           k ? "floor" : "ours", med_ms(c->c1, p->http_connect_reps),
           med_ms(c->d1, p->http_connect_reps));
    print_calls(c, p->http_seq, p->http_ask);
    putchar('}');
  }
  putchar('}');
}

/* ---- the many-server leg (ours only): one config of p->fleet stdio servers s0..s{F-1} (the
 * fixture) and p->fleet HTTP servers s{F}..s{2F-1} (F fixture processes in --http mode, started
 * here, each on its own port) */

/* ours' connect of the whole fleet config, ns; its disconnect (check first, untimed) in *disc */
static uint64_t time_fleet_connect(const char *fixture, int nstdio, char *const *urls, int nurls,
                                   uint64_t *disc) {
  uint64_t a = now_ns();
  void *h = ours_connect_fleet(fixture, nstdio, urls, nurls);
  uint64_t b = now_ns();
  ours_ops.check(h, nstdio + nurls);
  uint64_t d0 = now_ns();
  ours_ops.disconnect(h);
  *disc = now_ns() - d0;
  return b - a;
}

typedef struct {
  _Alignas(64) atomic_ulong done;
  void *h;
  char *const *names; /* ours: the tools this thread calls, round-robin, starting at names[at] */
  int first, count, at; /* floor (names NULL): its servers first..first+count-1, from first+at */
  pthread_barrier_t *start;
  atomic_int *stop, *failed;
} fworker;

static void *fwork(void *arg) {
  fworker *w = arg;
  int i = w->at;
  pthread_barrier_wait(w->start);
  while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
    if ((w->names ? ours_echo_tool(w->h, w->names[i]) : floor_echo_on(w->h, w->first + i)) != 0) {
      atomic_store(w->failed, 1);
      break;
    }
    atomic_fetch_add_explicit(&w->done, 1, memory_order_relaxed);
    if (++i == w->count) i = 0;
  }
  return NULL;
}

typedef struct {
  const char *key; /* the raw JSON's calls_<key>_per_s */
  int first, count; /* the servers s{first}..s{first+count-1} */
  unsigned long calls;
  uint64_t ns, cpu;
} fleet_calls;

/* One window as conc_window's (groups×per_group threads in blocking echo calls, counted over
 * conc_ms after the warm-up), each thread calling the servers s{first}..s{first+count-1} in
 * turn (ours: by the tool names in names; the floor, names NULL: by index), thread t starting at
 * t·count/threads, so the calls are spread evenly over the servers */
static void fleet_window(void *h, char *const *names, fleet_calls *fc, const params *p) {
  int n = p->conc_groups * p->conc_per_group;
  fworker *w = aligned_alloc(64, sizeof(fworker) * (size_t)n);
  pthread_t *t = calloc((size_t)n, sizeof *t);
  if (!w || !t) die("out of memory");
  pthread_barrier_t start;
  atomic_int stop = 0, failed = 0;
  pthread_barrier_init(&start, NULL, (unsigned)n + 1);
  for (int i = 0; i < n; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].h = h;
    w[i].names = names ? names + fc->first : NULL;
    w[i].first = fc->first;
    w[i].count = fc->count;
    w[i].at = (int)((long)i * fc->count / n);
    w[i].start = &start;
    w[i].stop = &stop;
    w[i].failed = &failed;
    if (pthread_create(&t[i], NULL, fwork, &w[i])) die("pthread_create");
  }
  pthread_barrier_wait(&start);
  sleep_ms((unsigned)p->conc_warmup_ms);
  unsigned long k0 = 0, k1 = 0;
  for (int i = 0; i < n; i++) k0 += atomic_load_explicit(&w[i].done, memory_order_relaxed);
  uint64_t t0 = now_ns(), cpu0 = cpu_ns();
  sleep_ms((unsigned)p->conc_ms);
  for (int i = 0; i < n; i++) k1 += atomic_load_explicit(&w[i].done, memory_order_relaxed);
  uint64_t t1 = now_ns(), cpu1 = cpu_ns();
  atomic_store(&stop, 1);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  if (atomic_load(&failed)) die("ours: a call failed in the many-server throughput test (%s)", fc->key);
  pthread_barrier_destroy(&start);
  fc->calls += k1 - k0;
  fc->ns += t1 - t0;
  fc->cpu += cpu1 - cpu0;
  free(w);
  free(t);
}

__attribute__((unused)) static void many_leg(const params *p, int first) {
  int n = p->fleet, all = 2 * n, reps = p->fleet_reps;
  contender o = {.ops = &ours_ops};
  uint64_t *c1 = calloc((size_t)reps, 8), *cM = calloc((size_t)reps, 8),
           *dM = calloc((size_t)reps, 8), *s1 = calloc((size_t)reps, 8),
           *sM = calloc((size_t)reps, 8), *sd = calloc((size_t)reps, 8);
  char **names = calloc((size_t)all, sizeof *names);
  if (!c1 || !cM || !dM || !s1 || !sM || !sd || !names) die("out of memory");
  for (int i = 0; i < all; i++) {
    names[i] = malloc(24);
    if (!names[i]) die("out of memory");
    snprintf(names[i], 24, "s%d_echo", i);
  }
  fleet f;
  uint64_t t_start = now_ns();
  fleet_start(&f, p->fixture, n, NULL);
  double fleet_start_ms = (double)(now_ns() - t_start) / 1e6;

  /* connect: 1 stdio server, then the whole config, alternating (an untimed one of each first) */
  uint64_t ignore;
  time_connect(&o, p->fixture, 1);
  time_fleet_connect(p->fixture, n, f.urls, n, &ignore);
  uint64_t *cS = calloc((size_t)reps, 8), *cH = calloc((size_t)reps, 8);
  if (!cS || !cH) die("out of memory");
  for (int i = 0; i < reps; i++) {
    c1[i] = time_connect(&o, p->fixture, 1);
    cM[i] = time_fleet_connect(p->fixture, n, f.urls, n, &dM[i]);
    /* the two halves alone: which part of the whole costs what */
    cS[i] = time_fleet_connect(p->fixture, n, f.urls, 0, &ignore);
    cH[i] = time_fleet_connect(p->fixture, 0, f.urls, n, &ignore);
  }

  /* calls: 16 host threads on one stdio server (s0) and spread over all 2n servers of the same
   * connected client, alternating windows; also over the n stdio servers alone, the one HTTP
   * server s{n}, and the n HTTP servers alone (which part of the spread costs what) */
  int threads0 = thread_count();
  void *h = ours_connect_fleet(p->fixture, n, f.urls, n);
  ours_ops.check(h, all);
  int threads_all = thread_count();
  for (int i = 0; i < all; i++)
    for (int k = 0; k < 2; k++)
      if (ours_echo_tool(h, names[i])) die("ours: warm-up call %s failed", names[i]);
  fleet_calls fc[5] = {{.key = "one", .first = 0, .count = 1},
                       {.key = "all", .first = 0, .count = all},
                       {.key = "stdio", .first = 0, .count = n},
                       {.key = "http1", .first = n, .count = 1},
                       {.key = "http", .first = n, .count = n}};
  for (int wdw = 0; wdw < p->fleet_windows; wdw++)
    for (int k = 0; k < 5; k++) {
      int j = first ? 4 - k : k; /* the order alternates with --first, as the other legs' */
      fleet_window(h, names, &fc[j], p);
    }
  int threads_calls = thread_count();
  ours_ops.disconnect(h);
  fleet_stop(&f);

  /* the floor's reference for the stdio part: its client of n stdio servers, 16 threads on s0
   * alone and spread over all n, alternating windows (is the cost of spreading the library's?) */
  fleet_calls ff[2] = {{.key = "one", .first = 0, .count = 1},
                       {.key = "stdio", .first = 0, .count = n}};
  {
    void *fh = floor_ops.connect(p->fixture, n);
    floor_ops.check(fh, n);
    for (int i = 0; i < n; i++)
      for (int k = 0; k < 2; k++)
        if (floor_echo_on(fh, i)) die("floor: warm-up call on s%d failed", i);
    for (int wdw = 0; wdw < p->fleet_windows; wdw++)
      for (int k = 0; k < 2; k++) fleet_window(fh, NULL, &ff[first ? 1 - k : k], p);
    floor_ops.disconnect(fh);
  }

  /* connect, servers that take startup_ms to answer initialize (stdio and HTTP alike) */
  if (p->startup_ms > 0) {
    char delay[16];
    snprintf(delay, sizeof delay, "%d", p->startup_ms);
    fleet_start(&f, p->fixture, n, delay);
    const char *const args[] = {"--init-delay-ms", delay};
    fixture_args = args;
    fixture_nargs = 2;
    for (int i = 0; i < reps; i++) {
      s1[i] = time_connect(&o, p->fixture, 1);
      sM[i] = time_fleet_connect(p->fixture, n, f.urls, n, &sd[i]);
    }
    fixture_args = NULL;
    fixture_nargs = 0;
    fleet_stop(&f);
  }

  printf(",\"many\":{\"servers_stdio\":%d,\"servers_http\":%d,\"reps\":%d,\"windows\":%d,"
         "\"fleet_start_ms\":%.1f,\"threads_before\":%d,\"threads_connected\":%d,"
         "\"threads_after_calls\":%d,\"connect1_ms\":%.3f,\"connect_all_ms\":%.3f,"
         "\"disconnect_all_ms\":%.3f",
         n, n, reps, p->fleet_windows, fleet_start_ms, threads0, threads_all, threads_calls,
         med_ms(c1, reps), med_ms(cM, reps), med_ms(dM, reps));
  printf(",\"connect_stdio_ms\":%.3f,\"connect_http_ms\":%.3f", med_ms(cS, reps), med_ms(cH, reps));
  if (p->startup_ms > 0)
    printf(",\"connect1_startup_ms\":%.3f,\"connect_all_startup_ms\":%.3f", med_ms(s1, reps),
           med_ms(sM, reps));
  for (int j = 0; j < 5; j++)
    printf(",\"calls_%s_per_s\":%.0f,\"calls_%s_cpu_us_per_call\":%.2f", fc[j].key,
           (double)fc[j].calls / ((double)fc[j].ns / 1e9), fc[j].key,
           fc[j].calls ? (double)fc[j].cpu / 1e3 / (double)fc[j].calls : 0);
  for (int j = 0; j < 2; j++)
    printf(",\"floor_calls_%s_per_s\":%.0f,\"floor_calls_%s_cpu_us_per_call\":%.2f", ff[j].key,
           (double)ff[j].calls / ((double)ff[j].ns / 1e9), ff[j].key,
           ff[j].calls ? (double)ff[j].cpu / 1e3 / (double)ff[j].calls : 0);
  putchar('}');
  for (int i = 0; i < all; i++) free(names[i]);
  free(names);
  free(c1), free(cM), free(dM), free(s1), free(sM), free(sd), free(cS), free(cH);
}

__attribute__((unused)) static void perf(const params *p) {
  contender cs[2] = {{.ops = &ours_ops}, {.ops = &floor_ops}};
  int first = strcmp(p->first, "floor") == 0; /* index of the contender that goes first */
  contender *ord[2] = {&cs[first], &cs[1 - first]};
  for (int k = 0; k < 2; k++) {
    contender *c = &cs[k];
    c->target = p->fixture;
    c->c1 = calloc((size_t)p->connect1_reps, 8);
    c->d1 = calloc((size_t)p->connect1_reps, 8);
    c->cN = calloc((size_t)p->connectN_reps, 8);
    c->s1 = calloc((size_t)p->startup1_reps, 8);
    c->sN = calloc((size_t)p->startupN_reps, 8);
    c->pa = calloc((size_t)p->probe_reps, 8);
    c->pl = calloc((size_t)p->probe_reps, 8);
    c->cold = calloc((size_t)(p->cold_reps > 0 ? p->cold_reps : 1), 8);
    alloc_calls(c, p->seq_calls, p->ask_calls);
  }

  /* untimed warm-up of each: first threads, first spawns, lazy binding, malloc arenas */
  for (int k = 0; k < 2; k++) ord[k]->ops->disconnect(ord[k]->ops->connect(p->fixture, 1));

  /* connect (and disconnect), instant fixture: A B A B … */
  for (int i = 0; i < p->connect1_reps; i++)
    for (int k = 0; k < 2; k++)
      ord[k]->c1[i] = time_connect2(ord[k], p->fixture, 1, &ord[k]->d1[i]);
  for (int i = 0; i < p->connectN_reps; i++)
    for (int k = 0; k < 2; k++) ord[k]->cN[i] = time_connect(ord[k], p->fixture, p->many);

  /* the era probe's cost (ours only): "protocol" modern-first (which always probes; "auto"
   * with a resolver speaks the handshake first over stdio, docs/protocol-eras.md) vs legacy
   * against the legacy-only fixture, alternating */
  for (int i = 0; i < p->probe_reps; i++) {
    ours_protocol = "legacy";
    cs[0].pl[i] = time_connect(&cs[0], p->fixture, 1);
    ours_protocol = "modern-first";
    cs[0].pa[i] = time_connect(&cs[0], p->fixture, 1);
    ours_protocol = NULL;
  }

  /* cold start: a fresh process each time (exec, library load, connect, one call,
   * disconnect, exit), A B A B … */
  if (p->floor_bin)
    for (int i = 0; i < p->cold_reps; i++)
      for (int k = 0; k < 2; k++)
        ord[k]->cold[i] = time_cold(ord[k] == &cs[0] ? p->self : p->floor_bin,
                                    ord[k]->ops->name, p->fixture);

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
  call_tests(ord, p, p->seq_calls, p->ask_calls, 1);
  for (int k = 0; k < 2; k++) ord[k]->ops->disconnect(ord[k]->h);

  /* the MRTR ask (ours only, §6): the fixture's --modern mode, mrtr_ask, as many calls as the
   * legacy ask above, on one connection */
  {
    const char *const args[] = {"--modern"};
    fixture_args = args;
    fixture_nargs = 1;
    contender m = {.ops = &ours_ops};
    m.h = ours_ops.connect(p->fixture, 1);
    fixture_args = NULL;
    fixture_nargs = 0;
    uint64_t *lat = calloc((size_t)p->ask_calls, 8), cpu = 0;
    timed_calls(&m, ours_mrtr_ask, p->ask_calls, lat, &cpu);
    mrtr_ask_p50_us = pct(lat, (size_t)p->ask_calls, 50) / 1e3;
    free(lat);
    ours_ops.disconnect(m.h);
  }

  printf("{\"mode\":\"perf\",\"first\":\"%s\",\"seq_calls\":%d,\"ask_calls\":%d,"
         "\"conc_in_flight\":%d,\"conc_window_ms\":%d,\"startup_ms\":%d,",
         ord[0]->ops->name, p->seq_calls, p->ask_calls, p->conc_groups * p->conc_per_group,
         p->conc_windows * p->conc_ms, p->startup_ms);
  print_figures("ours", &cs[0], p, 1);
  putchar(',');
  print_figures("floor", &cs[1], p, 0);
  if (p->http) http_leg(p, first, "http", NULL, NULL);
  if (p->https_cert) http_leg(p, first, "https", p->https_cert, p->https_key);
  if (p->fleet > 0) many_leg(p, first);
  printf("}\n");
}
#endif

/* one fresh process's work for the cold-start figure: connect, one echo call, disconnect */
static void cold(const params *p) {
  const client_ops *o = ops_named(p->who);
  void *h = o->connect(p->fixture, 1);
  if (o->echo(h)) die("%s: echo failed", o->name);
  o->disconnect(h);
}

/* connect, check, disconnect, again and again: a connect workload for valgrind/perf */
static void cycles(const params *p) {
  const client_ops *o = ops_named(p->who);
  for (int i = 0; i < p->cycles; i++) {
    void *h = o->connect(p->fixture, p->servers);
    o->check(h, p->servers);
    o->disconnect(h);
  }
}

/* ------------------------------------------------------------------ rss */

/* With --transport http the servers are HTTP fixtures this process starts (ours only; the
 * fixtures are other processes, not counted); --calls-each K adds K echo calls on every server
 * (ours only). The JSON line says which. */
static void rss(const params *p) {
  const client_ops *o = ops_named(p->who);
  int http = !strcmp(p->transport, "http");
  fleet f = {0};
  void *h;
  if (http || p->calls_each > 0) {
#ifdef FLOOR_ONLY
    die("rss --transport http and --calls-each are for ours only (build/bench/host)");
#else
    if (o != &ours_ops) die("rss --transport http and --calls-each are for ours only");
#endif
  }
#ifndef FLOOR_ONLY
  if (http) {
    fleet_start(&f, p->fixture, p->servers, NULL);
    h = ours_connect_fleet(p->fixture, 0, f.urls, p->servers);
  } else
#endif
    h = o->connect(p->fixture, p->servers);
  o->check(h, p->servers);
  for (int i = 0; i < p->rss_calls; i++)
    if (o->echo(h)) die("%s: echo failed", o->name);
  for (int i = 0; i < p->rss_asks; i++)
    if (o->ask(h)) die("%s: elicitation failed", o->name);
#ifndef FLOOR_ONLY
  for (int i = 0; i < p->servers; i++)
    for (int k = 0; k < p->calls_each; k++) {
      char tool[24];
      snprintf(tool, sizeof tool, "s%d_echo", i);
      if (ours_echo_tool(h, tool)) die("ours: echo %s failed", tool);
    }
#endif
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru); /* still connected: ru_maxrss is the peak so far, KiB */
  o->disconnect(h);
  if (http) fleet_stop(&f);
  printf("{\"mode\":\"rss\",\"who\":\"%s\",\"servers\":%d,\"transport\":\"%s\","
         "\"calls_each\":%d,\"rss_kb\":%ld}\n",
         o->name, p->servers, p->transport, p->calls_each, ru.ru_maxrss);
}

int main(int argc, char **argv) {
  /* The floor needs SIGPIPE ignored (a dead child is then a write error); toolnexus handles
   * it itself. Setting it for the whole process changes nothing for the library. */
  signal(SIGPIPE, SIG_IGN);
  if (argc < 2) die("usage: host perf|rss|cold|cycles --fixture PATH [options] (see bench/README.md)");
  params p;
  parse(argc, argv, &p);
  if (!strcmp(argv[1], "perf")) {
#ifdef FLOOR_ONLY
    die("this binary has only the floor; perf needs build/bench/host");
#else
    perf(&p);
#endif
  } else if (!strcmp(argv[1], "cycles")) {
    cycles(&p);
  } else if (!strcmp(argv[1], "rss")) {
    rss(&p);
  } else if (!strcmp(argv[1], "cold")) {
    cold(&p);
  } else {
    die("unknown mode %s", argv[1]);
  }
  return 0;
}
