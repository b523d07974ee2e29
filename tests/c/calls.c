/* Calls the host controls (contract §7) through the C ABI, against tests/fixture-server:
 * tn_call_tool_async (done exactly once, on a library thread), tn_call_cancel (the server is
 * told, done fires promptly), per-call timeouts, disconnect with calls in flight, re-entrancy
 * from a callback, progress, and a soak with random cancels (`calls soak N`). */
#include "check.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <dirent.h>

static tn_client *connect_fx(const char *extra) {
  char *cfg = fmt("{\"mcpServers\":{\"fx\":{\"command\":[\"%s\"]%s%s}}}", fixture(),
                  extra && *extra ? "," : "", extra ? extra : "");
  tn_client *c = NULL;
  tn_status st = tn_connect(cfg, NULL, NULL, &c);
  CHECK(st == TN_OK, "tn_connect: %d %s", st, tn_last_error_message());
  free(cfg);
  return c;
}

/* ---------------------------------------------------------------- one call's record */

typedef struct {
  pthread_mutex_t m;
  pthread_cond_t cv;
  int done;              /* how often done fired */
  tn_status status;
  char *result;
  pthread_t thread;      /* done's thread */
  uint64_t id;           /* written by tn_call_tool_async through call_id_out */
  uint64_t id_seen_in_done;
  int progress;          /* progress callbacks */
  int progress_after_done;
  char last_progress[256];
  tn_client *client;     /* for the re-entrancy test */
  int try_cancel;        /* tn_call_cancel from inside done */
  tn_status cancel_in_done;
  int try_disconnect;
  tn_status disconnect_status;
  char disconnect_message[256];
} rec;

static void rec_init(rec *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->m, NULL);
  pthread_cond_init(&r->cv, NULL);
}

static void rec_free(rec *r) {
  free(r->result);
  pthread_mutex_destroy(&r->m);
  pthread_cond_destroy(&r->cv);
}

static void on_done(void *ud, tn_status st, const char *result) {
  rec *r = ud;
  if (r->try_cancel) r->cancel_in_done = tn_call_cancel(r->client, r->id);
  if (r->try_disconnect) {
    tn_disconnect(r->client);
    const char *m = tn_last_error_message();
    r->disconnect_status = m && strstr(m, "would deadlock") ? TN_ERR_REENTRANT : TN_OK;
    snprintf(r->disconnect_message, sizeof r->disconnect_message, "%s", m ? m : "");
  }
  pthread_mutex_lock(&r->m);
  r->done++;
  r->status = st;
  free(r->result);
  r->result = result ? strdup(result) : NULL;
  r->thread = pthread_self();
  r->id_seen_in_done = r->id;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->m);
}

static void on_progress(void *ud, const char *p) {
  rec *r = ud;
  pthread_mutex_lock(&r->m);
  if (r->done) r->progress_after_done++;
  r->progress++;
  snprintf(r->last_progress, sizeof r->last_progress, "%s", p);
  pthread_mutex_unlock(&r->m);
}

/* Waits until done fired (or `within` seconds passed); returns how often it fired. */
static int wait_done(rec *r, double within) {
  double end = now_s() + within;
  pthread_mutex_lock(&r->m);
  while (!r->done && now_s() < end) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
    pthread_cond_timedwait(&r->cv, &r->m, &ts);
  }
  int n = r->done;
  pthread_mutex_unlock(&r->m);
  return n;
}

static tn_status start(tn_client *c, const char *tool, const char *args, const char *opts, rec *r) {
  return tn_call_tool_async(c, tool, args, opts, on_done, on_progress, r, &r->id);
}

/* ---------------------------------------------------------------- tests */

static void async_call_completes_once_on_a_library_thread(void) {
  tn_client *c = connect_fx(NULL);
  rec r;
  rec_init(&r);
  tn_status st = start(c, "fx_echo", "{\"text\":\"hi\"}", NULL, &r);
  CHECK(st == TN_OK, "start: %d %s", st, tn_last_error_message());
  CHECK(r.id >= 1, "id %llu", (unsigned long long)r.id);
  CHECK(wait_done(&r, 10) == 1, "done once");
  usleep(50 * 1000);
  CHECK(r.done == 1, "done exactly once: %d", r.done);
  CHECK(r.status == TN_OK && contains(r.result, "{\"output\":\"hi\",\"isError\":false}"), "result %d %s", r.status, r.result);
  CHECK(!pthread_equal(r.thread, pthread_self()), "done on a library thread");
  CHECK(r.id_seen_in_done == r.id, "call_id_out written before done");
  tn_disconnect(c);
  rec_free(&r);
}

static void async_returns_while_the_tool_runs(void) {
  tn_client *c = connect_fx(NULL);
  rec r;
  rec_init(&r);
  double t0 = now_s();
  CHECK(start(c, "fx_slow", "{\"ms\":1500}", NULL, &r) == TN_OK, "start");
  CHECK(now_s() - t0 < 1.0 && r.done == 0, "returned at once, before the result");
  CHECK(wait_done(&r, 20) == 1 && contains(r.result, "slept 1500"), "result %s", r.result);
  tn_disconnect(c);
  rec_free(&r);
}

static void two_hundred_concurrent_calls_complete_once_each(void) {
  tn_client *c = connect_fx(NULL);
  enum { N = 200 };
  static rec rs[N];
  uint64_t ids[N];
  for (int i = 0; i < N; i++) {
    rec_init(&rs[i]);
    char *args = fmt("{\"text\":\"call %d\"}", i);
    CHECK(start(c, "fx_echo", args, NULL, &rs[i]) == TN_OK, "start %d", i);
    ids[i] = rs[i].id;
    free(args);
  }
  for (int i = 0; i < N; i++) {
    CHECK(wait_done(&rs[i], 30) == 1, "call %d done", i);
    char *want = fmt("{\"output\":\"call %d\",\"isError\":false}", i);
    CHECK(rs[i].result && strcmp(rs[i].result, want) == 0, "call %d: %s", i, rs[i].result);
    free(want);
    for (int j = 0; j < i; j++) CHECK(ids[j] != ids[i], "ids unique");
  }
  usleep(100 * 1000);
  for (int i = 0; i < N; i++) {
    CHECK(rs[i].done == 1, "call %d done %d times", i, rs[i].done);
    rec_free(&rs[i]);
  }
  tn_disconnect(c);
}

static void cancel_reaches_the_server_and_ends_the_call(void) {
  tn_client *c = connect_fx(NULL);
  rec r;
  rec_init(&r);
  CHECK(start(c, "fx_slow", "{\"ms\":20000}", NULL, &r) == TN_OK, "start");
  usleep(200 * 1000);
  double t0 = now_s();
  tn_status st = tn_call_cancel(c, r.id);
  CHECK(st == TN_OK, "cancel: %d %s", st, tn_last_error_message());
  CHECK(wait_done(&r, 5) == 1 && now_s() - t0 < 3, "done promptly after cancel");
  CHECK(contains(r.result, "was cancelled") && contains(r.result, "\"isError\":true"), "result %s", r.result);
  CHECK(tn_call_cancel(c, r.id) == TN_ERR_NOT_FOUND, "a second cancel");
  CHECK(tn_call_cancel(c, 987654) == TN_ERR_NOT_FOUND, "an unknown id");
  /* the fixture records the requestId of each notifications/cancelled */
  char *ids = NULL;
  for (int i = 0; i < 50; i++) {
    free(ids);
    ids = call(c, "fx_cancelled_ids", "{}");
    if (!contains(ids, "[]")) break;
    usleep(20 * 1000);
  }
  CHECK(contains(ids, "\"output\":\"[") && !contains(ids, "[]"), "the server was told: %s", ids);
  free(ids);
  usleep(50 * 1000);
  CHECK(r.done == 1, "done once");
  tn_disconnect(c);
  rec_free(&r);
}

static void a_per_call_timeout_wins_over_the_servers(void) {
  tn_client *c = connect_fx("\"timeout\":20000");
  rec r;
  rec_init(&r);
  double t0 = now_s();
  CHECK(start(c, "fx_slow", "{\"ms\":10000}", "{\"timeoutMs\":300}", &r) == TN_OK, "start");
  CHECK(wait_done(&r, 8) == 1, "done");
  CHECK(now_s() - t0 < 5, "ended by the per-call timeout");
  CHECK(contains(r.result, "timed out: no answer within 300 ms"), "result %s", r.result);
  tn_disconnect(c);
  rec_free(&r);
}

/* A call that ended another way (here a timeout) is not ended by a cancel: TN_ERR_NOT_FOUND,
 * even from inside its own done, before the call is retired (§7). */
static void a_cancel_after_the_call_ended_is_not_found(void) {
  tn_client *c = connect_fx(NULL);
  rec r;
  rec_init(&r);
  r.client = c;
  r.try_cancel = 1;
  r.cancel_in_done = -1;
  CHECK(start(c, "fx_slow", "{\"ms\":5000}", "{\"timeoutMs\":200}", &r) == TN_OK, "start");
  CHECK(wait_done(&r, 10) == 1, "done");
  CHECK(contains(r.result, "timed out"), "result %s", r.result);
  CHECK(r.cancel_in_done == TN_ERR_NOT_FOUND, "cancel inside done: %d", r.cancel_in_done);
  CHECK(tn_call_cancel(c, r.id) == TN_ERR_NOT_FOUND, "cancel after done");
  tn_disconnect(c);
  rec_free(&r);
}

static void refused_calls_never_fire_done(void) {
  tn_client *c = connect_fx(NULL);
  rec r;
  rec_init(&r);
  r.id = 77;
  CHECK(start(c, "fx_echo", "{}", "{\"timeoutMs\":0}", &r) == TN_ERR_INVALID_ARGUMENT, "timeoutMs 0");
  CHECK(r.id == 0, "call_id_out is 0 on error");
  CHECK(contains(tn_last_error_message(), "timeoutMs must be a positive integer"), "%s", tn_last_error_message());
  CHECK(start(c, "fx_echo", "{}", "[1]", &r) == TN_ERR_INVALID_ARGUMENT, "options not an object");
  CHECK(start(c, "fx_echo", "{}", "{nope", &r) == TN_ERR_INVALID_JSON, "options not JSON");
  CHECK(start(c, "fx_nope", "{}", NULL, &r) == TN_ERR_NOT_FOUND, "unknown tool");
  CHECK(start(c, "fx_echo", "[]", NULL, &r) == TN_ERR_INVALID_ARGUMENT, "args not an object");
  uint64_t id = 0;
  CHECK(tn_call_tool_async(c, "fx_echo", "{}", NULL, NULL, NULL, NULL, &id) == TN_ERR_INVALID_ARGUMENT, "NULL done");
  CHECK(tn_call_tool_async(NULL, "fx_echo", "{}", NULL, on_done, NULL, &r, &id) == TN_ERR_INVALID_ARGUMENT, "NULL client");
  usleep(100 * 1000);
  CHECK(r.done == 0, "done never fired");
  tn_disconnect(c);
  CHECK(start(c, "fx_echo", "{}", NULL, &r) == TN_ERR_CLOSED, "after disconnect");
  CHECK(tn_call_cancel(c, 1) == TN_ERR_CLOSED, "cancel after disconnect");
  usleep(50 * 1000);
  CHECK(r.done == 0, "done never fired");
  rec_free(&r);
}

static void disconnect_fires_every_done_before_it_returns(void) {
  tn_client *c = connect_fx(NULL);
  enum { N = 20 };
  static rec rs[N];
  for (int i = 0; i < N; i++) {
    rec_init(&rs[i]);
    CHECK(start(c, "fx_slow", "{\"ms\":30000}", NULL, &rs[i]) == TN_OK, "start %d", i);
  }
  usleep(200 * 1000);
  double t0 = now_s();
  tn_disconnect(c);
  CHECK(now_s() - t0 < 10, "disconnect bounded");
  for (int i = 0; i < N; i++) {
    CHECK(rs[i].done == 1, "call %d: done fired before tn_disconnect returned (%d)", i, rs[i].done);
    CHECK(contains(rs[i].result, "{\"output\":\"fx: disconnected\",\"isError\":true}"), "call %d: %s", i, rs[i].result);
    rec_free(&rs[i]);
  }
}

static void disconnect_from_done_is_reentrant(void) {
  tn_client *c = connect_fx(NULL);
  rec r;
  rec_init(&r);
  r.client = c;
  r.try_disconnect = 1;
  CHECK(start(c, "fx_echo", "{\"text\":\"x\"}", NULL, &r) == TN_OK, "start");
  CHECK(wait_done(&r, 10) == 1, "done");
  CHECK(r.disconnect_status == TN_ERR_REENTRANT, "tn_disconnect in done: %s", r.disconnect_message);
  char *res = call(c, "fx_echo", "{\"text\":\"alive\"}");
  CHECK(contains(res, "alive"), "the client stays connected: %s", res);
  free(res);
  tn_disconnect(c);
  rec_free(&r);
}

/* ---------------------------------------------------------------- soak */

static int threads_now(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d))) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static void soak(int n) {
  /* warm-up: the process-wide stderr drain (toolnexus-stderr) starts with the first stdio
   * server and stays, as the timer thread does */
  tn_disconnect(connect_fx(NULL));
  usleep(200000); /* threads that were just joined may linger in /proc for a moment */
  int base = threads_now();
  tn_client *c = connect_fx(NULL);
  rec *rs = calloc((size_t)n, sizeof *rs);
  int cancelled_ok = 0;
  unsigned seed = 42;
  enum { WINDOW = 64 };
  for (int i = 0; i < n; i++) {
    rec_init(&rs[i]);
    const char *tool = (i % 3 == 0) ? "fx_slow" : "fx_echo";
    const char *args = (i % 3 == 0) ? "{\"ms\":5}" : "{\"text\":\"s\"}";
    CHECK(start(c, tool, args, NULL, &rs[i]) == TN_OK, "start %d", i);
    if (rand_r(&seed) % 4 == 0) cancelled_ok += tn_call_cancel(c, rs[i].id) == TN_OK;
    if (i >= WINDOW) CHECK(wait_done(&rs[i - WINDOW], 30) == 1, "call %d done", i - WINDOW);
  }
  for (int i = 0; i < n; i++) CHECK(wait_done(&rs[i], 30) == 1, "call %d done", i);
  usleep(100 * 1000);
  int cancelled_seen = 0, bad = 0;
  for (int i = 0; i < n; i++) {
    bad += rs[i].done != 1 || rs[i].progress_after_done;
    cancelled_seen += contains(rs[i].result, "was cancelled");
    rec_free(&rs[i]);
  }
  CHECK(bad == 0, "%d calls did not complete exactly once", bad);
  CHECK(cancelled_seen == cancelled_ok, "a TN_OK cancel is what ended the call: %d results vs %d cancels", cancelled_seen, cancelled_ok);
  free(rs);
  tn_disconnect(c);
  double end = now_s() + 10;
  while (threads_now() > base && now_s() < end) usleep(50 * 1000);
  CHECK(threads_now() <= base, "threads back to baseline: %d > %d", threads_now(), base);
  printf("soak: %d async calls, %d cancelled\n", n, cancelled_ok);
}

static int soak_n;
static void soak_test(void) { soak(soak_n); }

/* ---------------------------------------------------------------- tn_call_tool_ex */

typedef struct {
  tn_client *c;
  uint64_t id; /* written by the library while the call runs: read with sync_id */
  tn_status st;
  char *result;
  double ended;
} sync_call;

static void *sync_ex(void *arg) {
  sync_call *s = arg;
  s->st = tn_call_tool_ex(s->c, "fx_slow", "{\"ms\":20000}", NULL, &s->id, &s->result);
  s->ended = now_s();
  return NULL;
}

/* The id tn_call_tool_ex published, read as the library writes it: atomically (a plain or
 * volatile read beside its store is a data race, which ThreadSanitizer reports). */
static uint64_t sync_id(sync_call *s) { return __atomic_load_n(&s->id, __ATOMIC_ACQUIRE); }

/* Starts sync_ex on a thread of its own and waits (up to 5 s) until the call has published its
 * id. */
static pthread_t start_sync(sync_call *s) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, sync_ex, s) == 0, "thread");
  for (int i = 0; i < 500 && sync_id(s) == 0; i++) usleep(10 * 1000);
  return t;
}

/* A synchronous call another thread cancels by the id it published: the call
 * returns the cancelled isError promptly, the server is told, the id is then gone. */
static void a_synchronous_call_is_cancelled_from_another_thread(void) {
  tn_client *c = connect_fx(NULL);
  sync_call s = {.c = c};
  pthread_t t = start_sync(&s);
  CHECK(sync_id(&s) >= 1, "call_id_out written while the call waits");
  usleep(200 * 1000);
  double t0 = now_s();
  tn_status st = tn_call_cancel(c, sync_id(&s));
  CHECK(st == TN_OK, "cancel: %d %s", st, tn_last_error_message());
  pthread_join(t, NULL);
  CHECK(s.st == TN_OK, "status %d", s.st);
  CHECK(s.ended - t0 < 3, "returned promptly after the cancel: %.2f s", s.ended - t0);
  CHECK(contains(s.result, "was cancelled") && contains(s.result, "\"isError\":true"), "result %s", s.result);
  CHECK(tn_call_cancel(c, sync_id(&s)) == TN_ERR_NOT_FOUND, "the id is retired");
  char *ids = NULL;
  for (int i = 0; i < 50; i++) {
    free(ids);
    ids = call(c, "fx_cancelled_ids", "{}");
    if (!contains(ids, "[]")) break;
    usleep(20 * 1000);
  }
  CHECK(!contains(ids, "[]"), "the server was told: %s", ids);
  free(ids);
  tn_string_free(s.result);
  tn_disconnect(c);
}

/* Disconnect while a synchronous call another thread could cancel is in flight: it returns
 * promptly with the isError "disconnected", as its asynchronous form's done would. */
static void a_synchronous_call_ended_by_disconnect_is_a_result(void) {
  tn_client *c = connect_fx(NULL);
  sync_call s = {.c = c};
  pthread_t t = start_sync(&s);
  usleep(200 * 1000);
  double t0 = now_s();
  tn_disconnect(c);
  pthread_join(t, NULL);
  CHECK(s.ended - t0 < 10, "returned promptly: %.2f s", s.ended - t0);
  CHECK(s.st == TN_OK, "status %d", s.st);
  CHECK(contains(s.result, "fx: disconnected") && contains(s.result, "\"isError\":true"), "result %s", s.result);
  tn_string_free(s.result);
}

/* Its options, ids and refusals: timeoutMs ends it; a finished call's id is retired; bad
 * options and unknown tools are refused with 0 in call_id_out. */
static void a_synchronous_call_with_options(void) {
  tn_client *c = connect_fx("\"timeout\":20000");
  uint64_t id = 77;
  char *out = NULL;
  double t0 = now_s();
  tn_status st = tn_call_tool_ex(c, "fx_slow", "{\"ms\":10000}", "{\"timeoutMs\":300}", &id, &out);
  CHECK(st == TN_OK && now_s() - t0 < 5, "ended by timeoutMs: %d", st);
  CHECK(contains(out, "timed out: no answer within 300 ms"), "result %s", out);
  CHECK(id >= 1 && tn_call_cancel(c, id) == TN_ERR_NOT_FOUND, "id %llu retired", (unsigned long long)id);
  tn_string_free(out);
  out = NULL;
  st = tn_call_tool_ex(c, "fx_echo", "{\"text\":\"hi\"}", NULL, NULL, &out);
  CHECK(st == TN_OK && contains(out, "{\"output\":\"hi\",\"isError\":false}"), "plain: %s", out);
  tn_string_free(out);
  out = NULL;
  id = 77;
  st = tn_call_tool_ex(c, "fx_echo", "{}", "{\"timeoutMs\":0}", &id, &out);
  CHECK(st == TN_ERR_INVALID_ARGUMENT && id == 0 && out == NULL, "timeoutMs 0: %d", st);
  CHECK(contains(tn_last_error_message(), "timeoutMs"), "message %s", tn_last_error_message());
  id = 77;
  st = tn_call_tool_ex(c, "nope_nothing", "{}", NULL, &id, &out);
  CHECK(st == TN_ERR_NOT_FOUND && id == 0 && out == NULL, "unknown tool: %d", st);
  tn_disconnect(c);
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  if (argc > 2 && strcmp(argv[1], "soak") == 0) {
    soak_n = atoi(argv[2]);
    tn_test t[] = {{"soak", soak_test}};
    return run_tests(t, 1, 1, argv);
  }
  tn_test tests[] = {
      {"async_call_completes_once_on_a_library_thread", async_call_completes_once_on_a_library_thread},
      {"async_returns_while_the_tool_runs", async_returns_while_the_tool_runs},
      {"two_hundred_concurrent_calls_complete_once_each", two_hundred_concurrent_calls_complete_once_each},
      {"cancel_reaches_the_server_and_ends_the_call", cancel_reaches_the_server_and_ends_the_call},
      {"a_per_call_timeout_wins_over_the_servers", a_per_call_timeout_wins_over_the_servers},
      {"a_cancel_after_the_call_ended_is_not_found", a_cancel_after_the_call_ended_is_not_found},
      {"refused_calls_never_fire_done", refused_calls_never_fire_done},
      {"disconnect_fires_every_done_before_it_returns", disconnect_fires_every_done_before_it_returns},
      {"disconnect_from_done_is_reentrant", disconnect_from_done_is_reentrant},
      {"a_synchronous_call_is_cancelled_from_another_thread", a_synchronous_call_is_cancelled_from_another_thread},
      {"a_synchronous_call_with_options", a_synchronous_call_with_options},
      {"a_synchronous_call_ended_by_disconnect_is_a_result", a_synchronous_call_ended_by_disconnect_is_a_result},
  };
  return run_tests(tests, (int)(sizeof tests / sizeof tests[0]), argc, argv);
}
