/* Long-lived hosts through the C ABI, against tests/fixture-server: a stdio server
 * killed with SIGKILL mid-session is restarted (the call in flight fails naming the exit, the
 * event says so, the next call succeeds, names unchanged, nothing left after disconnect); a
 * server that crashes at every start is `failed` after its attempts; a restarted server keeps its
 * era and its list changes (legacy and MCP 2026-07-28); tool-list changes over
 * stdio in both eras (events, tn_list_tools, the removed tool's NOT_FOUND); log messages at and
 * above logLevel; MCP 2026-07-28 ttlMs; the event callback's thread, re-entrancy and its
 * bounded queue; and the soak (`live soak N`): N calls across three servers (stdio, stdio,
 * HTTP) while one is killed every 2 s and another changes its tool list, with no lost call,
 * no leaked child or thread, memory flat. */
#include "check.h"
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* ---------------------------------------------------------------- events */

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  char **items;
  int n, cap;
  int slow_ms;          /* each callback sleeps this long */
  tn_client *client;    /* for the calls made from inside the callback */
  int inside_checked;
  tn_status inside_list, inside_disconnect_err;
  pthread_t thread;
  int threads_seen;     /* callbacks on a thread other than the first one's */
} events;

static void ev_init(events *e) {
  memset(e, 0, sizeof *e);
  pthread_mutex_init(&e->lock, NULL);
  pthread_cond_init(&e->changed, NULL);
}

static void ev_free(events *e) {
  for (int i = 0; i < e->n; i++) free(e->items[i]);
  free(e->items);
}

static void on_event(void *ud, const char *json) {
  events *e = ud;
  if (e->slow_ms) {
    struct timespec t = {e->slow_ms / 1000, (long)(e->slow_ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
  }
  pthread_mutex_lock(&e->lock);
  if (e->n == 0) e->thread = pthread_self();
  else if (!pthread_equal(e->thread, pthread_self())) e->threads_seen++;
  if (e->n == e->cap) {
    e->cap = e->cap ? e->cap * 2 : 64;
    e->items = realloc(e->items, sizeof(char *) * (size_t)e->cap);
  }
  e->items[e->n++] = strdup(json);
  int check = e->client && !e->inside_checked;
  e->inside_checked = 1;
  pthread_cond_broadcast(&e->changed);
  pthread_mutex_unlock(&e->lock);
  if (check) {
    /* What the callback may call: reading the client yes, disconnecting it no. */
    char *out = NULL;
    e->inside_list = tn_list_tools(e->client, &out);
    tn_string_free(out);
    tn_disconnect(e->client);
    const char *m = tn_last_error_message();
    e->inside_disconnect_err = contains(m, "would deadlock") ? TN_ERR_REENTRANT : TN_OK;
  }
}

/* Waits until an event contains every one of the (NULL-terminated) needles; returns it
 * (malloc'd) or NULL after `within` seconds. Events before index *from are skipped, and *from
 * moves past the match. */
static char *ev_wait(events *e, int *from, double within, ...) {
  double deadline = now_s() + within;
  pthread_mutex_lock(&e->lock);
  for (;;) {
    for (int i = *from; i < e->n; i++) {
      va_list ap;
      va_start(ap, within);
      int all = 1;
      for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
        all &= contains(e->items[i], s);
      va_end(ap);
      if (all) {
        *from = i + 1;
        char *r = strdup(e->items[i]);
        pthread_mutex_unlock(&e->lock);
        return r;
      }
    }
    if (now_s() >= deadline) break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&e->changed, &e->lock, &ts);
  }
  pthread_mutex_unlock(&e->lock);
  return NULL;
}

static char *ev_dump(events *e) {
  pthread_mutex_lock(&e->lock);
  size_t len = 1;
  for (int i = 0; i < e->n; i++) len += strlen(e->items[i]) + 1;
  char *s = malloc(len);
  s[0] = 0;
  for (int i = 0; i < e->n; i++) { strcat(s, e->items[i]); strcat(s, "\n"); }
  pthread_mutex_unlock(&e->lock);
  return s;
}

/* ---------------------------------------------------------------- helpers */

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static tn_client *connect_cfg(const char *cfg, events *e) {
  tn_client *c = NULL;
  tn_status st = tn_connect(cfg, NULL, NULL, &c);
  CHECK(st == TN_OK, "tn_connect: %d %s", st, tn_last_error_message());
  if (e) CHECK(tn_set_event_callback(c, on_event, e) == TN_OK, "%s", tn_last_error_message());
  return c;
}

/* One fixture server "fx" with `args` (JSON strings, comma-separated) and `extra` keys. */
static tn_client *connect_fx(const char *args, const char *extra, events *e) {
  char *cfg = fmt("{\"mcpServers\":{\"fx\":{\"command\":[\"%s\"%s%s]%s%s}}}", fixture(),
                  *args ? "," : "", args, *extra ? "," : "", extra);
  tn_client *c = connect_cfg(cfg, e);
  free(cfg);
  return c;
}

static int pid_of(tn_client *c, const char *tool) {
  char *r = call(c, tool, "{}");
  const char *p = strstr(r, "\"output\":\"");
  int pid = p ? atoi(p + 10) : 0;
  free(r);
  return pid;
}

static int alive(int pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

/* Children of this process still alive (zombies included). */
static int children_now(void) {
  DIR *d = opendir("/proc");
  int n = 0, me = getpid();
  struct dirent *ent;
  while (d && (ent = readdir(d))) {
    int pid = atoi(ent->d_name);
    if (pid <= 0) continue;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    char *rp = strrchr(buf, ')');
    int ppid = 0;
    char state = 0;
    /* A sanitizer's symbolizer (started at the first report it symbolizes, a suppressed one
     * too) is the runtime's child, not the library's. */
    if (rp && sscanf(rp + 2, "%c %d", &state, &ppid) == 2 && ppid == me && !strstr(buf, "(llvm-symbolizer")) n++;
  }
  if (d) closedir(d);
  return n;
}

static int threads_now(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  struct dirent *ent;
  while (d && (ent = readdir(d))) if (ent->d_name[0] != '.') n++;
  if (d) closedir(d);
  return n;
}

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, res = 0;
  if (f) { if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0; fclose(f); }
  return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The names of the tools of tn_list_tools, in order ("a,b,c"). */
static char *tool_names(tn_client *c) {
  char *t = tools(c);
  size_t cap = strlen(t) + 1;
  char *out = calloc(1, cap);
  for (const char *p = t; (p = strstr(p, "{\"name\":\"")); ) {
    p += 9;
    const char *q = strchr(p, '"');
    if (!q) break;
    if (*out) strcat(out, ",");
    strncat(out, p, (size_t)(q - p));
    p = q;
  }
  free(t);
  return out;
}

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int done;
  char *result;
} rec;

static void on_done(void *ud, tn_status st, const char *result) {
  rec *r = ud;
  pthread_mutex_lock(&r->lock);
  r->result = st == TN_OK ? strdup(result) : fmt("ERR %d", st);
  r->done = 1;
  pthread_cond_broadcast(&r->cond);
  pthread_mutex_unlock(&r->lock);
}

static int wait_rec(rec *r, double within) {
  double deadline = now_s() + within;
  pthread_mutex_lock(&r->lock);
  while (!r->done && now_s() < deadline) {
    pthread_mutex_unlock(&r->lock);
    sleep_ms(5);
    pthread_mutex_lock(&r->lock);
  }
  int d = r->done;
  pthread_mutex_unlock(&r->lock);
  return d;
}

/* ---------------------------------------------------------------- restart */

static void sigkill_mid_session_restarts_the_server(void) {
  int kids0 = children_now();
  events e;
  ev_init(&e);
  tn_client *c = connect_fx("", "\"restart\":{\"backoffMs\":100}", &e);
  char *names0 = tool_names(c);
  int pid = pid_of(c, "fx_pid");
  CHECK(alive(pid), "pid %d", pid);
  rec r = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL};
  CHECK(tn_call_tool_async(c, "fx_slow", "{\"ms\":20000}", NULL, on_done, NULL, &r, NULL) == TN_OK,
        "%s", tn_last_error_message());
  sleep_ms(200);
  double t0 = now_s();
  kill(pid, SIGKILL);
  CHECK(wait_rec(&r, 5), "the call in flight ends");
  CHECK(now_s() - t0 < 2.0, "at once: %.2fs", now_s() - t0);
  CHECK(contains(r.result, "server `fx`: tools/call `slow` failed: the server process was killed by signal 9") &&
            contains(r.result, "\"isError\":true"),
        "in flight, not re-sent: %s", r.result);
  int from = 0;
  char *ev = ev_wait(&e, &from, 10, "\"type\":\"status\"", "\"status\":\"restarting\"", "\"attempt\":1",
                     "\"delayMs\":", "killed by signal 9", NULL);
  CHECK(ev != NULL, "a restarting event: %s", ev_dump(&e));
  CHECK(contains(ev, "\"server\":\"fx\"") && contains(ev, "\"lastExit\":\"was killed by signal 9\""), "%s", ev);
  free(ev);
  /* The next call waits for the restart within its own timeout and succeeds. */
  char *res = call(c, "fx_echo", "{\"text\":\"back\"}");
  CHECK(contains(res, "\"output\":\"back\",\"isError\":false"), "%s", res);
  free(res);
  ev = ev_wait(&e, &from, 10, "\"status\":\"connected\"", "\"restarts\":1", NULL);
  CHECK(ev != NULL, "a connected event: %s", ev_dump(&e));
  free(ev);
  int pid2 = pid_of(c, "fx_pid");
  CHECK(pid2 != pid && alive(pid2) && !alive(pid), "a new child %d (old %d gone)", pid2, pid);
  char *names1 = tool_names(c);
  CHECK(strcmp(names0, names1) == 0, "names unchanged:\n%s\n%s", names0, names1);
  char *st = statuses(c);
  CHECK(contains(st, "\"status\":\"connected\"") && contains(st, "\"restarts\":1") &&
            contains(st, "\"lastExit\":\"was killed by signal 9\"") && contains(st, "\"toolsRefreshedAtMs\":"),
        "%s", st);
  free(st);
  tn_disconnect(c);
  CHECK(!alive(pid2), "nothing left after disconnect (%d)", pid2);
  CHECK(children_now() == kids0, "no child left: %d (was %d)", children_now(), kids0);
  free(names0);
  free(names1);
  free(r.result);
  ev_free(&e);
}

static void a_server_that_crashes_at_every_start_is_failed_in_bounded_time(void) {
  char flag[] = "/tmp/tn-live-crash-XXXXXX";
  int fd = mkstemp(flag);
  close(fd);
  unlink(flag);
  events e;
  ev_init(&e);
  char *args = fmt("\"--crash-at-start-if\",\"%s\"", flag);
  tn_client *c = connect_fx(args, "\"restart\":{\"maxAttempts\":3,\"backoffMs\":50}", &e);
  free(args);
  fd = open(flag, O_CREAT | O_WRONLY, 0600);
  close(fd);
  double t0 = now_s();
  char *r = call(c, "fx_crash", "{\"code\":4}");
  CHECK(contains(r, "exited with status 4"), "%s", r);
  free(r);
  int from = 0;
  char *ev = ev_wait(&e, &from, 20, "\"status\":\"failed\"", NULL);
  double took = now_s() - t0;
  CHECK(ev != NULL, "a failed event: %s", ev_dump(&e));
  CHECK(took < 10.0, "bounded: %.2fs", took);
  CHECK(contains(ev, "fixture: crashing at start") && contains(ev, "gave up after 3 restart attempts"), "%s", ev);
  free(ev);
  char *all = ev_dump(&e);
  CHECK(contains(all, "\"attempt\":1") && contains(all, "\"attempt\":2") && contains(all, "\"attempt\":3") &&
            !contains(all, "\"attempt\":4"),
        "three attempts: %s", all);
  free(all);
  char *st = statuses(c);
  CHECK(contains(st, "\"fx\":{\"status\":\"failed\",\"error\":\"server `fx` failed during") &&
            contains(st, "crashing at start"),
        "%s", st);
  free(st);
  /* A later call tries once more: still crashing, it says why, and nothing was sent. */
  r = call(c, "fx_echo", "{\"text\":\"x\"}");
  CHECK(contains(r, "server `fx`: tools/call `echo` was not sent: ") && contains(r, "crashing at start") &&
            contains(r, "\"isError\":true"),
        "%s", r);
  free(r);
  /* Once it can start, the next call brings it back. */
  unlink(flag);
  r = call(c, "fx_echo", "{\"text\":\"up again\"}");
  CHECK(contains(r, "\"output\":\"up again\",\"isError\":false"), "%s", r);
  free(r);
  tn_disconnect(c);
  ev_free(&e);
}

static void restart_false_leaves_a_dead_server_dead(void) {
  events e;
  ev_init(&e);
  tn_client *c = connect_fx("", "\"restart\":false", &e);
  char *r = call(c, "fx_crash", "{\"code\":5}");
  free(r);
  int from = 0;
  char *ev = ev_wait(&e, &from, 5, "\"status\":\"failed\"", "exited with status 5", NULL);
  CHECK(ev != NULL, "%s", ev_dump(&e));
  free(ev);
  sleep_ms(300);
  r = call(c, "fx_echo", "{\"text\":\"x\"}");
  CHECK(contains(r, "exited with status 5") && contains(r, "\"isError\":true"), "%s", r);
  free(r);
  char *all = ev_dump(&e);
  CHECK(!contains(all, "restarting"), "%s", all);
  free(all);
  tn_disconnect(c);
  ev_free(&e);
}

/* A restarted server is spoken to in the era it had, and its tool-list changes still arrive (in
 * MCP 2026-07-28 on a new subscriptions/listen of the new child). */
static void restarted_in_its_era(const char *args, const char *era, const char *version) {
  events e;
  ev_init(&e);
  tn_client *c = connect_fx(args, "\"restart\":{\"backoffMs\":50}", &e);
  char *st = statuses(c);
  CHECK(contains(st, era) && contains(st, version), "%s: %s", era, st);
  free(st);
  char *names0 = tool_names(c);
  int pid = pid_of(c, "fx_pid");
  kill(pid, SIGKILL);
  int from = 0;
  char *ev = ev_wait(&e, &from, 10, "\"status\":\"connected\"", "\"restarts\":1", NULL);
  CHECK(ev != NULL, "%s: %s", era, ev_dump(&e));
  free(ev);
  st = statuses(c);
  CHECK(contains(st, era) && contains(st, version) && contains(st, "\"restarts\":1"), "%s after: %s", era, st);
  free(st);
  char *names1 = tool_names(c);
  CHECK(strcmp(names0, names1) == 0, "%s: names unchanged", era);
  int pid2 = pid_of(c, "fx_pid");
  CHECK(pid2 != pid && alive(pid2), "%s: a new child", era);
  char *r = call(c, "fx_toggle_tool", "{\"on\":true}");
  CHECK(contains(r, "live_extra on"), "%s: %s", era, r);
  free(r);
  ev = ev_wait(&e, &from, 10, "\"type\":\"tools\"", "\"added\":[\"fx_live_extra\"]", NULL);
  CHECK(ev != NULL, "%s: the restarted server's list change: %s", era, ev_dump(&e));
  free(ev);
  r = call(c, "fx_live_extra", "{}");
  CHECK(contains(r, "\"output\":\"live_extra ok\""), "%s: %s", era, r);
  free(r);
  tn_disconnect(c);
  CHECK(!alive(pid2), "%s: nothing left", era);
  free(names0);
  free(names1);
  ev_free(&e);
}

static void a_restarted_server_keeps_its_era_and_its_list_changes(void) {
  restarted_in_its_era("\"--live\"", "\"era\":\"legacy\"", "\"protocolVersion\":\"2025-11-25\"");
  restarted_in_its_era("\"--live\",\"--modern\"", "\"era\":\"modern\"", "\"protocolVersion\":\"2026-07-28\"");
}

/* ---------------------------------------------------------------- tool-list changes */

static void list_changes(const char *args, const char *what, const char *count) {
  events e;
  ev_init(&e);
  tn_client *c = connect_fx(args, "", &e);
  char *t = tools(c);
  CHECK(!contains(t, "\"fx_live_extra\"") && contains(t, "\"fx_toggle_tool\""), "%s: %s", what, t);
  free(t);
  char *r = call(c, "fx_toggle_tool", "{\"on\":true}");
  CHECK(contains(r, "live_extra on"), "%s: %s", what, r);
  free(r);
  int from = 0;
  char *ev = ev_wait(&e, &from, 10, "\"type\":\"tools\"", NULL);
  CHECK(ev && strcmp(ev, "{\"type\":\"tools\",\"server\":\"fx\",\"added\":[\"fx_live_extra\"],\"removed\":[],\"changed\":[]}") == 0,
        "%s: %s", what, ev ? ev : ev_dump(&e));
  free(ev);
  t = tools(c);
  CHECK(contains(t, "{\"name\":\"fx_live_extra\",\"description\":\"Listed while toggled on\""), "%s: %s", what, t);
  free(t);
  r = call(c, "fx_live_extra", "{}");
  CHECK(contains(r, "\"output\":\"live_extra ok\",\"isError\":false"), "%s: %s", what, r);
  free(r);
  r = call(c, "fx_toggle_tool", "{\"on\":false}");
  free(r);
  ev = ev_wait(&e, &from, 10, "\"type\":\"tools\"", "\"removed\":[\"fx_live_extra\"]", NULL);
  CHECK(ev != NULL, "%s: %s", what, ev_dump(&e));
  free(ev);
  t = tools(c);
  CHECK(!contains(t, "fx_live_extra"), "%s: %s", what, t);
  free(t);
  char *out = NULL;
  tn_status st = tn_call_tool(c, "fx_live_extra", "{}", &out);
  CHECK(st == TN_ERR_NOT_FOUND && out == NULL, "%s: %d", what, st);
  CHECK(contains(tn_last_error_message(),
                 "no tool named `fx_live_extra`: server `fx` removed it (its tool list changed)"),
        "%s: %s", what, tn_last_error_message());
  char *s = statuses(c);
  CHECK(contains(s, "\"toolsRefreshedAtMs\":") && contains(s, count), "%s: %s", what, s);
  free(s);
  tn_disconnect(c);
  ev_free(&e);
}

static void list_changed_over_stdio(void) { list_changes("\"--live\"", "legacy stdio", "\"tools\":31"); }
static void list_changed_over_modern_stdio(void) {
  list_changes("\"--live\",\"--modern\"", "modern stdio (subscriptions/listen)", "\"tools\":40");
}

/* ---------------------------------------------------------------- log messages */

static void logs(const char *args, const char *what) {
  events e;
  ev_init(&e);
  tn_client *c = connect_fx(args, "\"logLevel\":\"warning\"", &e);
  char *r = call(c, "fx_log", "{\"level\":\"info\",\"message\":\"quiet\"}");
  CHECK(contains(r, "not logged info"), "%s: the server was asked for warning and above: %s", what, r);
  free(r);
  r = call(c, "fx_log", "{\"level\":\"warning\",\"message\":\"careful\"}");
  free(r);
  r = call(c, "fx_log", "{\"level\":\"error\",\"logger\":\"db\",\"message\":\"boom\"}");
  free(r);
  int from = 0;
  char *ev = ev_wait(&e, &from, 5, "\"type\":\"log\"", "boom", NULL);
  CHECK(ev && strcmp(ev, "{\"type\":\"log\",\"server\":\"fx\",\"level\":\"error\",\"logger\":\"db\",\"data\":\"boom\"}") == 0,
        "%s: %s", what, ev ? ev : ev_dump(&e));
  free(ev);
  char *all = ev_dump(&e);
  CHECK(contains(all, "\"level\":\"warning\"") && !contains(all, "quiet"), "%s: %s", what, all);
  free(all);
  tn_disconnect(c);
  ev_free(&e);
}

static void log_messages_at_and_above_the_level(void) { logs("\"--live\"", "legacy (logging/setLevel)"); }
static void log_messages_modern(void) { logs("\"--live\",\"--modern\"", "modern (_meta logLevel)"); }

/* A server that ignores the level asked: the client filters. */
static void log_messages_are_filtered_by_the_client_too(void) {
  events e;
  ev_init(&e);
  tn_client *c = connect_fx("\"--hardening-tools\"", "\"logLevel\":\"warning\"", &e);
  char *r = call(c, "fx_notify_then_echo", "{\"text\":\"x\"}"); /* an info message */
  free(r);
  r = call(c, "fx_echo", "{\"text\":\"y\"}");
  free(r);
  sleep_ms(100);
  char *all = ev_dump(&e);
  CHECK(!contains(all, "\"type\":\"log\""), "info is below warning: %s", all);
  free(all);
  char *st = statuses(c);
  CHECK(contains(st, "logLevel: the server did not take logging/setLevel"), "%s", st);
  free(st);
  tn_disconnect(c);
  ev_free(&e);
}

/* ---------------------------------------------------------------- ttlMs */

static int count_lines(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  int n = 0;
  char line[8192];
  while (f && fgets(line, sizeof line, f)) n += contains(line, needle);
  if (f) fclose(f);
  return n;
}

static void ttl_is_honoured(void) {
  char log[] = "/tmp/tn-live-ttl-XXXXXX";
  int fd = mkstemp(log);
  close(fd);
  char *args = fmt("\"--modern\",\"--ttl-ms\",\"600\",\"--log\",\"%s\"", log);
  tn_client *c = connect_fx(args, "", NULL);
  free(args);
  const char *list = "\"rpc\":\"tools/list\"";
  CHECK(count_lines(log, list) == 1, "listed at connect: %d", count_lines(log, list));
  char *t = tools(c);
  free(t);
  t = tools(c);
  free(t);
  CHECK(count_lines(log, list) == 1, "fresh: not listed again: %d", count_lines(log, list));
  sleep_ms(800);
  t = tools(c);
  CHECK(contains(t, "\"fx_echo\""), "%s", t);
  free(t);
  CHECK(count_lines(log, list) == 2, "stale: listed again once: %d", count_lines(log, list));
  t = tools(c);
  free(t);
  CHECK(count_lines(log, list) == 2, "fresh again: %d", count_lines(log, list));
  tn_disconnect(c);
  unlink(log);
}

/* ---------------------------------------------------------------- the callback */

static void the_callback_runs_on_one_thread_and_may_read_but_not_disconnect(void) {
  events e;
  ev_init(&e);
  tn_client *c = connect_fx("\"--live\"", "", NULL);
  e.client = c;
  CHECK(tn_set_event_callback(c, on_event, &e) == TN_OK, "%s", tn_last_error_message());
  CHECK(tn_set_event_callback(NULL, on_event, &e) == TN_ERR_INVALID_ARGUMENT, "NULL client");
  /* One change at a time (changes that come faster coalesce into one listing). */
  int from = 0;
  for (int i = 0; i < 4; i++) {
    char *r = call(c, "fx_toggle_tool", "{}");
    free(r);
    char *ev = ev_wait(&e, &from, 10, "\"type\":\"tools\"", NULL);
    CHECK(ev != NULL, "change %d: %s", i, ev_dump(&e));
    free(ev);
  }
  CHECK(e.inside_list == TN_OK, "tn_list_tools inside: %d", e.inside_list);
  CHECK(e.inside_disconnect_err == TN_ERR_REENTRANT, "tn_disconnect inside is refused");
  CHECK(e.threads_seen == 0, "one event thread");
  char *r = call(c, "fx_echo", "{\"text\":\"still connected\"}");
  CHECK(contains(r, "still connected"), "%s", r);
  free(r);
  /* Removed: no more events, and the callback is not running once this returns. */
  CHECK(tn_set_event_callback(c, NULL, NULL) == TN_OK, "remove");
  int n = e.n;
  r = call(c, "fx_toggle_tool", "{}");
  free(r);
  sleep_ms(300);
  CHECK(e.n == n, "none after removal: %d → %d", n, e.n);
  tn_disconnect(c);
  CHECK(tn_set_event_callback(c, on_event, &e) == TN_ERR_CLOSED, "after disconnect");
  ev_free(&e);
}

static void a_slow_callback_never_stalls_the_reader(void) {
  events e;
  ev_init(&e);
  e.slow_ms = 20;
  tn_client *c = connect_fx("\"--hardening-tools\"", "", &e);
  double t0 = now_s();
  char *r = call(c, "fx_flood_notifications", "{\"n\":5000}");
  double took = now_s() - t0;
  CHECK(contains(r, "flooded 5000"), "%s", r);
  CHECK(took < 5.0, "the reader read on: %.2fs", took);
  free(r);
  char *st = statuses(c);
  CHECK(contains(st, "\"droppedEvents\":"), "drops are counted: %s", st);
  free(st);
  tn_disconnect(c);
  CHECK(e.n < 5000 && e.n > 0, "%d events handed on", e.n);
  ev_free(&e);
}

/* ---------------------------------------------------------------- the soak */

typedef struct {
  tn_client *c;
  int id;
  int calls;
  atomic_long *answered, *failed, *lost, *wrong;
} worker_job;

static atomic_long soak_next, soak_fail_a, soak_not_listed;
static long soak_total;
static double soak_t0, soak_seconds = 20;

static void *soak_worker(void *arg) {
  worker_job *j = arg;
  char name[64], args[96], want[160];
  for (;;) {
    long seq = atomic_fetch_add(&soak_next, 1);
    if (seq >= soak_total) break;
    /* Paced: the calls spread over the run, so that the chaos meets them. */
    double at = soak_t0 + soak_seconds * (double)seq / (double)soak_total;
    double wait = at - now_s();
    if (wait > 0) sleep_ms((int)(wait * 1000));
    const char *server = (const char *[]){"a", "b", "c"}[seq % 3];
    int extra = seq % 17 == 0;
    if (extra) snprintf(name, sizeof name, "b_live_extra");
    else snprintf(name, sizeof name, "%s_echo", server);
    snprintf(args, sizeof args, "{\"text\":\"call %ld\"}", seq);
    snprintf(want, sizeof want, "\"output\":\"call %ld\",\"isError\":false", seq);
    char *out = NULL;
    tn_status st = tn_call_tool(j->c, name, extra ? "{}" : args, &out);
    if (st == TN_OK && out && !extra && contains(out, want)) {
      atomic_fetch_add(j->answered, 1);
    } else if (st == TN_OK && out && extra && contains(out, "live_extra ok")) {
      atomic_fetch_add(j->answered, 1);
    } else if (st == TN_OK && out && contains(out, "\"isError\":true") && contains(out, "server `")) {
      atomic_fetch_add(j->failed, 1); /* failed with a reason that names the server */
      if (server[0] == 'a') atomic_fetch_add(&soak_fail_a, 1);
    } else if (st == TN_ERR_NOT_FOUND && extra && contains(tn_last_error_message(), "no tool named `b_live_extra`")) {
      /* not listed yet, or removed by the last change ("server `b` removed it") */
      atomic_fetch_add(&soak_not_listed, 1);
      atomic_fetch_add(j->failed, 1);
    } else if (st == TN_OK && out) {
      atomic_fetch_add(j->wrong, 1);
      fprintf(stderr, "  wrong answer to %s: %s\n", name, out);
    } else {
      atomic_fetch_add(j->lost, 1);
      fprintf(stderr, "  no answer to %s: %d %s\n", name, st, tn_last_error_message());
    }
    tn_string_free(out);
  }
  return NULL;
}

typedef struct {
  tn_client *c;
  const char *pidfile;
  atomic_int stop;
  int kills, toggles;
} chaos_job;

static int read_pid(const char *path) {
  FILE *f = fopen(path, "r");
  int pid = 0;
  if (f) { if (fscanf(f, "%d", &pid) != 1) pid = 0; fclose(f); }
  return pid;
}

static void *killer(void *arg) {
  chaos_job *j = arg;
  int last = 0;
  while (!atomic_load(&j->stop)) {
    for (int i = 0; i < 40 && !atomic_load(&j->stop); i++) sleep_ms(50);
    if (atomic_load(&j->stop)) break;
    int pid = read_pid(j->pidfile);
    if (pid > 0 && pid != last && alive(pid)) {
      kill(pid, SIGKILL);
      last = pid;
      j->kills++;
    }
  }
  return NULL;
}

static void *toggler(void *arg) {
  chaos_job *j = arg;
  while (!atomic_load(&j->stop)) {
    sleep_ms(400);
    char *r = call(j->c, "b_toggle_tool", "{}");
    if (contains(r, "live_extra")) j->toggles++;
    free(r);
  }
  return NULL;
}

/* An HTTP fixture server: its URL, and its pid in *pid. */
static char *start_http(int *pid) {
  int fds[2];
  if (pipe(fds) != 0) return NULL;
  int p = fork();
  if (p == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(fixture(), fixture(), "--http", "127.0.0.1:0", "--live", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  char line[256] = {0};
  FILE *f = fdopen(fds[0], "r");
  if (!f || !fgets(line, sizeof line, f)) return NULL;
  fclose(f);
  *pid = p;
  char *url = strstr(line, "http://");
  if (!url) return NULL;
  url[strcspn(url, "\r\n")] = 0;
  return strdup(url);
}

static long soak_n = 10000;

static void soak(void) {
  char pidfile[] = "/tmp/tn-live-pid-XXXXXX";
  int fd = mkstemp(pidfile);
  close(fd);
  unlink(pidfile);
  int http_pid = 0;
  char *url = start_http(&http_pid);
  CHECK(url != NULL, "the HTTP fixture starts");
  if (!url) return;
  int kids0 = children_now(); /* the HTTP fixture is ours */
  events e;
  ev_init(&e);
  char *cfg = fmt("{\"mcpServers\":{"
                  "\"a\":{\"command\":[\"%s\",\"--print-pid-file\",\"%s\"],\"restart\":{\"maxAttempts\":3,\"backoffMs\":50,\"resetAfterMs\":1000}},"
                  "\"b\":{\"command\":[\"%s\",\"--live\"]},"
                  "\"c\":{\"url\":\"%s\"}}}",
                  fixture(), pidfile, fixture(), url);
  /* Warm-up: the process-wide threads (stderr drain, timer, the HTTP runtime) start once. */
  tn_client *w = connect_cfg(cfg, NULL);
  tn_disconnect(w);
  sleep_ms(200);
  int threads0 = threads_now();
  tn_client *c = connect_cfg(cfg, &e);
  free(cfg);
  char *st0 = statuses(c);
  CHECK(!contains(st0, "failed"), "%s", st0);
  free(st0);
  atomic_long answered = 0, failed = 0, lost = 0, wrong = 0;
  soak_total = soak_n;
  atomic_store(&soak_next, 0);
  enum { WORKERS = 6 };
  pthread_t th[WORKERS], kt, tt;
  worker_job jobs[WORKERS];
  chaos_job chaos = {c, pidfile, 0, 0, 0};
  pthread_create(&kt, NULL, killer, &chaos);
  pthread_create(&tt, NULL, toggler, &chaos);
  double t0 = now_s();
  soak_t0 = t0;
  const char *secs = getenv("TN_SOAK_SECONDS");
  if (secs) soak_seconds = atof(secs);
  long rss20 = 0;
  for (int i = 0; i < WORKERS; i++) {
    jobs[i] = (worker_job){c, i, 0, &answered, &failed, &lost, &wrong};
    pthread_create(&th[i], NULL, soak_worker, &jobs[i]);
  }
  /* A host's day, compressed into ~20 s. */
  while (atomic_load(&soak_next) < soak_total) {
    if (!rss20 && atomic_load(&soak_next) >= soak_total / 5) rss20 = rss_kb();
    sleep_ms(10);
  }
  for (int i = 0; i < WORKERS; i++) pthread_join(th[i], NULL);
  long rss100 = rss_kb();
  atomic_store(&chaos.stop, 1);
  pthread_join(kt, NULL);
  pthread_join(tt, NULL);
  double took = now_s() - t0;
  char *st = statuses(c);
  CHECK(contains(st, "\"a\":{\"status\":\"") && contains(st, "\"restarts\":"), "%s", st);
  tn_disconnect(c);
  sleep_ms(200);
  int threads1 = threads_now();
  int kids1 = children_now();
  fprintf(stderr,
          "  soak: %ld calls in %.1fs: %ld answered, %ld failed with a reason (%ld of a's, %ld b_live_extra not listed), %ld lost, %ld wrong; %d kills, %d list changes, %d events\n"
          "  soak: RSS %ld KB at 20%% -> %ld KB at 100%%; threads %d before connect, %d after disconnect; children %d -> %d\n",
          soak_total, took, (long)answered, (long)failed, (long)atomic_load(&soak_fail_a),
          (long)atomic_load(&soak_not_listed), (long)lost, (long)wrong, chaos.kills, chaos.toggles, e.n,
          rss20, rss100, threads0, threads1, kids0, kids1);
  CHECK(answered + failed == soak_total && lost == 0 && wrong == 0, "no lost call");
  CHECK(answered > soak_total * 9 / 10, "most calls answered: %ld", (long)answered);
  CHECK(chaos.kills >= 3 && chaos.toggles >= 5, "the chaos happened: %d kills, %d changes", chaos.kills, chaos.toggles);
  CHECK(TN_UNDER_TSAN || rss100 - rss20 < 4096, "memory flat: %ld → %ld KB", rss20, rss100);
  CHECK(threads1 <= threads0, "no leaked thread: %d → %d", threads0, threads1);
  CHECK(kids1 == kids0, "no leaked child: %d → %d", kids0, kids1);
  CHECK(!alive(read_pid(pidfile)), "a's last child is gone");
  char *all = ev_dump(&e);
  CHECK(contains(all, "\"server\":\"a\",\"status\":\"restarting\"") && contains(all, "\"server\":\"b\",\"added\":[\"b_live_extra\"]"),
        "events of both");
  free(all);
  free(st);
  kill(http_pid, SIGTERM);
  waitpid(http_pid, NULL, 0);
  unlink(pidfile);
  free(url);
  ev_free(&e);
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "soak") == 0) {
    soak_n = atol(argv[2]);
    tn_test t[] = {{"soak", soak}};
    return run_tests(t, 1, 1, argv);
  }
  tn_test tests[] = {
      {"sigkill_mid_session_restarts_the_server", sigkill_mid_session_restarts_the_server},
      {"a_server_that_crashes_at_every_start_is_failed_in_bounded_time",
       a_server_that_crashes_at_every_start_is_failed_in_bounded_time},
      {"restart_false_leaves_a_dead_server_dead", restart_false_leaves_a_dead_server_dead},
      {"a_restarted_server_keeps_its_era_and_its_list_changes",
       a_restarted_server_keeps_its_era_and_its_list_changes},
      {"list_changed_over_stdio", list_changed_over_stdio},
      {"list_changed_over_modern_stdio", list_changed_over_modern_stdio},
      {"log_messages_at_and_above_the_level", log_messages_at_and_above_the_level},
      {"log_messages_modern", log_messages_modern},
      {"log_messages_are_filtered_by_the_client_too", log_messages_are_filtered_by_the_client_too},
      {"ttl_is_honoured", ttl_is_honoured},
      {"the_callback_runs_on_one_thread_and_may_read_but_not_disconnect",
       the_callback_runs_on_one_thread_and_may_read_but_not_disconnect},
      {"a_slow_callback_never_stalls_the_reader", a_slow_callback_never_stalls_the_reader},
  };
  return run_tests(tests, (int)(sizeof tests / sizeof tests[0]), argc, argv);
}
