/* The floor: the smallest honest MCP stdio client, written for the benchmark.
 *
 * Per connection: the server as a child (posix_spawn, own process group, blocking pipes,
 * stderr to /dev/null), one reader thread that splits stdout into lines, finds the top-level
 * `id` (and `method`) with a minimal scan, and completes the waiting caller through a map of
 * pending ids (one mutex, one condvar per slot). A server request (`elicitation/create`) is
 * answered from the reader thread with {"action":"accept","content":{"name":"x"}}.
 * Callers format a request line, write it under a write lock, and wait for their slot; they
 * get the whole response line and check it. No JSON library, no framework, no extra threads.
 *
 * Connecting n servers is parallel without extra threads: all children are spawned, then each
 * phase (initialize; initialized + tools/list) is sent to every server before any answer is
 * awaited.
 */
#include "bench.h"
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define NSLOTS 64                 /* > the most calls ever in flight on one connection */
#define WAIT_SECONDS 30           /* a call that takes longer is a benchmark failure */

typedef struct {
  uint64_t id;                    /* 0: free */
  int done;
  char *line;                     /* the response line (malloc'd), handed to the caller */
  pthread_cond_t cv;
} slot;

typedef struct {
  pid_t pid;
  int wfd, rfd;
  pthread_mutex_t wlock;          /* one line at a time on the child's stdin */
  pthread_mutex_t lock;           /* the pending map */
  slot slots[NSLOTS];
  int dead;
  atomic_ulong next_id;
  pthread_t reader;
} fconn;

/* ------------------------------------------------------------------ writing */

static int write_line(fconn *c, const char *s, size_t n) {
  pthread_mutex_lock(&c->wlock);
  while (n > 0) {
    ssize_t k = write(c->wfd, s, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      pthread_mutex_unlock(&c->wlock);
      return -1;
    }
    s += k;
    n -= (size_t)k;
  }
  pthread_mutex_unlock(&c->wlock);
  return 0;
}

/* ------------------------------------------------------------------ the reader */

/* Top-level `id` and `method` values of one JSON object line (spans into the line). */
void scan_top(const char *s, size_t n, const char **id, size_t *idn, const char **method,
                     size_t *mn) {
  int depth = 0, expect_key = 0;
  *id = *method = NULL;
  *idn = *mn = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (ch == '"') {
      size_t j = i + 1;
      while (j < n && s[j] != '"') j += (s[j] == '\\') ? 2 : 1;
      if (depth == 1 && expect_key) {
        expect_key = 0;
        size_t kl = j - i - 1, v = j + 1;
        while (v < n && (s[v] == ':' || s[v] == ' ' || s[v] == '\t')) v++;
        if (kl == 2 && !memcmp(s + i + 1, "id", 2)) {
          size_t e = v;
          if (e < n && s[e] == '"') {
            e++;
            while (e < n && s[e] != '"') e += (s[e] == '\\') ? 2 : 1;
            e++;
          } else {
            while (e < n && s[e] != ',' && s[e] != '}' && s[e] != ' ') e++;
          }
          *id = s + v;
          *idn = e - v;
        } else if (kl == 6 && !memcmp(s + i + 1, "method", 6) && v < n && s[v] == '"') {
          size_t e = v + 1;
          while (e < n && s[e] != '"') e += (s[e] == '\\') ? 2 : 1;
          *method = s + v + 1;
          *mn = e - v - 1;
        }
      }
      i = j;
    } else if (ch == '{' || ch == '[') {
      depth++;
      if (depth == 1 && ch == '{') expect_key = 1;
    } else if (ch == '}' || ch == ']') {
      depth--;
    } else if (ch == ',' && depth == 1) {
      expect_key = 1;
    }
  }
}

static void answer_server_request(fconn *c, const char *id, size_t idn, const char *m, size_t mn) {
  static const char accept[] = ",\"result\":{\"action\":\"accept\",\"content\":{\"name\":\"x\"}}}\n";
  static const char empty[] = ",\"result\":{}}\n";
  static const char nf[] = ",\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}\n";
  const char *tail;
  if (mn == 18 && !memcmp(m, "elicitation/create", 18)) tail = accept;
  else if (mn == 4 && !memcmp(m, "ping", 4)) tail = empty;
  else tail = nf;
  char buf[256];
  size_t tn = strlen(tail);
  if (idn + tn + 32 > sizeof buf) return;
  memcpy(buf, "{\"jsonrpc\":\"2.0\",\"id\":", 22);
  memcpy(buf + 22, id, idn);
  memcpy(buf + 22 + idn, tail, tn);
  write_line(c, buf, 22 + idn + tn);
}

static void complete(fconn *c, const char *line, size_t n, const char *id, size_t idn) {
  if (idn == 0 || id[0] < '0' || id[0] > '9') return; /* not one of our (numeric) ids */
  uint64_t key = strtoull(id, NULL, 10);
  char *copy = malloc(n + 1);
  memcpy(copy, line, n);
  copy[n] = 0;
  slot *hit = NULL;
  pthread_mutex_lock(&c->lock);
  for (unsigned k = 0, i = (unsigned)(key % NSLOTS); k < NSLOTS; k++, i = (i + 1) % NSLOTS) {
    slot *s = &c->slots[i];
    if (s->id == key && !s->done) {
      s->line = copy;
      s->done = 1;
      hit = s;
      break;
    }
  }
  pthread_mutex_unlock(&c->lock);
  /* Signalled after unlocking, so the woken caller does not block on the map lock. The slot
   * may already be reused by then: a spurious wake-up, which every wait loop tolerates. */
  if (hit) pthread_cond_signal(&hit->cv);
  else free(copy); /* nobody waits for this id */
}

static void on_line(fconn *c, const char *line, size_t n) {
  const char *id, *method;
  size_t idn, mn;
  scan_top(line, n, &id, &idn, &method, &mn);
  if (method) {
    if (id && !(idn == 4 && !memcmp(id, "null", 4))) answer_server_request(c, id, idn, method, mn);
    return; /* a notification otherwise */
  }
  if (id) complete(c, line, n, id, idn);
}

static void *reader(void *arg) {
  fconn *c = arg;
  size_t cap = 64 * 1024, have = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (have == cap) buf = realloc(buf, cap *= 2);
    ssize_t k = read(c->rfd, buf + have, cap - have);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    size_t scanned = have, start = 0;
    have += (size_t)k;
    char *nl;
    while ((nl = memchr(buf + scanned, '\n', have - scanned))) {
      size_t end = (size_t)(nl - buf);
      if (end > start) on_line(c, buf + start, end - start);
      start = scanned = end + 1;
    }
    if (start > 0) {
      memmove(buf, buf + start, have - start);
      have -= start;
    }
  }
  free(buf);
  pthread_mutex_lock(&c->lock);
  c->dead = 1;
  for (int i = 0; i < NSLOTS; i++) pthread_cond_signal(&c->slots[i].cv);
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

/* ------------------------------------------------------------------ requests */

/* Registers a pending id and writes the request line; returns the slot (or NULL). */
static slot *request_start(fconn *c, const char *method, const char *params) {
  uint64_t id = atomic_fetch_add(&c->next_id, 1);
  slot *s = NULL;
  pthread_mutex_lock(&c->lock);
  for (unsigned k = 0, i = (unsigned)(id % NSLOTS); k < NSLOTS; k++, i = (i + 1) % NSLOTS)
    if (c->slots[i].id == 0) {
      s = &c->slots[i];
      s->id = id;
      s->done = 0;
      break;
    }
  pthread_mutex_unlock(&c->lock);
  if (!s) die("pending map full");
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"%s\",\"params\":%s}\n",
                   (unsigned long long)id, method, params);
  if (n <= 0 || (size_t)n >= sizeof buf) die("request too long");
  if (write_line(c, buf, (size_t)n) != 0) die("write to server failed: %s", strerror(errno));
  return s;
}

/* Waits for the slot's response line; the caller frees it. */
static char *request_wait(fconn *c, slot *s) {
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  dl.tv_sec += WAIT_SECONDS;
  pthread_mutex_lock(&c->lock);
  while (!s->done && !c->dead)
    if (pthread_cond_timedwait(&s->cv, &c->lock, &dl) == ETIMEDOUT) die("no answer in %ds", WAIT_SECONDS);
  char *line = s->done ? s->line : NULL;
  s->line = NULL;
  s->done = 0;
  s->id = 0;
  pthread_mutex_unlock(&c->lock);
  if (!line) die("server gone");
  return line;
}

static char *request(fconn *c, const char *method, const char *params) {
  return request_wait(c, request_start(c, method, params));
}

/* ------------------------------------------------------------------ connect / close */

static void spawn_server(fconn *c, const char *fixture) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->wlock, NULL);
  pthread_mutex_init(&c->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  for (int i = 0; i < NSLOTS; i++) pthread_cond_init(&c->slots[i].cv, &ca);
  pthread_condattr_destroy(&ca);
  atomic_init(&c->next_id, 1);
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) die("pipe2");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0);
  char **argv = malloc(sizeof(char *) * (size_t)(fixture_nargs + 2));
  argv[0] = (char *)fixture;
  for (int a = 0; a < fixture_nargs; a++) argv[1 + a] = (char *)fixture_args[a];
  argv[1 + fixture_nargs] = NULL;
  int rc = posix_spawn(&c->pid, fixture, &fa, &at, argv, environ);
  if (rc) die("posix_spawn %s: %s", fixture, strerror(rc));
  free(argv);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(in[0]);
  close(out[1]);
  c->wfd = in[1];
  c->rfd = out[0];
  if (pthread_create(&c->reader, NULL, reader, c)) die("pthread_create");
}

static const char *INIT_PARAMS =
    "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"elicitation\":{\"form\":{},\"url\":{}}},"
    "\"clientInfo\":{\"name\":\"floor\",\"version\":\"0.1.0\"}}";
static const char INITIALIZED[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/* spawn + initialize + notifications/initialized + tools/list for n servers, in parallel:
 * every server is started, then each phase is sent to all before any answer is awaited. */
typedef struct {
  int n;
  fconn c[];
} fclient;

static void *floor_connect(const char *fixture, int n) {
  fclient *fc = malloc(sizeof(fclient) + sizeof(fconn) * (size_t)n);
  fc->n = n;
  fconn *cs = fc->c;
  slot **pend = calloc((size_t)n, sizeof *pend);
  for (int i = 0; i < n; i++) spawn_server(&cs[i], fixture);
  for (int i = 0; i < n; i++) pend[i] = request_start(&cs[i], "initialize", INIT_PARAMS);
  for (int i = 0; i < n; i++) {
    char *r = request_wait(&cs[i], pend[i]);
    if (!strstr(r, "\"protocolVersion\":\"2025-11-25\"")) die("initialize failed: %s", r);
    free(r);
    if (write_line(&cs[i], INITIALIZED, sizeof INITIALIZED - 1)) die("write failed");
    pend[i] = request_start(&cs[i], "tools/list", "{}");
  }
  for (int i = 0; i < n; i++) {
    char *r = request_wait(&cs[i], pend[i]);
    if (!strstr(r, "\"result\":{\"tools\":[")) die("tools/list failed: %.200s", r);
    free(r);
  }
  free(pend);
  return fc;
}

/* connect already read and checked every server's initialize and tools/list answers */
static void floor_check(void *h, int n) {
  if (((fclient *)h)->n != n) die("floor: wrong server count");
}

/* close stdin of every child, reap them, join the readers. */
static void floor_disconnect(void *h) {
  fclient *fc = h;
  fconn *cs = fc->c;
  int n = fc->n;
  for (int i = 0; i < n; i++) close(cs[i].wfd);
  for (int i = 0; i < n; i++) {
    int st;
    while (waitpid(cs[i].pid, &st, 0) < 0 && errno == EINTR) {
    }
    pthread_join(cs[i].reader, NULL);
    close(cs[i].rfd);
    for (int k = 0; k < NSLOTS; k++) pthread_cond_destroy(&cs[i].slots[k].cv);
  }
  free(fc);
}

/* ------------------------------------------------------------------ the calls */

static int floor_echo(void *h) {
  char *r = request(&((fclient *)h)->c[0], "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}}");
  int ok = strstr(r, "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}") != NULL;
  if (!ok) fprintf(stderr, "bench: unexpected echo response %s\n", r);
  free(r);
  return ok ? 0 : -1;
}

/* echo on server s{i} (the many-server leg's reference: calls spread over the floor's servers) */
int floor_echo_on(void *h, int i) {
  fclient *fc = h;
  if (i < 0 || i >= fc->n) die("floor: no server s%d", i);
  char *r = request(&fc->c[i], "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}}");
  int ok = strstr(r, "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}") != NULL;
  if (!ok) fprintf(stderr, "bench: unexpected echo response from s%d %s\n", i, r);
  free(r);
  return ok ? 0 : -1;
}

static int floor_ask(void *h) {
  char *r = request(&((fclient *)h)->c[0], "tools/call", "{\"name\":\"ask_form\",\"arguments\":{}}");
  int ok = strstr(r, "\"result\":{") && strstr(r, "accept") && !strstr(r, "\"isError\":true");
  if (!ok) fprintf(stderr, "bench: unexpected ask_form response %s\n", r);
  free(r);
  return ok ? 0 : -1;
}

const client_ops floor_ops = {"floor", floor_connect, floor_check, floor_disconnect, floor_echo,
                              floor_ask};
