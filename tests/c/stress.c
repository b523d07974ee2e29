/* Stress: everything a threaded host does, at once, on one client of two servers,
 * for a bounded time (`stress [seconds]`, default 5), then tn_disconnect racing the calls still
 * being made. Built plain, under ThreadSanitizer and under AddressSanitizer (scripts/test-races.sh).
 *
 * Host threads, all running together:
 *   2 sync callers     tn_call_tool on both servers: echo (its own answer, checked), ask_form
 *                      (a question), log (an event)
 *   1 async caller     tn_call_tool_async, cancelled from the same thread at random moments
 *   1 ex caller        tn_call_tool_ex on a slow tool, publishing its id ...
 *   1 canceller        ... which this thread reads (atomically) and cancels at random moments
 *   1 answerer         answers the questions the resolver deferred, from another thread, some
 *                      late (after their elicitationTimeout), some only after tn_disconnect
 *   1 lister           tn_list_tools, tn_server_statuses, tn_tools_for; toggles a's tool list
 *   1 event swapper    tn_set_event_callback: a new callback's user_data each time, or none
 *   1 crasher          crashes server b (its crash tool, or SIGKILL); it is restarted (the
 *                      crashes stop at the end, and b is back, before the disconnect)
 * The resolver answers every other question inline, on the reader thread.
 *
 * Asserts: every call returns (a watchdog ends the process otherwise); every async call that
 * started gets exactly one done, before tn_disconnect returns, and a cancel that was TN_OK is
 * what ended it; echo answers are each call's own; no responder is answered (TN_OK) once
 * tn_disconnect has returned, and no resolver, done or event callback runs after that; a
 * replaced event callback is not running when tn_set_event_callback returns and never runs
 * again; every call made after tn_disconnect returned is TN_ERR_CLOSED; b was restarted. */
#include "check.h"
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#define ANSWER "{\"ok\":true,\"data\":{\"name\":\"stress\"}}"
#define MAX_ASYNC 100000
#define MAX_SINKS 100000

static double run_seconds = 5;
static tn_client *client;
static atomic_int disconnect_begun, disconnect_returned;
static atomic_long violations;
static char first_violation[1024];
static pthread_mutex_t violation_lock = PTHREAD_MUTEX_INITIALIZER;

static void violation(const char *f, ...) {
  if (atomic_fetch_add(&violations, 1) > 0) return;
  va_list ap;
  va_start(ap, f);
  pthread_mutex_lock(&violation_lock);
  vsnprintf(first_violation, sizeof first_violation, f, ap);
  pthread_mutex_unlock(&violation_lock);
  va_end(ap);
}

/* xorshift: each thread its own sequence */
static unsigned rnd(unsigned *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

static void sleep_us(long us) {
  struct timespec t = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&t, NULL);
}

static int is_error(const char *r) { return contains(r, "\"isError\":true"); }

/* ---------------------------------------------------------------- questions */

static atomic_long asks, asked_inline, answered_ok, answered_closed;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static tn_responder *queue[4096];
static int queue_n;

static int32_t resolver(void *ud, const char *request, tn_responder *r) {
  (void)ud;
  if (atomic_load(&disconnect_returned)) violation("the resolver ran after tn_disconnect returned");
  if (!contains(request, "\"kind\":\"input\"")) violation("question: %s", request);
  if (atomic_fetch_add(&asks, 1) % 2 == 0) {
    tn_status st = tn_responder_answer(r, ANSWER);
    if (st == TN_OK) atomic_fetch_add(&asked_inline, 1);
    else if (st != TN_ERR_CLOSED) violation("inline answer: %d %s", st, tn_last_error_message());
    return TN_RESOLVED;
  }
  pthread_mutex_lock(&queue_lock);
  int queued = queue_n < (int)(sizeof queue / sizeof queue[0]);
  if (queued) queue[queue_n++] = r;
  pthread_cond_signal(&queue_cond);
  pthread_mutex_unlock(&queue_lock);
  return queued ? TN_DEFERRED : 7; /* a full queue: the server sees cancel */
}

/* Answers one responder; one answered TN_OK after tn_disconnect returned is a violation. */
static tn_status answer(tn_responder *r) {
  int after = atomic_load(&disconnect_returned);
  tn_status st = tn_responder_answer(r, ANSWER);
  if (st == TN_OK) {
    atomic_fetch_add(&answered_ok, 1);
    if (after) violation("a responder was answered after tn_disconnect returned");
  } else if (st == TN_ERR_CLOSED) {
    atomic_fetch_add(&answered_closed, 1);
  } else {
    violation("tn_responder_answer: %d %s", st, tn_last_error_message());
  }
  return st;
}

/* Responders the answerer holds: each answered when its time comes (now + 0-20 ms, or past
 * its elicitationTimeout: refused), or only after tn_disconnect returned (must be refused). */
typedef struct {
  tn_responder *r;
  double due; /* 0: after tn_disconnect returned */
} pending;

static pending waiting[4096];
static int waiting_n;
static atomic_long held_n, held_closed;

static void *answerer(void *arg) {
  (void)arg;
  unsigned seed = 0x9e3779b9u;
  for (;;) {
    int over = atomic_load(&disconnect_returned);
    pthread_mutex_lock(&queue_lock);
    if (queue_n == 0 && !over) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 2 * 1000 * 1000;
      if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
      pthread_cond_timedwait(&queue_cond, &queue_lock, &ts);
    }
    while (queue_n && waiting_n < (int)(sizeof waiting / sizeof waiting[0])) {
      unsigned x = rnd(&seed) % 32;
      double due = x == 0 ? 0 : now_s() + (x == 1 ? 1.2 : (rnd(&seed) % 20) / 1000.0);
      waiting[waiting_n++] = (pending){queue[--queue_n], due};
      if (due == 0) atomic_fetch_add(&held_n, 1);
    }
    pthread_mutex_unlock(&queue_lock);
    double now = now_s();
    for (int i = 0; i < waiting_n;) {
      pending p = waiting[i];
      if (over || (p.due && p.due <= now)) {
        tn_status st = answer(p.r);
        if (p.due == 0 && st == TN_ERR_CLOSED) atomic_fetch_add(&held_closed, 1);
        waiting[i] = waiting[--waiting_n];
      } else {
        i++;
      }
    }
    if (over) break; /* everything was answered after tn_disconnect returned */
  }
  return NULL;
}

/* ---------------------------------------------------------------- sync callers */

static atomic_long sync_ok, sync_error, sync_closed, echo_wrong;

/* One plain call; `after` is whether tn_disconnect had returned before it began. Returns 0
 * once the client is closed. */
static int sync_call(const char *tool, const char *args, const char *want, int server_b) {
  int begun = atomic_load(&disconnect_begun), after = atomic_load(&disconnect_returned);
  char *out = NULL;
  tn_status st = tn_call_tool(client, tool, args, &out);
  if (st == TN_ERR_CLOSED) {
    atomic_fetch_add(&sync_closed, 1);
    if (!atomic_load(&disconnect_begun)) violation("%s: TN_ERR_CLOSED before tn_disconnect", tool);
    return 0;
  }
  if (after) violation("%s after tn_disconnect returned: status %d, not TN_ERR_CLOSED", tool, st);
  if (st != TN_OK) {
    violation("%s: status %d %s", tool, st, tn_last_error_message());
  } else if (want && strcmp(out, want) == 0) {
    atomic_fetch_add(&sync_ok, 1);
  } else if (is_error(out) && (server_b || begun || atomic_load(&disconnect_begun))) {
    atomic_fetch_add(&sync_error, 1); /* b crashed under it, or the disconnect ended it */
  } else if (!want && !is_error(out)) {
    atomic_fetch_add(&sync_ok, 1);
  } else {
    if (want && !is_error(out)) atomic_fetch_add(&echo_wrong, 1);
    violation("%s %s: %s", tool, args, out);
  }
  tn_string_free(out);
  return 1;
}

static void *sync_worker(void *arg) {
  int t = (int)(intptr_t)arg;
  unsigned seed = 0x1234567u + (unsigned)t * 7919u;
  for (long i = 0;; i++) {
    int b = rnd(&seed) & 1;
    unsigned k = rnd(&seed) % 100;
    char tool[32], args[96], want[128];
    int go;
    if (k < 80) {
      snprintf(tool, sizeof tool, "%c_echo", b ? 'b' : 'a');
      snprintf(args, sizeof args, "{\"text\":\"s%d-%ld\"}", t, i);
      snprintf(want, sizeof want, "{\"output\":\"s%d-%ld\",\"isError\":false}", t, i);
      go = sync_call(tool, args, want, b);
    } else if (k < 95) {
      snprintf(tool, sizeof tool, "%c_ask_form", b ? 'b' : 'a');
      go = sync_call(tool, "{}", NULL, b);
    } else {
      snprintf(tool, sizeof tool, "%c_log", b ? 'b' : 'a');
      go = sync_call(tool, "{\"level\":\"error\",\"message\":\"stress\"}", NULL, b);
    }
    if (!go) break;
  }
  return NULL;
}

/* ---------------------------------------------------------------- async calls */

typedef struct {
  atomic_int done;
  atomic_int late;      /* done fired after tn_disconnect returned */
  int cancelled_result; /* done's result says it was cancelled */
  tn_status start, cancel;
  uint64_t id;
} arec;

static arec *arecs;
static atomic_long async_started, async_done, async_cancel_ok;

static void on_done(void *ud, tn_status st, const char *result) {
  arec *r = ud;
  if (atomic_load(&disconnect_returned)) atomic_store(&r->late, 1);
  r->cancelled_result = st == TN_OK && contains(result, "was cancelled");
  if (st != TN_OK || !result) violation("done: status %d, result %p", st, (void *)result);
  if (atomic_fetch_add(&r->done, 1) != 0) violation("done fired twice for call %llu", (unsigned long long)r->id);
  atomic_fetch_add(&async_done, 1);
}

static void on_progress(void *ud, const char *p) {
  arec *r = ud;
  if (atomic_load(&r->done)) violation("progress after done: %s", p);
}

static long async_n;

static void *async_worker(void *arg) {
  (void)arg;
  unsigned seed = 0xabcdef1u;
  for (;;) {
    if (async_n == MAX_ASYNC) break;
    while (atomic_load(&async_started) - atomic_load(&async_done) > 32 && !atomic_load(&disconnect_begun)) sleep_us(1000);
    arec *r = &arecs[async_n++];
    int b = rnd(&seed) & 1;
    unsigned k = rnd(&seed) % 4;
    char tool[32], args[64];
    snprintf(tool, sizeof tool, "%c_%s", b ? 'b' : 'a', k == 0 ? "ask_form" : k == 1 ? "echo" : "slow");
    snprintf(args, sizeof args, k == 1 ? "{\"text\":\"x\"}" : "{\"ms\":%u}", rnd(&seed) % 40);
    int after = atomic_load(&disconnect_returned);
    r->cancel = -1;
    r->start = tn_call_tool_async(client, tool, args, NULL, on_done, on_progress, r, &r->id);
    if (r->start == TN_OK) {
      atomic_fetch_add(&async_started, 1);
      if (after) violation("tn_call_tool_async started after tn_disconnect returned");
    } else if (r->start == TN_ERR_CLOSED) {
      if (!atomic_load(&disconnect_begun)) violation("async TN_ERR_CLOSED before tn_disconnect");
      break;
    } else {
      violation("tn_call_tool_async %s: %d %s", tool, r->start, tn_last_error_message());
    }
    if (r->start == TN_OK && rnd(&seed) % 3 == 0) {
      sleep_us(rnd(&seed) % 30000);
      r->cancel = tn_call_cancel(client, r->id);
      if (r->cancel == TN_OK) atomic_fetch_add(&async_cancel_ok, 1);
      else if (r->cancel != TN_ERR_NOT_FOUND && r->cancel != TN_ERR_CLOSED)
        violation("tn_call_cancel: %d %s", r->cancel, tn_last_error_message());
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------- tn_call_tool_ex + canceller */

static uint64_t ex_id; /* written by the library (atomically) while the call runs */
static atomic_long ex_calls, ex_cancelled_results, ex_cancel_ok;
static atomic_int ex_over;

static void *ex_worker(void *arg) {
  (void)arg;
  unsigned seed = 0x51ed270bu;
  for (;;) {
    int b = rnd(&seed) & 1;
    char tool[16], args[32];
    snprintf(tool, sizeof tool, "%c_slow", b ? 'b' : 'a');
    snprintf(args, sizeof args, "{\"ms\":%u}", rnd(&seed) % 60);
    int begun = atomic_load(&disconnect_begun), after = atomic_load(&disconnect_returned);
    char *out = NULL;
    tn_status st = tn_call_tool_ex(client, tool, args, NULL, &ex_id, &out);
    atomic_fetch_add(&ex_calls, 1);
    if (st == TN_ERR_CLOSED) {
      if (!atomic_load(&disconnect_begun)) violation("ex: TN_ERR_CLOSED before tn_disconnect");
      break;
    }
    if (after) violation("ex after tn_disconnect returned: %d", st);
    if (st != TN_OK) violation("ex %s: %d %s", tool, st, tn_last_error_message());
    else if (contains(out, "was cancelled")) atomic_fetch_add(&ex_cancelled_results, 1);
    else if (is_error(out) && !(b || begun || atomic_load(&disconnect_begun))) violation("ex %s: %s", tool, out);
    else if (!is_error(out) && !contains(out, "slept ")) violation("ex %s: %s", tool, out);
    tn_string_free(out);
  }
  atomic_store(&ex_over, 1);
  return NULL;
}

static void *canceller(void *arg) {
  (void)arg;
  unsigned seed = 0x2545f491u;
  while (!atomic_load(&ex_over)) {
    sleep_us(rnd(&seed) % 30000);
    uint64_t id = __atomic_load_n(&ex_id, __ATOMIC_ACQUIRE);
    if (!id) continue;
    tn_status st = tn_call_cancel(client, id);
    if (st == TN_OK) atomic_fetch_add(&ex_cancel_ok, 1);
    else if (st != TN_ERR_NOT_FOUND && st != TN_ERR_CLOSED) violation("cancel ex: %d %s", st, tn_last_error_message());
  }
  return NULL;
}

/* ---------------------------------------------------------------- listings, statuses */

static atomic_long listings;

static void *lister(void *arg) {
  (void)arg;
  unsigned seed = 0x3c6ef372u;
  for (long i = 0;; i++) {
    int after = atomic_load(&disconnect_returned);
    char *out = NULL;
    tn_status st;
    switch (i % 3) {
      case 0: st = tn_list_tools(client, &out); break;
      case 1: st = tn_server_statuses(client, &out); break;
      default: st = tn_tools_for(client, "openai", &out); break;
    }
    if (st == TN_ERR_CLOSED) {
      if (!atomic_load(&disconnect_begun)) violation("listing: TN_ERR_CLOSED before tn_disconnect");
      break;
    }
    if (after) violation("listing after tn_disconnect returned: %d", st);
    if (st != TN_OK || !out || (out[0] != '[' && out[0] != '{')) violation("listing %ld: %d %s", i % 3, st, out);
    tn_string_free(out);
    atomic_fetch_add(&listings, 1);
    if (i % 50 == 49) {
      char *r = NULL;
      if (tn_call_tool(client, "a_toggle_tool", rnd(&seed) & 1 ? "{\"on\":true}" : "{\"on\":false}", &r) == TN_OK &&
          is_error(r))
        violation("toggle: %s", r);
      tn_string_free(r);
    }
    sleep_us(rnd(&seed) % 2000);
  }
  return NULL;
}

/* ---------------------------------------------------------------- event callbacks */

typedef struct {
  atomic_int retired; /* replaced: tn_set_event_callback returned */
  atomic_long seen;
} sink;

static sink *sinks;
static atomic_long events_seen, replaced;

static void on_event(void *ud, const char *json) {
  sink *s = ud;
  if (atomic_load(&s->retired)) violation("a replaced event callback was called: %s", json);
  if (atomic_load(&disconnect_returned)) violation("an event after tn_disconnect returned: %s", json);
  if (strncmp(json, "{\"type\":", 8) != 0) violation("event: %s", json);
  atomic_fetch_add(&s->seen, 1);
  atomic_fetch_add(&events_seen, 1);
  if (atomic_load(&s->seen) % 8 == 1) sleep_us(2000); /* widen the window of a replacement */
  if (atomic_load(&s->retired)) violation("an event callback still ran when its replacement returned");
}

static void *event_swapper(void *arg) {
  (void)arg;
  unsigned seed = 0x6a09e667u;
  sink *current = NULL;
  for (long i = 0; i < MAX_SINKS; i++) {
    sink *next = rnd(&seed) % 5 == 0 ? NULL : &sinks[i];
    int after = atomic_load(&disconnect_returned);
    tn_status st = tn_set_event_callback(client, next ? on_event : NULL, next);
    if (st == TN_ERR_CLOSED) {
      if (!atomic_load(&disconnect_begun)) violation("events: TN_ERR_CLOSED before tn_disconnect");
      break;
    }
    if (after) violation("tn_set_event_callback after tn_disconnect returned: %d", st);
    if (st != TN_OK) violation("tn_set_event_callback: %d %s", st, tn_last_error_message());
    if (current) atomic_store(&current->retired, 1);
    atomic_fetch_add(&replaced, 1);
    current = next;
    sleep_us(rnd(&seed) % 20000);
  }
  return NULL;
}

/* ---------------------------------------------------------------- crashes */

static atomic_long crashes;
static atomic_int stop_crashing;

static void *crasher(void *arg) {
  (void)arg;
  unsigned seed = 0xbb67ae85u;
  for (long i = 0; !atomic_load(&stop_crashing); i++) {
    double until = now_s() + (i == 0 ? 0.1 : 0.3 + (rnd(&seed) % 400) / 1000.0); /* one early */
    while (now_s() < until && !atomic_load(&stop_crashing)) sleep_us(5000);
    if (atomic_load(&stop_crashing)) break;
    char *out = NULL;
    if (i % 2 == 0) {
      tn_status st = tn_call_tool(client, "b_crash", "{\"code\":3}", &out);
      if (st == TN_OK && is_error(out)) atomic_fetch_add(&crashes, 1);
      else if (st != TN_ERR_CLOSED && st != TN_OK) violation("b_crash: %d", st);
    } else if (tn_call_tool(client, "b_pid", "{}", &out) == TN_OK && !is_error(out)) {
      long pid = output_long(out);
      if (pid > 1 && kill((pid_t)pid, SIGKILL) == 0) atomic_fetch_add(&crashes, 1);
    }
    tn_string_free(out);
  }
  return NULL;
}

/* ---------------------------------------------------------------- the run */

static double watchdog_deadline;

static void *watchdog(void *arg) {
  (void)arg;
  while (now_s() < watchdog_deadline) sleep_us(100000);
  fprintf(stderr, "stress: a call did not return within %.0f s; ending the process\n", run_seconds + 60);
  printf("0 passed, 1 failed\n");
  fflush(stdout);
  _exit(1);
}

static void test_stress(void) {
  arecs = calloc(MAX_ASYNC, sizeof *arecs);
  sinks = calloc(MAX_SINKS, sizeof *sinks);
  const char *srv = "{\"command\":[\"%s\",\"--live\"],\"timeout\":10000,\"elicitationTimeout\":1000,"
                    "\"restart\":{\"backoffMs\":20,\"maxAttempts\":1000,\"resetAfterMs\":100}}";
  char *a = fmt(srv, fixture()), *b = fmt(srv, fixture());
  char *cfg = fmt("{\"mcpServers\":{\"a\":%s,\"b\":%s}}", a, b);
  tn_status st = tn_connect(cfg, resolver, NULL, &client);
  CHECK(st == TN_OK, "connect: %d %s", st, tn_last_error_message());
  free(a);
  free(b);
  free(cfg);
  if (st != TN_OK) return;
  char *s0 = statuses(client);
  CHECK(contains(s0, "\"a\":{\"status\":\"connected\"") && contains(s0, "\"b\":{\"status\":\"connected\""), "%s", s0);
  free(s0);

  watchdog_deadline = now_s() + run_seconds + 60;
  pthread_t wd;
  pthread_create(&wd, NULL, watchdog, NULL);
  pthread_detach(wd);

  void *(*fns[])(void *) = {sync_worker, sync_worker, async_worker, ex_worker, canceller,
                            answerer,    lister,      event_swapper, crasher};
  enum { N = sizeof fns / sizeof fns[0] };
  pthread_t th[N];
  for (int i = 0; i < N; i++) pthread_create(&th[i], NULL, fns[i], (void *)(intptr_t)i);
  double t0 = now_s();
  while (now_s() - t0 < run_seconds) sleep_us(50000);
  /* The crashes stop; b is back (within 5 s) before the disconnect, the rest goes on. */
  atomic_store(&stop_crashing, 1);
  pthread_join(th[N - 1], NULL);
  char *before = statuses(client);
  for (int i = 0; i < 100 && !contains(before, "\"b\":{\"status\":\"connected\""); i++) {
    sleep_us(50000);
    free(before);
    before = statuses(client);
  }
  /* The calls go on: tn_disconnect races them. */
  atomic_store(&disconnect_begun, 1);
  double d0 = now_s();
  tn_disconnect(client);
  atomic_store(&disconnect_returned, 1);
  double disconnect_took = now_s() - d0;
  pthread_mutex_lock(&queue_lock);
  pthread_cond_broadcast(&queue_cond);
  pthread_mutex_unlock(&queue_lock);
  for (int i = 0; i < N - 1; i++) pthread_join(th[i], NULL); /* the crasher already was */
  double took = now_s() - t0;
  sleep_us(200000); /* a done that would fire late, or for a refused call, has time to */

  long bad_done = 0, late = 0, cancel_mismatch = 0;
  for (long i = 0; i < async_n; i++) {
    arec *r = &arecs[i];
    int want = r->start == TN_OK ? 1 : 0;
    if (atomic_load(&r->done) != want) bad_done++;
    if (atomic_load(&r->late)) late++;
    if (r->cancel == TN_OK && !r->cancelled_result) cancel_mismatch++;
  }
  printf("stress: %.1f s (tn_disconnect %.1f s), %ld sync calls (%ld ok, %ld isError, %ld closed), %ld questions (%ld inline, %ld deferred "
         "answered, %ld refused, %ld held past disconnect)\n",
         took, disconnect_took, atomic_load(&sync_ok) + atomic_load(&sync_error) + atomic_load(&sync_closed), atomic_load(&sync_ok),
         atomic_load(&sync_error), atomic_load(&sync_closed), atomic_load(&asks), atomic_load(&asked_inline),
         atomic_load(&answered_ok), atomic_load(&answered_closed), atomic_load(&held_n));
  printf("stress: %ld async calls (%ld cancelled), %ld ex calls (%ld cancelled), %ld listings, %ld events over %ld "
         "callback swaps, %ld crashes of b\n",
         atomic_load(&async_started), atomic_load(&async_cancel_ok), atomic_load(&ex_calls),
         atomic_load(&ex_cancel_ok), atomic_load(&listings), atomic_load(&events_seen), atomic_load(&replaced),
         atomic_load(&crashes));
  CHECK(atomic_load(&violations) == 0, "%ld violations, first: %s", atomic_load(&violations), first_violation);
  CHECK(bad_done == 0, "%ld async calls without exactly one done (of %ld)", bad_done, async_n);
  CHECK(late == 0, "%ld async calls got done after tn_disconnect returned", late);
  CHECK(cancel_mismatch == 0, "%ld TN_OK cancels whose done does not say cancelled", cancel_mismatch);
  CHECK(atomic_load(&ex_cancelled_results) == atomic_load(&ex_cancel_ok), "ex: %ld cancelled results, %ld TN_OK cancels",
        atomic_load(&ex_cancelled_results), atomic_load(&ex_cancel_ok));
  CHECK(atomic_load(&echo_wrong) == 0, "%ld echo calls got another answer", atomic_load(&echo_wrong));
  CHECK(atomic_load(&held_closed) == atomic_load(&held_n), "held responders refused: %ld of %ld", atomic_load(&held_closed),
        atomic_load(&held_n));
  CHECK(atomic_load(&crashes) > 0 && contains(before, "\"b\":{\"status\":\"connected\"") && contains(before, "\"restarts\":"),
        "b crashed and restarted: %s", before);
  CHECK(atomic_load(&asks) > 0 && atomic_load(&answered_ok) > 0 && atomic_load(&asked_inline) > 0,
        "questions answered inline and deferred");
  CHECK(atomic_load(&async_started) > 0 && atomic_load(&ex_calls) > 0 && atomic_load(&listings) > 0, "every kind ran");
  free(before);
  free(arecs);
  free(sinks);
}

int main(int argc, char **argv) {
  if (argc > 1) run_seconds = atof(argv[1]);
  static const tn_test tests[] = {{"stress", test_stress}};
  return run_tests(tests, 1, 1, argv);
}
