/* Minimal test harness for the C tests: CHECK counts, each test is a function, the runner
 * prints one line per failing test and "N passed, M failed" last. */
#ifndef TN_CHECK_H
#define TN_CHECK_H
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "toolnexus.h"
#include "win_compat.h"

static int tn_test_failed;

/* Built with -fsanitize=thread (scripts/test-races.sh): its shadow memory and access history
 * grow with the run, so a bound on RSS holds for the other builds only. */
#if defined(__SANITIZE_THREAD__)
#define TN_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TN_UNDER_TSAN 1
#endif
#endif
#ifndef TN_UNDER_TSAN
#define TN_UNDER_TSAN 0
#endif

#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      tn_test_failed = 1;                                                   \
      fprintf(stderr, "  check failed at %s:%d: %s: ", __FILE__, __LINE__, \
              #cond);                                                       \
      fprintf(stderr, __VA_ARGS__);                                         \
      fprintf(stderr, "\n");                                                \
    }                                                                       \
  } while (0)

typedef struct {
  const char *name;
  void (*fn)(void);
} tn_test;

static inline int run_tests(const tn_test *tests, int n, int argc, char **argv) {
  int passed = 0, failed = 0;
  for (int i = 0; i < n; i++) {
    if (argc > 1) {
      /* optional filter: comma-separated words; a test runs when its name contains one of the
       * plain words (or there are none) and none of the words prefixed with '-' */
      int match = 0, plain = 0, excluded = 0;
      char words[1024];
      snprintf(words, sizeof words, "%s", argv[1]);
      for (char *save = NULL, *w = strtok_r(words, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (w[0] == '-') {
          excluded |= strstr(tests[i].name, w + 1) != NULL;
        } else {
          plain = 1;
          match |= strstr(tests[i].name, w) != NULL;
        }
      }
      if ((plain && !match) || excluded) continue;
    }
    tn_test_failed = 0;
    fprintf(stderr, "- %s\n", tests[i].name);
    tests[i].fn();
    if (tn_test_failed) {
      failed++;
      printf("FAIL %s\n", tests[i].name);
    } else {
      passed++;
    }
    fflush(stdout);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

static inline double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline int contains(const char *hay, const char *needle) {
  return hay && needle && strstr(hay, needle) != NULL;
}

/* printf into a fresh malloc'd string */
static inline char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if (vasprintf(&s, f, ap) < 0) s = NULL;
  va_end(ap);
  return s;
}

/* Calls a tool and returns a malloc'd copy of the ToolResult (or of "ERR <status>: <msg>"). */
static inline char *call(tn_client *c, const char *name, const char *args) {
  char *out = NULL;
  tn_status st = tn_call_tool(c, name, args, &out);
  char *copy;
  if (st == TN_OK) {
    copy = strdup(out);
  } else {
    const char *m = tn_last_error_message();
    copy = fmt("ERR %d: %s", st, m ? m : "(no message)");
  }
  tn_string_free(out);
  return copy;
}

static inline char *statuses(tn_client *c) {
  char *out = NULL;
  if (tn_server_statuses(c, &out) != TN_OK) return strdup("(statuses failed)");
  char *copy = strdup(out);
  tn_string_free(out);
  return copy;
}

static inline char *tools(tn_client *c) {
  char *out = NULL;
  if (tn_list_tools(c, &out) != TN_OK) return strdup("(list failed)");
  char *copy = strdup(out);
  tn_string_free(out);
  return copy;
}

/* absolute path of the fixture server (tests change a server's cwd) */
static inline const char *fixture(void) {
  static char path[4096];
  if (!path[0]) {
    const char *f = getenv("TN_FIXTURE");
    if (!realpath(f ? f : "target/debug/tn-fixture-server", path)) snprintf(path, sizeof path, "%s", f ? f : "?");
#ifdef _WIN32
    /* forward slashes: Windows takes them, and the path goes into JSON strings unescaped */
    for (char *p = path; *p; p++)
      if (*p == '\\') *p = '/';
#endif
  }
  return path;
}

/* true while the process exists and is not a zombie */
static inline int pid_alive(long pid) {
#ifdef _WIN32
  return tn_pid_alive(pid);
#else
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
#endif
}

/* The integer in the "output" of a ToolResult like {"output":"123",...}. */
static inline long output_long(const char *result) {
  const char *p = result ? strstr(result, "\"output\":\"") : NULL;
  return p ? strtol(p + 10, NULL, 10) : -1;
}
#endif
