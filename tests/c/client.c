/* The stdio client end to end through the C ABI, against tests/fixture-server (contract §2–§5):
 * config, statuses, naming, lifecycle, calls, timeouts, crashes, concurrency, the resolver
 * (inline, deferred, paused timers, elicitationTimeout, re-entrancy), SEP-1034, disconnect. */
#include "check.h"
#include <pthread.h>
#ifndef _WIN32
#include <sys/wait.h>
#endif

/* ---------------------------------------------------------------- config helpers */

/* {"command":["<fixture>", args...], <extra>} for one server entry */
static char *server(const char *args, const char *extra) {
  char *cmd = fmt("[\"%s\"%s%s]", fixture(), args && *args ? "," : "", args ? args : "");
  char *s = fmt("{\"command\":%s%s%s}", cmd, extra && *extra ? "," : "", extra ? extra : "");
  free(cmd);
  return s;
}

static tn_client *connect_cfg(const char *cfg, tn_resolver_fn r, void *ud) {
  tn_client *c = NULL;
  tn_status st = tn_connect(cfg, r, ud, &c);
  CHECK(st == TN_OK, "tn_connect: %d %s", st, tn_last_error_message());
  return c;
}

/* A client with one fixture server named "fx". */
static tn_client *connect_one(const char *args, const char *extra, tn_resolver_fn r, void *ud) {
  char *s = server(args, extra);
  char *cfg = fmt("{\"mcpServers\":{\"fx\":%s}}", s);
  tn_client *c = connect_cfg(cfg, r, ud);
  free(s);
  free(cfg);
  return c;
}

/* ---------------------------------------------------------------- a scriptable resolver */

enum mode { ANSWER, ANSWER_SLOW, DEFER_THREAD, ANSWER_THEN_DEFER, FAIL, NO_ANSWER, DEFER_NEVER,
            REENTER, INVALID_THEN_VALID };

typedef struct {
  enum mode mode;
  const char *answer;
  int delay_ms;
  int calls;
  char last_request[8192];
  tn_client *client;
  const char *reenter_tool;
  tn_status reenter_status;
  char reenter_message[512];
  tn_responder *kept;
  tn_status late_status;
  tn_status first_status;
  int deferred_done; /* answer_later threads that finished (under lock) */
  pthread_mutex_t lock;
} resolver_ctx;

static void ctx_init(resolver_ctx *x, enum mode m, const char *answer) {
  memset(x, 0, sizeof *x);
  x->mode = m;
  x->answer = answer;
  x->late_status = -1;
  x->first_status = -1;
  pthread_mutex_init(&x->lock, NULL);
}

typedef struct {
  resolver_ctx *x;
  tn_responder *r;
} deferred_job;

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static void *answer_later(void *arg) {
  deferred_job *j = arg;
  sleep_ms(j->x->delay_ms);
  tn_status st = tn_responder_answer(j->r, j->x->answer);
  pthread_mutex_lock(&j->x->lock);
  j->x->first_status = st;
  /* a second answer is refused */
  j->x->late_status = tn_responder_answer(j->r, j->x->answer);
  j->x->deferred_done++;
  pthread_mutex_unlock(&j->x->lock);
  free(j);
  return NULL;
}

/* Waits (up to 10 s) until n answer_later threads have finished: the call returns after the
 * first answer, before that thread tries its second, so reading or changing the context
 * before this is a data race (and x may leave scope under the thread). */
static int wait_deferred(resolver_ctx *x, int n) {
  int done = 0;
  for (int i = 0; i < 1000 && !done; i++) {
    pthread_mutex_lock(&x->lock);
    done = x->deferred_done >= n;
    pthread_mutex_unlock(&x->lock);
    if (!done) sleep_ms(10);
  }
  return done;
}

/* The responder a DEFER_NEVER resolver kept, read under the lock it is written under. */
static tn_responder *kept(resolver_ctx *x) {
  pthread_mutex_lock(&x->lock);
  tn_responder *r = x->kept;
  pthread_mutex_unlock(&x->lock);
  return r;
}

static int32_t resolver(void *ud, const char *request_json, tn_responder *r) {
  resolver_ctx *x = ud;
  pthread_mutex_lock(&x->lock);
  x->calls++;
  snprintf(x->last_request, sizeof x->last_request, "%s", request_json);
  pthread_mutex_unlock(&x->lock);
  switch (x->mode) {
    case ANSWER:
      x->first_status = tn_responder_answer(r, x->answer);
      return TN_RESOLVED;
    case ANSWER_SLOW:
      sleep_ms(x->delay_ms);
      x->first_status = tn_responder_answer(r, x->answer);
      return TN_RESOLVED;
    case DEFER_THREAD: {
      deferred_job *j = malloc(sizeof *j);
      j->x = x;
      j->r = r;
      pthread_t t;
      pthread_create(&t, NULL, answer_later, j);
      pthread_detach(t);
      return TN_DEFERRED;
    }
    case ANSWER_THEN_DEFER:
      x->first_status = tn_responder_answer(r, x->answer);
      return TN_DEFERRED;
    case FAIL:
      return 7;
    case NO_ANSWER:
      return TN_RESOLVED;
    case DEFER_NEVER:
      pthread_mutex_lock(&x->lock);
      x->kept = r;
      pthread_mutex_unlock(&x->lock);
      return TN_DEFERRED;
    case REENTER: {
      char *out = NULL;
      x->reenter_status = tn_call_tool(x->client, x->reenter_tool, "{\"text\":\"inner\"}", &out);
      const char *m = tn_last_error_message();
      snprintf(x->reenter_message, sizeof x->reenter_message, "%s", x->reenter_status ? (m ? m : "") : out);
      tn_string_free(out);
      x->first_status = tn_responder_answer(r, x->answer);
      return TN_RESOLVED;
    }
    case INVALID_THEN_VALID:
      x->late_status = tn_responder_answer(r, "{\"ok\":\"yes\"}");
      x->first_status = tn_responder_answer(r, x->answer);
      return TN_RESOLVED;
  }
  return 99;
}

/* ---------------------------------------------------------------- connecting */

static void test_statuses_order_and_tools(void) {
  char *a = server("", NULL), *b = server("", NULL);
  char *cfg = fmt("{\"mcpServers\":{\"b\":%s,\"off\":{\"command\":[\"x\"],\"disabled\":true},"
                  "\"a\":%s,\"broken\":{\"command\":\"/nonexistent/prog\"}}}", b, a);
  tn_client *c = connect_cfg(cfg, NULL, NULL);
  char *st = statuses(c);
  const char *pa = strstr(st, "\"a\":"), *pb = strstr(st, "\"b\":"), *pbr = strstr(st, "\"broken\":"),
             *po = strstr(st, "\"off\":");
  CHECK(pa && pb && pbr && po && pa < pb && pb < pbr && pbr < po, "status order: %s", st);
  CHECK(contains(st, "\"off\":{\"status\":\"disabled\"}"), "disabled: %s", st);
  CHECK(contains(st, "server `broken` failed during `connect`: cannot start `/nonexistent/prog`"), "%s", st);
  CHECK(contains(st, "\"a\":{\"status\":\"connected\""), "%s", st);
  char *t = tools(c);
  const char *first = strstr(t, "\"name\":\"a_add\""), *last = strstr(t, "\"name\":\"b_unknown_request\"");
  CHECK(t[0] == '[' && first && last && first < last, "tools sorted: %.200s", t);
  CHECK(contains(t, "\"name\":\"a_dots_and_spaces\",\"description\""), "sanitized name");
  CHECK(contains(t, "\"remoteName\":\"dots.and spaces\""), "remote name kept");
  CHECK(contains(t, "\"source\":\"mcp\",\"server\":\"a\",\"remoteName\":\"echo\""), "fixed keys");
  CHECK(contains(t, "\"title\":\"Annotated Tool\",") && contains(t, "\"annotations\":{\"readOnlyHint\":true}") &&
            contains(t, "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"z\":{\"type\":\"number\"}}}") &&
            contains(t, "\"icons\":[{\"src\":\"https://example.test/i.png\"}]") && contains(t, "\"_meta\":{\"k\":\"v\"}"),
        "optional listing fields kept");
  /* a second connect over the same config gives byte-identical output */
  tn_client *c2 = connect_cfg(cfg, NULL, NULL);
  char *t2 = tools(c2), *st2 = statuses(c2);
  CHECK(strcmp(t, t2) == 0, "tools deterministic");
  CHECK(strcmp(st, st2) == 0, "statuses deterministic:\n%s\n%s", st, st2);
  tn_disconnect(c2);
  tn_disconnect(c);
  free(t2); free(st2); free(t); free(st); free(cfg); free(a); free(b);
}

static void test_config_errors_name_the_key(void) {
  char *ok = server("", NULL);
  char *cfg = fmt("{\"mcpServers\":{\"ok\":%s,\"n\":5,\"t\":{\"command\":[\"x\"],\"timeout\":-3},"
                  "\"c\":{\"command\":[1,2]},\"none\":{},\"e\":{\"command\":[\"x\"],\"env\":{\"K\":1}},"
                  "\"tl\":{\"command\":[\"x\"],\"tools\":{\"a\":\"yes\"}},\"ty\":{\"type\":\"carrier-pigeon\"}}}", ok);
  tn_client *c = connect_cfg(cfg, NULL, NULL);
  char *st = statuses(c);
  CHECK(contains(st, "\"ok\":{\"status\":\"connected\""), "good server unaffected: %s", st);
  CHECK(contains(st, "server `n` failed during `config`: server entry must be a JSON object"), "%s", st);
  CHECK(contains(st, "server `t` failed during `config`: `timeout` must be a positive number"), "%s", st);
  CHECK(contains(st, "server `c` failed during `config`: `command` must be an array of strings"), "%s", st);
  CHECK(contains(st, "server `none` failed during `config`: neither `command`"), "%s", st);
  CHECK(contains(st, "`env.K` must be a string"), "%s", st);
  CHECK(contains(st, "`tools.a` must be a boolean"), "%s", st);
  CHECK(contains(st, "`type` must be"), "%s", st);
  tn_disconnect(c);
  /* the other spellings of the server map, and a bare map minus reserved keys */
  char *cfg2 = fmt("{\"servers\":{\"s\":%s}}", ok);
  c = connect_cfg(cfg2, NULL, NULL);
  free(st);
  st = statuses(c);
  CHECK(contains(st, "\"s\":{\"status\":\"connected\""), "servers key: %s", st);
  tn_disconnect(c);
  char *cfg3 = fmt("{\"agents\":{},\"builtins\":[],\"bare\":%s}", ok);
  c = connect_cfg(cfg3, NULL, NULL);
  free(st);
  st = statuses(c);
  CHECK(contains(st, "{\"servers\":{\"bare\":{\"status\":\"connected\""), "bare map: %s", st);
  CHECK(!contains(st, "agents"), "reserved key skipped: %s", st);
  tn_disconnect(c);
  free(st); free(cfg); free(cfg2); free(cfg3); free(ok);
}

static void test_collisions_first_server_wins(void) {
  char *s = server("", NULL);
  char *cfg = fmt("{\"mcpServers\":{\"a_b\":%s,\"a.b\":%s}}", s, s);
  tn_client *c = connect_cfg(cfg, NULL, NULL);
  char *t = tools(c), *st = statuses(c);
  CHECK(contains(t, "\"name\":\"a_b_echo\",\"description\":\"Echo the text back\",\"inputSchema\""), "%.300s", t);
  CHECK(contains(t, "\"server\":\"a.b\"") && !contains(t, "\"server\":\"a_b\""), "a.b (U+002E) sorts first and wins");
  CHECK(contains(st, "tool `echo` is not listed: its name `a_b_echo` collides with tool `echo` of server `a.b`"), "%s", st);
  tn_disconnect(c);
  free(t); free(st); free(cfg); free(s);
}

static void test_allowlist(void) {
  tn_client *c = connect_one("", "\"tools\":{\"echo\":true,\"add\":false}", NULL, NULL);
  char *t = tools(c);
  CHECK(contains(t, "fx_echo") && !contains(t, "fx_add") && !contains(t, "fx_image"), "only true ones: %.300s", t);
  tn_disconnect(c);
  free(t);
  c = connect_one("", "\"tools\":{\"echo\":false}", NULL, NULL);
  t = tools(c);
  CHECK(!contains(t, "fx_echo") && contains(t, "fx_add") && contains(t, "fx_image"), "all but false ones");
  tn_disconnect(c);
  free(t);
  c = connect_one("", "\"tools\":{}", NULL, NULL);
  t = tools(c);
  CHECK(contains(t, "fx_echo") && contains(t, "fx_add"), "empty map = all");
  char *r = call(c, "fx_nope", NULL);
  CHECK(contains(r, "ERR 4"), "unknown tool is TN_ERR_NOT_FOUND: %s", r);
  tn_disconnect(c);
  free(t); free(r);
}

static void test_initialize_params(void) {
  tn_client *c = connect_one("", NULL, NULL, NULL);
  char *r = call(c, "fx_client_info", NULL);
  CHECK(contains(r, "\\\"protocolVersion\\\":\\\"2025-11-25\\\""), "offers 2025-11-25: %s", r);
  CHECK(contains(r, "\\\"capabilities\\\":{}"), "no capability without resolver: %s", r);
  CHECK(contains(r, "\\\"clientInfo\\\":{\\\"name\\\":\\\"toolnexus\\\",\\\"version\\\":\\\"0.1.0\\\"}"), "%s", r);
  tn_disconnect(c);
  free(r);
  resolver_ctx x;
  ctx_init(&x, ANSWER, "{\"ok\":true}");
  c = connect_one("", NULL, resolver, &x);
  r = call(c, "fx_client_info", NULL);
  CHECK(contains(r, "\\\"capabilities\\\":{\\\"elicitation\\\":{\\\"form\\\":{},\\\"url\\\":{}}}"), "%s", r);
  tn_disconnect(c);
  free(r);
}

static void test_protocol_versions(void) {
  const char *ok[] = {"2025-06-18", "2025-03-26", "2024-11-05"};
  for (int i = 0; i < 3; i++) {
    char *args = fmt("\"--protocol\",\"%s\"", ok[i]);
    tn_client *c = connect_one(args, NULL, NULL, NULL);
    char *st = statuses(c);
    char *want = fmt("\"status\":\"connected\",\"era\":\"legacy\",\"protocolVersion\":\"%s\"", ok[i]);
    CHECK(contains(st, want), "%s accepted: %s", ok[i], st);
    tn_disconnect(c);
    free(st); free(want); free(args);
  }
  tn_client *c = connect_one("\"--protocol\",\"2099-01-01\"", NULL, NULL, NULL);
  char *st = statuses(c);
  CHECK(contains(st, "server `fx` failed during `initialize`: the server answered protocolVersion \\\"2099-01-01\\\""),
        "unknown version fails the server: %s", st);
  tn_disconnect(c);
  free(st);
}

static void test_pagination(void) {
  tn_client *c = connect_one("\"--extra-tools\",\"120\",\"--page-size\",\"25\"", NULL, NULL, NULL);
  char *st = statuses(c), *t = tools(c);
  int n = 0;
  for (const char *p = t; (p = strstr(p, "\"source\":\"mcp\"")); p++) n++;
  CHECK(n == 22 + 7 + 120, "all pages listed: %d tools; %s", n, st);
  CHECK(contains(t, "fx_t0000") && contains(t, "fx_t0119"), "first and last page");
  tn_disconnect(c);
  free(st); free(t);
  double t0 = now_s();
  c = connect_one("\"--repeat-cursor\"", NULL, NULL, NULL);
  st = statuses(c);
  CHECK(contains(st, "\"status\":\"connected\",\"era\":\"legacy\",\"protocolVersion\":\"2025-11-25\",") &&
            contains(st, "\"tools\":29}"),
        "a repeated cursor stops the loop; the repeated page is not listed twice: %s", st);
  CHECK(!contains(st, "warnings"), "and is no collision: %s", st);
  CHECK(now_s() - t0 < 5, "promptly");
  tn_disconnect(c);
  free(st);
}

static void test_startup_failures(void) {
  tn_client *c = connect_one("\"--exit-on-init\",\"7\"", NULL, NULL, NULL);
  char *st = statuses(c);
  CHECK(contains(st, "server `fx` failed during `initialize`: the server process exited with status 7; stderr: fixture: refusing to initialize"),
        "exit status and stderr tail: %s", st);
  tn_disconnect(c);
  free(st);
  double t0 = now_s();
  c = connect_one("\"--silent-tool-list\"", "\"timeout\":300", NULL, NULL);
  st = statuses(c);
  CHECK(contains(st, "failed during `tools/list`: no answer within 300 ms"), "%s", st);
  CHECK(now_s() - t0 < 3, "bounded by the timeout");
  tn_disconnect(c);
  free(st);
  c = connect_one("\"--no-tools-list\"", NULL, NULL, NULL);
  st = statuses(c);
  CHECK(contains(st, "failed during `tools/list`: the server answered with JSON-RPC error -32603: tools/list exploded"), "%s", st);
  tn_disconnect(c);
  free(st);
  t0 = now_s();
  c = connect_one("\"--init-delay-ms\",\"3000\"", "\"timeout\":200", NULL, NULL);
  st = statuses(c);
  CHECK(contains(st, "failed during `initialize`: no answer within 200 ms"), "%s", st);
  CHECK(now_s() - t0 < 2.5, "initialize bounded: %.2f", now_s() - t0);
  tn_disconnect(c);
  free(st);
}

/* A server that says why on stderr and then goes silent: the status carries its words. */
#ifndef _WIN32
static void test_silent_server_failure_quotes_stderr(void) {
  tn_client *c = connect_cfg("{\"mcpServers\":{\"q\":{\"command\":[\"sh\",\"-c\","
                             "\"echo 'fatal: OPENAI_API_KEY is not set' >&2; exec sleep 30\"],\"timeout\":500}}}",
                             NULL, NULL);
  char *st = statuses(c);
  CHECK(contains(st, "server `q` failed during `initialize`: no answer within 500 ms; stderr: fatal: OPENAI_API_KEY is not set"),
        "%s", st);
  free(st);
  tn_disconnect(c);
}
#endif

static void test_servers_start_in_parallel(void) {
  char *s = server("\"--init-delay-ms\",\"600\"", NULL);
  char *cfg = fmt("{\"mcpServers\":{\"a\":%s,\"b\":%s,\"c\":%s,\"d\":%s}}", s, s, s, s);
  double t0 = now_s();
  tn_client *c = connect_cfg(cfg, NULL, NULL);
  double took = now_s() - t0;
  CHECK(took < 1.8, "4 servers × 600 ms started in parallel: %.2fs", took);
  char *st = statuses(c);
  CHECK(!contains(st, "failed"), "%s", st);
  tn_disconnect(c);
  free(st); free(cfg); free(s);
}

/* ---------------------------------------------------------------- calls */

static void test_results_are_shaped(void) {
  tn_client *c = connect_one("", "\"env\":{\"TN_FX_VAR\":\"from-config\"},\"cwd\":\"/tmp\"", NULL, NULL);
  char *r = call(c, "fx_echo", "{\"text\":\"héllo 😀 \\\"q\\\"\\n\"}");
  CHECK(strcmp(r, "{\"output\":\"héllo 😀 \\\"q\\\"\\n\",\"isError\":false}") == 0, "echo: %s", r);
  free(r);
  r = call(c, "fx_structured", NULL);
  CHECK(strcmp(r, "{\"output\":\"{\\\"zeta\\\":1.50,\\\"alpha\\\":\\\"é😀\\\",\\\"big\\\":123456789012345678901234567890,"
                  "\\\"nested\\\":{\\\"b\\\":[true,null],\\\"a\\\":1e+2}}\",\"isError\":false}") == 0,
        "structured content, key order and number text kept: %s", r);
  free(r);
  r = call(c, "fx_fail", NULL);
  CHECK(strcmp(r, "{\"output\":\"first problem\\n\\nsecond problem\",\"isError\":true}") == 0, "error: %s", r);
  free(r);
  r = call(c, "fx_image", NULL);
  CHECK(strcmp(r, "{\"output\":\"image (image/png, 8 bytes)\",\"isError\":false,\"metadata\":{\"parts\":[{\"type\":\"image\","
                  "\"data\":\"iVBORw0KGgo=\",\"mimeType\":\"image/png\"}]}}") == 0, "image: %s", r);
  free(r);
  r = call(c, "fx_mixed", NULL);
  CHECK(contains(r, "{\"output\":\"see attached\",\"isError\":false,\"metadata\":{\"parts\":[{\"type\":\"image\"") &&
            contains(r, "{\"type\":\"resource_link\",\"uri\":\"file:///tmp/x.txt\",\"name\":\"x.txt\"}]}}"), "mixed: %s", r);
  free(r);
  r = call(c, "fx_env", "{\"name\":\"TN_FX_VAR\"}");
  CHECK(contains(r, "\"output\":\"from-config\""), "env added: %s", r);
  free(r);
  r = call(c, "fx_env", "{\"name\":\"PATH\"}");
  CHECK(!contains(r, "<unset>"), "environment inherited: %s", r);
  free(r);
  r = call(c, "fx_cwd", NULL);
#ifdef _WIN32
  CHECK(contains(r, ":\\\\tmp\""), "cwd (Wine maps / to drive Z:): %s", r);
#else
  CHECK(contains(r, "\"output\":\"/tmp\""), "cwd: %s", r);
#endif
  free(r);
  r = call(c, "fx_add", " {\"a\": 2, \"b\": 40} ");
  CHECK(contains(r, "\"output\":\"42\""), "args with whitespace: %s", r);
  free(r);
  /* pretty-printed arguments must not break newline-delimited framing */
  r = call(c, "fx_echo", "{\n  \"text\": \"two\\nlines\"\r\n}\n");
  CHECK(strcmp(r, "{\"output\":\"two\\nlines\",\"isError\":false}") == 0, "pretty args: %s", r);
  free(r);
  tn_disconnect(c);
}

static void test_timeout_cancels_and_server_lives_on(void) {
  tn_client *c = connect_one("", "\"timeout\":300", NULL, NULL);
  double t0 = now_s();
  char *r = call(c, "fx_slow", "{\"ms\":3000}");
  double took = now_s() - t0;
  CHECK(contains(r, "\"output\":\"server `fx`: tools/call `slow` timed out: no answer within 300 ms\",\"isError\":true"), "%s", r);
  CHECK(took >= 0.28 && took < 1.5, "timed out after %.2fs", took);
  free(r);
  r = call(c, "fx_cancelled_ids", NULL);
  CHECK(contains(r, "\"output\":\"[4]\""), "notifications/cancelled sent for request 4 (after the era probe 1, initialize 2, tools/list 3): %s", r);
  free(r);
  r = call(c, "fx_echo", "{\"text\":\"still here\"}");
  CHECK(contains(r, "still here"), "%s", r);
  free(r);
  tn_disconnect(c);
}

static void test_crash_fails_calls_at_once(void) {
  /* "restart": false: a dead server stays dead (restarts: tests/c/live.c). */
  char *s = server("", "\"restart\":false");
  char *cfg = fmt("{\"mcpServers\":{\"fx\":%s,\"other\":%s}}", s, s);
  tn_client *c = connect_cfg(cfg, NULL, NULL);
  double t0 = now_s();
  char *r = call(c, "fx_crash", "{\"code\":5}");
  CHECK(contains(r, "server `fx`: tools/call `crash` failed: the server process exited with status 5; stderr: fixture: crashing with 5"), "%s", r);
  CHECK(now_s() - t0 < 1.5, "at once");
  free(r);
  r = call(c, "fx_echo", "{\"text\":\"x\"}");
  CHECK(contains(r, "\"isError\":true") && contains(r, "status 5"), "later calls fail fast: %s", r);
  free(r);
  r = call(c, "other_echo", "{\"text\":\"unaffected\"}");
  CHECK(contains(r, "\"output\":\"unaffected\",\"isError\":false"), "%s", r);
  free(r);
  char *st = statuses(c);
  CHECK(contains(st, "\"fx\":{\"status\":\"failed\",\"error\":\"server `fx` failed after connecting: the server process exited with status 5"), "%s", st);
  free(st);
  tn_disconnect(c);
  free(cfg); free(s);
}

typedef struct {
  tn_client *c;
  const char *tool;
  const char *args;
  char *result;
  int index;
  int ok;
} call_job;

static void *call_thread(void *arg) {
  call_job *j = arg;
  j->result = call(j->c, j->tool, j->args);
  return NULL;
}

static void test_crash_with_calls_in_flight(void) {
  /* "restart": false: a call whose thread had not sent its request within the 200 ms below
     (seen under qemu-user on a loaded machine) would otherwise go to the restarted server and
     succeed 20 s later; with no restart it fails with the same exit status at once. */
  tn_client *c = connect_one("", "\"restart\":false", NULL, NULL);
  call_job jobs[20];
  pthread_t th[20];
  for (int i = 0; i < 20; i++) {
    jobs[i] = (call_job){c, "fx_slow", "{\"ms\":20000}", NULL, i, 0};
    pthread_create(&th[i], NULL, call_thread, &jobs[i]);
  }
  sleep_ms(200);
  double t0 = now_s();
  char *r = call(c, "fx_sleep_then_crash", "{\"ms\":100,\"code\":9}");
  for (int i = 0; i < 20; i++) pthread_join(th[i], NULL);
  CHECK(now_s() - t0 < 2, "all 20 failed at once (%.2fs)", now_s() - t0);
  for (int i = 0; i < 20; i++) {
    CHECK(contains(jobs[i].result, "exited with status 9"), "call %d: %s", i, jobs[i].result);
    free(jobs[i].result);
  }
  free(r);
  tn_disconnect(c);
}

typedef struct {
  tn_client *c;
  int thread;
  int calls;
  int wrong;
  char sample[256];
} load_job;

static void *load_thread(void *arg) {
  load_job *j = arg;
  const char *servers[] = {"s0", "s1", "s2", "s3"};
  for (int i = 0; i < j->calls; i++) {
    char name[32], args[96], want[128];
    snprintf(name, sizeof name, "%s_echo", servers[(j->thread + i) % 4]);
    snprintf(args, sizeof args, "{\"text\":\"t%d-c%d\"}", j->thread, i);
    snprintf(want, sizeof want, "{\"output\":\"t%d-c%d\",\"isError\":false}", j->thread, i);
    char *r = call(j->c, name, args);
    if (strcmp(r, want) != 0) {
      if (!j->wrong) snprintf(j->sample, sizeof j->sample, "%s", r);
      j->wrong++;
    }
    free(r);
  }
  return NULL;
}

static void test_32_threads_200_calls_4_servers(void) {
  char *s = server("", NULL);
  char *cfg = fmt("{\"mcpServers\":{\"s0\":%s,\"s1\":%s,\"s2\":%s,\"s3\":%s}}", s, s, s, s);
  tn_client *c = connect_cfg(cfg, NULL, NULL);
  load_job jobs[32];
  pthread_t th[32];
  double t0 = now_s();
  for (int i = 0; i < 32; i++) {
    jobs[i] = (load_job){c, i, 200, 0, ""};
    pthread_create(&th[i], NULL, load_thread, &jobs[i]);
  }
  int wrong = 0;
  for (int i = 0; i < 32; i++) {
    pthread_join(th[i], NULL);
    wrong += jobs[i].wrong;
    if (jobs[i].wrong) fprintf(stderr, "  thread %d: %s\n", i, jobs[i].sample);
  }
  fprintf(stderr, "  6400 calls in %.2fs\n", now_s() - t0);
  CHECK(wrong == 0, "%d of 6400 calls got a wrong answer", wrong);
  tn_disconnect(c);
  free(cfg); free(s);
}

static void test_chatty_stderr_never_blocks(void) {
  double t0 = now_s();
  tn_client *c = connect_one("\"--stderr-flood-mb\",\"16\"", "\"timeout\":10000", NULL, NULL);
  for (int i = 0; i < 8; i++) {
    char *r = call(c, "fx_noisy", "{\"kb\":1024}");
    CHECK(contains(r, "\"output\":\"noisy done\""), "%s", r);
    free(r);
  }
  double took = now_s() - t0;
  CHECK(took < 8, "24 MiB of stderr drained while calling: %.2fs", took);
  char *r = call(c, "fx_stderr_lines", "{\"n\":3}");
  free(r);
  r = call(c, "fx_crash", "{\"code\":4}");
  CHECK(contains(r, "stderr: ") && contains(r, "fixture: crashing with 4"), "tail is the last lines: %s", r);
  CHECK(strlen(r) < 2600, "tail is bounded (%zu bytes)", strlen(r));
  free(r);
  tn_disconnect(c);
}

static void test_junk_lines_are_skipped_and_counted(void) {
  tn_client *c = connect_one("", NULL, NULL, NULL);
  char *r = call(c, "fx_junk_then_echo", "{\"text\":\"after junk\"}");
  CHECK(contains(r, "\"output\":\"after junk\",\"isError\":false"), "%s", r);
  free(r);
  r = call(c, "fx_unknown_id_then_echo", "{\"text\":\"after unknown ids\"}");
  CHECK(contains(r, "\"output\":\"after unknown ids\",\"isError\":false"), "%s", r);
  free(r);
  char *st = statuses(c);
  CHECK(contains(st, "\"skippedLines\":4"), "non-JSON, partial, invalid UTF-8 and non-object lines counted: %s", st);
  free(st);
  tn_disconnect(c);
}

static void test_line_longer_than_max_fails_the_connection(void) {
  tn_client *c = connect_one("", "\"maxMessageBytes\":16384,\"restart\":false", NULL, NULL);
  char *r = call(c, "fx_big_text", "{\"bytes\":100000}");
  CHECK(contains(r, "longer than maxMessageBytes (16384 bytes)") && contains(r, "\"isError\":true"), "%s", r);
  free(r);
  r = call(c, "fx_echo", "{\"text\":\"x\"}");
  CHECK(contains(r, "maxMessageBytes"), "connection stays failed: %s", r);
  free(r);
  tn_disconnect(c);
}

/* SIGPIPE at its default disposition kills a process that writes to a pipe nobody reads. The
 * library keeps a reader on every child's stdin, so that can never happen: a child that
 * closed its stdin just never answers (a bounded isError), a dead one is reported as dead. */
static void test_sigpipe_never_kills_the_host(void) {
#ifdef SIGPIPE /* Windows has none: a write to a pipe nobody reads fails instead */
  signal(SIGPIPE, SIG_DFL);
#endif
  tn_client *c = connect_one("\"--close-stdin-after-init\"", "\"timeout\":300", NULL, NULL);
  sleep_ms(100);
  for (int i = 0; i < 3; i++) {
    double t0 = now_s();
    char *r = call(c, "fx_echo", "{\"text\":\"x\"}");
    CHECK(contains(r, "timed out: no answer within 300 ms") && contains(r, "\"isError\":true"), "%s", r);
    CHECK(now_s() - t0 < 1.5, "bounded");
    free(r);
  }
  tn_disconnect(c);
  c = connect_one("", "\"restart\":false", NULL, NULL);
  char *r = call(c, "fx_crash", "{\"code\":6}");
  free(r);
  for (int i = 0; i < 3; i++) {
    r = call(c, "fx_echo", "{\"text\":\"x\"}");
    CHECK(contains(r, "exited with status 6"), "writing after death: %s", r);
    free(r);
  }
  tn_disconnect(c);
}

static void test_server_that_stops_reading_cannot_hang_a_call(void) {
  tn_client *c = connect_one("\"--stop-reading-after-init\"", "\"timeout\":500", NULL, NULL);
  /* 256 KiB of arguments cannot fit in the pipe: the write itself must be bounded */
  size_t n = 256 * 1024;
  char *args = malloc(n + 32);
  strcpy(args, "{\"text\":\"");
  size_t head = strlen(args);
  memset(args + head, 'x', n);
  strcpy(args + head + n, "\"}");
  double t0 = now_s();
  char *r = call(c, "fx_echo", args);
  double took = now_s() - t0;
  CHECK(contains(r, "has not read its stdin for 500 ms") && contains(r, "\"isError\":true"), "%.300s", r);
  CHECK(took < 10, "bounded (generous: valgrind, a loaded machine): %.2fs", took);
  free(r);
  r = call(c, "fx_echo", "{\"text\":\"x\"}");
  CHECK(contains(r, "\"isError\":true"), "the connection is failed, not half-written to: %s", r);
  free(r);
  free(args);
  tn_disconnect(c);
}

typedef struct {
  tn_client *c;
  const char *args;
  char *result;
  double took;
} big_call;

static void *big_call_thread(void *arg) {
  big_call *b = arg;
  double t0 = now_s();
  b->result = call(b->c, "fx_echo", b->args);
  b->took = now_s() - t0;
  return NULL;
}

/* A caller stuck writing to a child that does not read must not hold tn_disconnect (or itself)
 * for the server's whole timeout. */
static void test_disconnect_during_a_stuck_write_is_bounded(void) {
  tn_client *c = connect_one("\"--stop-reading-after-init\"", "\"timeout\":20000", NULL, NULL);
  size_t n = 512 * 1024;
  char *args = malloc(n + 32);
  strcpy(args, "{\"text\":\"");
  size_t head = strlen(args);
  memset(args + head, 'y', n);
  strcpy(args + head + n, "\"}");
  big_call b = {c, args, NULL, 0};
  pthread_t t;
  pthread_create(&t, NULL, big_call_thread, &b);
  sleep_ms(500);
  double t0 = now_s();
  tn_disconnect(c);
  double took = now_s() - t0;
  pthread_join(t, NULL);
  CHECK(took < 5, "disconnect bounded: %.2fs", took);
  CHECK(b.took < 6, "the stuck caller returned promptly: %.2fs", b.took);
  CHECK(contains(b.result, "ERR 5") || contains(b.result, "\"isError\":true"), "%.200s", b.result);
  free(b.result);
  free(args);
}

static void test_stdout_closed_but_running(void) {
  double t0 = now_s();
  tn_client *c = connect_one("\"--stdout-close-after-init\"", NULL, NULL, NULL);
  sleep_ms(700);
  char *r = call(c, "fx_echo", "{\"text\":\"x\"}");
  CHECK(contains(r, "the server closed its stdout") && contains(r, "\"isError\":true"), "%s", r);
  free(r);
  tn_disconnect(c);
  CHECK(now_s() - t0 < 6, "bounded");
}

/* ---------------------------------------------------------------- the resolver */

static void test_inline_accept_decline_cancel(void) {
  const char *answers[][2] = {
      {"{\"ok\":true,\"data\":{\"name\":\"Ada\",\"age\":36,\"color\":\"red\",\"subscribe\":true}}",
       "{\\\"action\\\":\\\"accept\\\",\\\"content\\\":{\\\"name\\\":\\\"Ada\\\",\\\"age\\\":36,\\\"color\\\":\\\"red\\\",\\\"subscribe\\\":true}}"},
      {"{\"ok\":false,\"reason\":\"declined\"}", "{\\\"action\\\":\\\"decline\\\"}"},
      {"{\"ok\":false,\"reason\":\"cancelled\"}", "{\\\"action\\\":\\\"cancel\\\"}"},
      {"{\"ok\":false}", "{\\\"action\\\":\\\"cancel\\\"}"},
  };
  for (int i = 0; i < 4; i++) {
    resolver_ctx x;
    ctx_init(&x, ANSWER, answers[i][0]);
    tn_client *c = connect_one("", NULL, resolver, &x);
    char *r = call(c, "fx_ask_form", NULL);
    CHECK(contains(r, answers[i][1]), "answer %d: %s", i, r);
    CHECK(x.calls == 1 && x.first_status == TN_OK, "resolver called once, answer taken");
    CHECK(strncmp(x.last_request, "{\"id\":\"elc-", 11) == 0 &&
              contains(x.last_request, "\",\"kind\":\"input\",\"prompt\":\"Who are you?\",\"data\":{\"schema\":{\"type\":\"object\""),
          "request: %s", x.last_request);
    free(r);
    tn_disconnect(c);
  }
}

static void test_url_mode(void) {
  resolver_ctx x;
  ctx_init(&x, ANSWER, "{\"ok\":true,\"data\":{\"ignored\":1}}");
  tn_client *c = connect_one("", NULL, resolver, &x);
  char *r = call(c, "fx_ask_url", "{\"url\":\"https://auth.test/x?y=1\"}");
  CHECK(contains(r, "\"output\":\"{\\\"action\\\":\\\"accept\\\"}\""), "URL-mode accept carries no content: %s", r);
  CHECK(contains(x.last_request, "\",\"kind\":\"authorization\",\"prompt\":\"Please authorize\",\"url\":\"https://auth.test/x?y=1\"}"),
        "%s", x.last_request);
  free(r);
  x.answer = "{\"ok\":false,\"reason\":\"declined\"}";
  r = call(c, "fx_ask_url", NULL);
  CHECK(contains(r, "{\\\"action\\\":\\\"decline\\\"}"), "%s", r);
  free(r);
  tn_disconnect(c);
}

static void test_deferred_answers(void) {
  resolver_ctx x;
  ctx_init(&x, DEFER_THREAD, "{\"ok\":true,\"data\":{\"name\":\"Later\"}}");
  x.delay_ms = 200;
  tn_client *c = connect_one("", NULL, resolver, &x);
  char *r = call(c, "fx_ask_form", NULL);
  CHECK(contains(r, "\\\"name\\\":\\\"Later\\\""), "deferred answer from another thread: %s", r);
  CHECK(wait_deferred(&x, 1), "the answering thread finished");
  CHECK(x.first_status == TN_OK && x.late_status == TN_ERR_CLOSED, "second answer refused (%d, %d)", x.first_status, x.late_status);
  free(r);
  /* answering before returning TN_DEFERRED is fine too */
  x.mode = ANSWER_THEN_DEFER;
  x.answer = "{\"ok\":false,\"reason\":\"declined\"}";
  r = call(c, "fx_ask_form", NULL);
  CHECK(contains(r, "{\\\"action\\\":\\\"decline\\\"}"), "%s", r);
  free(r);
  /* an invalid answer is refused and the responder stays open */
  x.mode = INVALID_THEN_VALID;
  x.answer = "{\"ok\":true,\"data\":{\"name\":\"Valid\"}}";
  r = call(c, "fx_ask_form", NULL);
  CHECK(x.late_status == TN_ERR_INVALID_ARGUMENT && x.first_status == TN_OK, "invalid then valid: %d %d", x.late_status, x.first_status);
  CHECK(contains(r, "\\\"name\\\":\\\"Valid\\\""), "%s", r);
  free(r);
  tn_disconnect(c);
}

/* What a host thread wrote before a call is seen by the resolver its question runs (on a
 * reader thread), and what the thread answering a deferred question wrote before answering is
 * seen by the caller once the call returns. The order runs through the server process; the
 * library makes it a happens-before (src/conn/mod.rs, `sent`). No lock here on purpose: under
 * ThreadSanitizer (scripts/test-races.sh) a missing edge is a report. */
typedef struct {
  int before_call, seen_by_resolver, before_answer, defer;
  tn_responder *r;
} order_ctx;

static void *order_answer(void *arg) {
  order_ctx *o = arg;
  tn_responder *r = o->r;
  o->before_answer = o->before_call * 10;
  tn_responder_answer(r, "{\"ok\":true,\"data\":{\"name\":\"Ordered\"}}");
  return NULL;
}

static int32_t order_resolver(void *ud, const char *req, tn_responder *r) {
  order_ctx *o = ud;
  (void)req;
  o->seen_by_resolver = o->before_call;
  if (!o->defer) return tn_responder_answer(r, "{\"ok\":true,\"data\":{\"name\":\"Ordered\"}}") == TN_OK ? TN_RESOLVED : 7;
  o->r = r;
  pthread_t t;
  if (pthread_create(&t, NULL, order_answer, o) != 0) return 7;
  pthread_detach(t);
  return TN_DEFERRED;
}

static void test_host_writes_are_ordered_through_the_server(void) {
  order_ctx o = {0};
  tn_client *c = connect_one("", NULL, order_resolver, &o);
  for (int i = 1; i <= 6; i++) {
    o.before_call = i;
    o.defer = i % 2;
    char *r = call(c, "fx_ask_form", NULL);
    CHECK(contains(r, "\\\"name\\\":\\\"Ordered\\\""), "%s", r);
    CHECK(o.seen_by_resolver == i, "the resolver saw %d, not %d", o.seen_by_resolver, i);
    if (o.defer) CHECK(o.before_answer == i * 10, "the caller saw %d, not %d", o.before_answer, i * 10);
    free(r);
  }
  tn_disconnect(c);
}

static void test_resolver_time_does_not_count_against_the_call(void) {
  resolver_ctx x;
  ctx_init(&x, ANSWER_SLOW, "{\"ok\":true,\"data\":{\"name\":\"Slow\"}}");
  x.delay_ms = 900;
  tn_client *c = connect_one("", "\"timeout\":300", resolver, &x);
  char *r = call(c, "fx_ask_form", NULL);
  CHECK(contains(r, "\\\"name\\\":\\\"Slow\\\""), "inline resolver for 900 ms, timeout 300 ms: %s", r);
  free(r);
  x.mode = DEFER_THREAD;
  x.delay_ms = 900;
  r = call(c, "fx_ask_form", NULL);
  CHECK(contains(r, "\\\"name\\\":\\\"Slow\\\""), "deferred for 900 ms: %s", r);
  CHECK(wait_deferred(&x, 1), "the answering thread finished");
  free(r);
  /* the pause ends with the answer: work after it is timed again */
  x.mode = ANSWER;
  r = call(c, "fx_elicit_then_slow", "{\"ms\":1500}");
  CHECK(contains(r, "timed out: no answer within 300 ms"), "%s", r);
  free(r);
  tn_disconnect(c);
}

static void test_elicitation_timeout_sends_cancel(void) {
  resolver_ctx x;
  ctx_init(&x, DEFER_NEVER, NULL);
  tn_client *c = connect_one("", "\"elicitationTimeout\":300", resolver, &x);
  double t0 = now_s();
  char *r = call(c, "fx_ask_form", NULL);
  CHECK(contains(r, "{\\\"action\\\":\\\"cancel\\\"}"), "never answered → cancel: %s", r);
  CHECK(now_s() - t0 < 1.5, "after elicitationTimeout (%.2fs)", now_s() - t0);
  CHECK(tn_responder_answer(x.kept, "{\"ok\":true}") == TN_ERR_CLOSED, "late answer refused");
  free(r);
  char *st = statuses(c);
  CHECK(contains(st, "\"lastElicitationError\":\"no answer within elicitationTimeout\""), "%s", st);
  free(st);
  /* an inline resolver that blocks past it: cancel goes out at once, its answer is ignored */
  x.mode = ANSWER_SLOW;
  x.delay_ms = 1200;
  x.answer = "{\"ok\":true,\"data\":{\"name\":\"TooLate\"}}";
  r = call(c, "fx_ask_form", NULL);
  CHECK(contains(r, "{\\\"action\\\":\\\"cancel\\\"}") && !contains(r, "TooLate"), "%s", r);
  CHECK(x.first_status == TN_ERR_CLOSED, "the blocked resolver's answer is refused: %d", x.first_status);
  free(r);
  tn_disconnect(c);
}

static void test_failing_resolvers_mean_cancel(void) {
  enum mode modes[] = {FAIL, NO_ANSWER};
  const char *why[] = {"the resolver failed (returned 7)", "the resolver returned TN_RESOLVED without answering"};
  for (int i = 0; i < 2; i++) {
    resolver_ctx x;
    ctx_init(&x, modes[i], NULL);
    tn_client *c = connect_one("", NULL, resolver, &x);
    char *r = call(c, "fx_ask_form", NULL);
    CHECK(contains(r, "{\\\"action\\\":\\\"cancel\\\"}"), "%s", r);
    free(r);
    char *st = statuses(c);
    CHECK(contains(st, why[i]), "reason recorded: %s", st);
    free(st);
    r = call(c, "fx_echo", "{\"text\":\"fine\"}");
    CHECK(contains(r, "fine"), "server goes on: %s", r);
    free(r);
    tn_disconnect(c);
  }
}

static void test_reentrancy(void) {
  resolver_ctx x;
  ctx_init(&x, REENTER, "{\"ok\":true,\"data\":{\"name\":\"R\"}}");
  char *s = server("", NULL);
  char *cfg = fmt("{\"mcpServers\":{\"fx\":%s,\"other\":%s}}", s, s);
  tn_client *c = connect_cfg(cfg, resolver, &x);
  x.client = c;
  x.reenter_tool = "fx_echo";
  char *r = call(c, "fx_ask_form", NULL);
  CHECK(x.reenter_status == TN_ERR_REENTRANT && contains(x.reenter_message, "inline resolver"),
        "same server from its own resolver: %d %s", x.reenter_status, x.reenter_message);
  CHECK(contains(r, "\\\"name\\\":\\\"R\\\""), "and the elicitation still completes: %s", r);
  free(r);
  x.reenter_tool = "other_echo";
  r = call(c, "fx_ask_form", NULL);
  CHECK(x.reenter_status == TN_OK && contains(x.reenter_message, "inner"), "another server is fine: %s", x.reenter_message);
  free(r);
  tn_disconnect(c);
  free(cfg); free(s);
}

static tn_client *disconnect_target;
static int32_t disconnect_inside(void *ud, const char *req, tn_responder *r) {
  (void)req;
  tn_disconnect(disconnect_target);
  const char *m = tn_last_error_message();
  *(int *)ud = m && contains(m, "inline resolver");
  tn_responder_answer(r, "{\"ok\":false,\"reason\":\"declined\"}");
  return TN_RESOLVED;
}

static void test_disconnect_inside_resolver_is_refused(void) {
  int refused = 0;
  tn_client *c = connect_one("", NULL, disconnect_inside, &refused);
  disconnect_target = c;
  char *r = call(c, "fx_ask_form", NULL);
  CHECK(refused, "tn_disconnect from inside the resolver sets TN_ERR_REENTRANT");
  CHECK(contains(r, "decline"), "%s", r);
  free(r);
  r = call(c, "fx_echo", "{\"text\":\"alive\"}");
  CHECK(contains(r, "alive"), "client still connected: %s", r);
  free(r);
  tn_disconnect(c);
}

static void test_server_requests_ping_and_unknown(void) {
  resolver_ctx x;
  ctx_init(&x, ANSWER, "{\"ok\":true}");
  for (int with = 0; with < 2; with++) {
    tn_client *c = connect_one("", NULL, with ? resolver : NULL, &x);
    char *r = call(c, "fx_ping_client", NULL);
    CHECK(contains(r, "\\\"result\\\":{}"), "ping answered: %s", r);
    free(r);
    r = call(c, "fx_unknown_request", NULL);
    CHECK(contains(r, "\\\"error\\\":{\\\"code\\\":-32601,\\\"message\\\":\\\"Method not found\\\"}"), "%s", r);
    free(r);
    if (!with) {
      r = call(c, "fx_ask_form", NULL);
      CHECK(contains(r, "elicitation error: {\\\"code\\\":-32601"), "no resolver: -32601, not a hang: %s", r);
      free(r);
    }
    tn_disconnect(c);
  }
}

static void test_sep1034_defaults_and_validation(void) {
  resolver_ctx x;
  ctx_init(&x, ANSWER, "{\"ok\":true,\"data\":{\"name\":\"Bo\"}}");
  tn_client *c = connect_one("", NULL, resolver, &x);
  char *r = call(c, "fx_ask_form", NULL);
  CHECK(contains(r, "{\\\"action\\\":\\\"accept\\\",\\\"content\\\":{\\\"name\\\":\\\"Bo\\\",\\\"age\\\":30,\\\"color\\\":\\\"green\\\"}}"),
        "defaults filled in: %s", r);
  free(r);
  const char *bad[][2] = {{"{\"ok\":true,\"data\":{\"age\":5}}", "required field `name` is missing"},
                          {"{\"ok\":true,\"data\":{\"name\":\"A\",\"age\":\"x\"}}", "field `age` must be integer"},
                          {"{\"ok\":true,\"data\":{\"name\":\"A\",\"color\":\"blue\"}}", "field `color` is not one of the allowed values"}};
  for (int i = 0; i < 3; i++) {
    x.answer = bad[i][0];
    r = call(c, "fx_ask_form", NULL);
    CHECK(contains(r, "{\\\"action\\\":\\\"cancel\\\"}"), "invalid content is sent as cancel: %s", r);
    free(r);
    char *st = statuses(c);
    CHECK(contains(st, bad[i][1]), "reason recorded: %s", st);
    free(st);
  }
  tn_disconnect(c);
}

/* ---------------------------------------------------------------- disconnect */

static void test_disconnect_leaves_no_process(void) {
  tn_client *c = connect_one("", NULL, NULL, NULL);
  char *r = call(c, "fx_pid", NULL);
  long pid = output_long(r);
  free(r);
  r = call(c, "fx_spawn_child", NULL);
  long grandchild = output_long(r);
  free(r);
  CHECK(pid > 1 && grandchild > 1 && pid_alive(pid) && pid_alive(grandchild), "pids %ld %ld", pid, grandchild);
  double t0 = now_s();
  tn_disconnect(c);
  double took = now_s() - t0;
  sleep_ms(100);
  CHECK(!pid_alive(pid), "server gone (and reaped: no zombie)");
  CHECK(!pid_alive(grandchild), "its process group is gone too");
  CHECK(took < 3, "disconnect bounded: %.2fs", took);
}

static void test_disconnect_escalates_to_sigkill(void) {
  tn_client *c = connect_one("\"--ignore-stdin-eof\",\"--ignore-sigterm\"", NULL, NULL, NULL);
  char *r = call(c, "fx_pid", NULL);
  long pid = output_long(r);
  free(r);
  double t0 = now_s();
  tn_disconnect(c);
  double took = now_s() - t0;
  CHECK(!pid_alive(pid), "killed");
#ifdef _WIN32
  /* no signal to ask with on Windows: the ask is stdin's end, then the job is terminated */
  CHECK(took > 1.5 && took < 5, "stdin close, 2 s, TerminateJobObject: %.2fs", took);
#else
  CHECK(took > 2.5 && took < 5, "stdin close, 2 s, SIGTERM, 1 s, SIGKILL: %.2fs", took);
#endif
}

static void *ask_thread(void *arg) {
  call_job *j = arg;
  j->result = call(j->c, "fx_ask_form", NULL);
  return NULL;
}

static void test_disconnect_cancels_deferred_and_wakes_callers(void) {
  resolver_ctx x;
  ctx_init(&x, DEFER_NEVER, NULL);
  tn_client *c = connect_one("", NULL, resolver, &x);
  call_job j = {c, NULL, NULL, NULL, 0, 0};
  pthread_t t;
  pthread_create(&t, NULL, ask_thread, &j);
  for (int i = 0; i < 200 && kept(&x) == NULL; i++) sleep_ms(10);
  CHECK(kept(&x) != NULL, "resolver got the request");
  double t0 = now_s();
  tn_disconnect(c);
  pthread_join(t, NULL);
  CHECK(now_s() - t0 < 3, "bounded");
  CHECK(contains(j.result, "ERR 5") || contains(j.result, "\"isError\":true"), "in-flight call ended: %s", j.result);
  CHECK(tn_responder_answer(x.kept, "{\"ok\":true}") == TN_ERR_CLOSED, "deferred responder was cancelled");
  free(j.result);
}

typedef struct {
  tn_client *c;
  int ok, closed, other;
} race_job;

static void *race_thread(void *arg) {
  race_job *j = arg;
  for (int i = 0; i < 100000; i++) {
    char *out = NULL;
    tn_status st = tn_call_tool(j->c, "fx_echo", "{\"text\":\"r\"}", &out);
    tn_string_free(out);
    if (st == TN_OK) j->ok++;
    else if (st == TN_ERR_CLOSED) { j->closed++; break; }
    else { j->other++; break; }
  }
  return NULL;
}

static void test_calls_racing_disconnect(void) {
  tn_client *c = connect_one("", NULL, NULL, NULL);
  race_job jobs[8];
  pthread_t th[8];
  for (int i = 0; i < 8; i++) {
    jobs[i] = (race_job){c, 0, 0, 0};
    pthread_create(&th[i], NULL, race_thread, &jobs[i]);
  }
  sleep_ms(150);
  tn_disconnect(c);
  int ok = 0, closed = 0, other = 0;
  for (int i = 0; i < 8; i++) {
    pthread_join(th[i], NULL);
    ok += jobs[i].ok;
    closed += jobs[i].closed;
    other += jobs[i].other;
  }
  CHECK(ok > 0 && closed == 8 && other == 0, "ok %d closed %d other %d", ok, closed, other);
}

#ifdef _WIN32
/* ---------------------------------------------------------------- Windows (under Wine) */

/* A directory of its own for the launchers, with forward slashes (it goes into JSON). */
static const char *launcher_dir(void) {
  static char dir[MAX_PATH];
  if (!dir[0]) {
    char tmp[MAX_PATH];
    GetTempPathA(sizeof tmp, tmp);
    snprintf(dir, sizeof dir, "%stn-launchers-%lu", tmp, (unsigned long)GetCurrentProcessId());
    CreateDirectoryA(dir, NULL);
    for (char *p = dir; *p; p++)
      if (*p == '\\') *p = '/';
  }
  return dir;
}

static void write_launcher(const char *name, const char *body) {
  char *path = fmt("%s/%s", launcher_dir(), name);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL, "cannot write %s", path);
  if (f) {
    fputs(body, f);
    fclose(f);
  }
  free(path);
}

/* {"mcpServers":{"fx":{"command":[<command>],"env":{"PATH":"<launchers>;<PATH>"}}}} */
static char *launcher_cfg(const char *command, const char *extra) {
  const char *path = getenv("PATH");
  char *escaped = malloc(2 * strlen(path ? path : "") + 1), *o = escaped;
  for (const char *p = path ? path : ""; *p; p++) {
    if (*p == '\\' || *p == '"') *o++ = '\\';
    *o++ = *p;
  }
  *o = 0;
  char *cfg = fmt("{\"mcpServers\":{\"fx\":{\"command\":[%s],\"env\":{\"PATH\":\"%s;%s\"}%s%s}}}", command,
                  launcher_dir(), escaped, extra ? "," : "", extra ? extra : "");
  free(escaped);
  return cfg;
}

/* `npx`, `uvx` and most MCP launchers are .cmd files: found through PATH and PATHEXT by their
 * bare name, started through cmd.exe, and everything they start is in the server's job, so it
 * dies with the connection (a real server under `npx` is node.exe under cmd.exe). */
static void test_cmd_launcher_found_and_its_tree_ends(void) {
  char *body = fmt("@echo off\r\n\"%s\" %%*\r\n", fixture());
  write_launcher("tnfx.cmd", body);
  free(body);
  char *cfg = launcher_cfg("\"tnfx\"", NULL);
  tn_client *c = connect_cfg(cfg, NULL, NULL);
  free(cfg);
  char *r = call(c, "fx_echo", "{\"text\":\"through cmd\"}");
  CHECK(contains(r, "\"output\":\"through cmd\""), "%s", r);
  free(r);
  r = call(c, "fx_pid", NULL);
  long pid = output_long(r);
  free(r);
  r = call(c, "fx_spawn_child", NULL);
  long grandchild = output_long(r);
  free(r);
  CHECK(pid > 0 && grandchild > 0 && tn_pid_alive(pid) && tn_pid_alive(grandchild), "pids %ld %ld", pid, grandchild);
  double t0 = now_s();
  tn_disconnect(c);
  CHECK(now_s() - t0 < 5, "disconnect bounded: %.2fs", now_s() - t0);
  sleep_ms(200);
  CHECK(!tn_pid_alive(pid), "the server under cmd.exe is gone");
  CHECK(!tn_pid_alive(grandchild), "and its child too");
}

/* Arguments reach a .cmd intact, cmd.exe's metacharacters included (escaped for cmd.exe as
 * Rust's std does since the BatBadBut fix), and its stderr and exit status are in the failure. */
static void test_cmd_launcher_arguments_stderr_and_exit_code(void) {
  write_launcher("tnfail.bat", "@echo off\r\necho launcher got [%1] [%2] 1>&2\r\nexit /b 3\r\n");
  char *cfg = launcher_cfg("\"tnfail\",\"x&y z\",\"a|b\"", NULL);
  tn_client *c = connect_cfg(cfg, NULL, NULL);
  free(cfg);
  char *st = statuses(c);
  CHECK(contains(st, "server `fx` failed during `initialize`: the server process exited with status 3; "
                     "stderr: launcher got [\\\"x&y z\\\"] [\\\"a|b\\\"]"),
        "%s", st);
  free(st);
  tn_disconnect(c);
}

static long kill_target;
static void *kill_later(void *arg) {
  (void)arg;
  sleep_ms(300);
  HANDLE h = OpenProcess(PROCESS_TERMINATE, FALSE, (DWORD)kill_target);
  if (h) {
    TerminateProcess(h, 137);
    CloseHandle(h);
  }
  return NULL;
}

/* A server killed from outside while a call waits on it: the call fails at once with the exit
 * status, and the connection says so afterwards. */
static void test_server_killed_mid_call(void) {
  /* "restart": false: the dead server stays dead for the last check (restarts: live.c). */
  tn_client *c = connect_one("", "\"restart\":false", NULL, NULL);
  char *r = call(c, "fx_pid", NULL);
  kill_target = output_long(r);
  free(r);
  pthread_t t;
  pthread_create(&t, NULL, kill_later, NULL);
  double t0 = now_s();
  r = call(c, "fx_slow", "{\"ms\":20000}");
  double took = now_s() - t0;
  pthread_join(t, NULL);
  CHECK(contains(r, "the server process exited with status 137") && contains(r, "\"isError\":true"), "%s", r);
  CHECK(took < 5, "failed at once: %.2fs", took);
  free(r);
  r = call(c, "fx_echo", "{\"text\":\"x\"}");
  CHECK(contains(r, "exited with status 137"), "%s", r);
  free(r);
  tn_disconnect(c);
}
#endif

int main(int argc, char **argv) {
  static const tn_test tests[] = {
      {"statuses_order_and_tools", test_statuses_order_and_tools},
      {"config_errors_name_the_key", test_config_errors_name_the_key},
      {"collisions_first_server_wins", test_collisions_first_server_wins},
      {"allowlist", test_allowlist},
      {"initialize_params", test_initialize_params},
      {"protocol_versions", test_protocol_versions},
      {"pagination", test_pagination},
      {"startup_failures", test_startup_failures},
#ifndef _WIN32 /* sh: on Windows the .cmd launcher tests quote a stderr tail instead */
      {"silent_server_failure_quotes_stderr", test_silent_server_failure_quotes_stderr},
#endif
      {"servers_start_in_parallel", test_servers_start_in_parallel},
      {"results_are_shaped", test_results_are_shaped},
      {"timeout_cancels_and_server_lives_on", test_timeout_cancels_and_server_lives_on},
      {"crash_fails_calls_at_once", test_crash_fails_calls_at_once},
      {"crash_with_calls_in_flight", test_crash_with_calls_in_flight},
      {"32_threads_200_calls_4_servers", test_32_threads_200_calls_4_servers},
      {"chatty_stderr_never_blocks", test_chatty_stderr_never_blocks},
      {"junk_lines_are_skipped_and_counted", test_junk_lines_are_skipped_and_counted},
      {"line_longer_than_max_fails_the_connection", test_line_longer_than_max_fails_the_connection},
      {"sigpipe_never_kills_the_host", test_sigpipe_never_kills_the_host},
      {"server_that_stops_reading_cannot_hang_a_call", test_server_that_stops_reading_cannot_hang_a_call},
      {"disconnect_during_a_stuck_write_is_bounded", test_disconnect_during_a_stuck_write_is_bounded},
      {"stdout_closed_but_running", test_stdout_closed_but_running},
      {"inline_accept_decline_cancel", test_inline_accept_decline_cancel},
      {"url_mode", test_url_mode},
      {"deferred_answers", test_deferred_answers},
      {"host_writes_are_ordered_through_the_server", test_host_writes_are_ordered_through_the_server},
      {"resolver_time_does_not_count_against_the_call", test_resolver_time_does_not_count_against_the_call},
      {"elicitation_timeout_sends_cancel", test_elicitation_timeout_sends_cancel},
      {"failing_resolvers_mean_cancel", test_failing_resolvers_mean_cancel},
      {"reentrancy", test_reentrancy},
      {"disconnect_inside_resolver_is_refused", test_disconnect_inside_resolver_is_refused},
      {"server_requests_ping_and_unknown", test_server_requests_ping_and_unknown},
      {"sep1034_defaults_and_validation", test_sep1034_defaults_and_validation},
      {"disconnect_leaves_no_process", test_disconnect_leaves_no_process},
      {"disconnect_escalates_to_sigkill", test_disconnect_escalates_to_sigkill},
      {"disconnect_cancels_deferred_and_wakes_callers", test_disconnect_cancels_deferred_and_wakes_callers},
      {"calls_racing_disconnect", test_calls_racing_disconnect},
#ifdef _WIN32
      {"cmd_launcher_found_and_its_tree_ends", test_cmd_launcher_found_and_its_tree_ends},
      {"cmd_launcher_arguments_stderr_and_exit_code", test_cmd_launcher_arguments_stderr_and_exit_code},
      {"server_killed_mid_call", test_server_killed_mid_call},
#endif
  };
  return run_tests(tests, sizeof tests / sizeof *tests, argc, argv);
}
