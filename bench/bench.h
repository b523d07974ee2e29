/* The benchmark's two contenders behind one small interface, so the driver (bench/host.c)
 * runs exactly the same workload on each and can interleave them in one process:
 *   ours  (bench/ours.c)   toolnexus through its public C ABI (include/toolnexus.h)
 *   floor (bench/floor.c)  a minimal hand-written stdio MCP client (no library)
 */
#ifndef BENCH_H
#define BENCH_H

#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  const char *name;
  /* spawn + initialize + notifications/initialized + tools/list for servers s0..s{n-1}, all
   * running `fixture` (followed by fixture_args); returns a handle once all n are ready (dies otherwise). */
  void *(*connect)(const char *fixture, int n);
  /* after the clock stopped: dies unless all n servers are connected */
  void (*check)(void *h, int n);
  /* closes every connection and reaps the children */
  void (*disconnect)(void *h);
  /* tools/call echo {"text":"hello"} on server s0; 0 when the result is the expected one */
  int (*echo)(void *h);
  /* tools/call ask_form {} on s0: the server sends elicitation/create mid-call, the client
   * accepts with {"name":"x"}; 0 when the call returns the accepted answer */
  int (*ask)(void *h);
} client_ops;

extern const client_ops floor_ops;
extern const client_ops ours_ops;
/* the HTTP leg's floor (bench/floor_http.c): `fixture` is the server's URL (http://, or
 * https:// when built with -DBENCH_TLS) */
extern const client_ops floor_http_ops;
/* the HTTPS leg: the PEM CA file both contenders trust for an https:// URL (host.c sets it
 * from --https-ca; ours.c puts it in the server's "tls":{"caFile":…}) */
extern const char *https_ca_file;
/* ours.c: "protocol" for every server of the next connects (NULL: the default, auto) */
extern const char *ours_protocol;
/* one MRTR elicitation round trip against the fixture's --modern mode (ours only) */
int ours_mrtr_ask(void *h);
/* ours.c: in_flight tn_call_tool_async echo calls kept in flight for ms; calls/s */
double ours_async_window(void *h, int in_flight, int ms, double *cpu_us);
/* ours.c, the many-server leg: one tn_connect of nstdio stdio servers s0.. (the fixture, with
 * fixture_args) and nurls HTTP servers after them (s{nstdio}.. at urls[i]) */
void *ours_connect_fleet(const char *fixture, int nstdio, char *const *urls, int nurls);
/* ours.c: echo {"text":"hello"} on the tool named `tool` ("s7_echo"); 0 when the result is right */
int ours_echo_tool(void *h, const char *tool);
/* floor.c: echo on the floor's server s{i} (0 ≤ i < n of its connect); 0 when the result is right */
int floor_echo_on(void *h, int i);
/* floor.c: the top-level `id` and `method` of one JSON object (spans into s) */
void scan_top(const char *s, size_t n, const char **id, size_t *idn, const char **method,
              size_t *mn);

/* Extra arguments after the fixture's path for every server a contender starts from now on
 * (NULL/0: none). Set by bench/host.c between phases, e.g. {"--init-delay-ms","50"} for the
 * connect `startup` variant; ours.c appends them to each server's "command" array in the JSON
 * config, floor.c to the argv it gives posix_spawn. */
extern const char *const *fixture_args;
extern int fixture_nargs;

__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);

static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
