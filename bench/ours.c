/* Contender "ours": toolnexus through its public C ABI only (include/toolnexus.h).
 * One tn_client per connect; calls are tn_call_tool + tn_string_free; the elicitation is
 * answered by an inline resolver (it runs on the library's reader thread). */
#include "bench.h"
#include "toolnexus.h"

/* The resolver: accept with a name, inline, as a host answering at once would. */
static int32_t resolve(void *user_data, const char *request_json, tn_responder *r) {
  (void)user_data;
  (void)request_json;
  if (tn_responder_answer(r, "{\"ok\":true,\"data\":{\"name\":\"x\"}}") != TN_OK)
    fprintf(stderr, "bench: answer refused: %s\n", tn_last_error_message());
  return TN_RESOLVED;
}

/* writes s as a JSON string at dst (quotes, backslashes and control characters escaped);
 * the caller sized dst for 6 bytes per character + 2; returns the length written */
static size_t put_json_str(char *dst, const char *s) {
  static const char hex[] = "0123456789abcdef";
  char *d = dst;
  *d++ = '"';
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') {
      *d++ = '\\';
      *d++ = (char)ch;
    } else if (ch < 0x20) {
      memcpy(d, "\\u00", 4);
      d[4] = hex[ch >> 4];
      d[5] = hex[ch & 15];
      d += 6;
    } else {
      *d++ = (char)ch;
    }
  }
  *d++ = '"';
  return (size_t)(d - dst);
}

const char *ours_protocol = NULL;

/* {"mcpServers":{"s0":{"command":["FIXTURE", fixture_args…]}, …}}; a `fixture` starting with
 * http:// is a URL: {"mcpServers":{"s0":{"url":"…"}}}; https:// adds the CA both contenders
 * trust: {"url":"…","tls":{"caFile":https_ca_file}}. With ours_protocol set, each server gets
 * "protocol":ours_protocol. */
static char *config_for(const char *fixture, int n) {
  int https = !strncmp(fixture, "https://", 8);
  if (https || !strncmp(fixture, "http://", 7)) {
    if (n != 1) die("ours: one HTTP server only");
    if (https && !https_ca_file) die("ours: %s needs a CA file (--https-ca)", fixture);
    char *cfg = malloc(strlen(fixture) + (https ? 6 * strlen(https_ca_file) : 0) + 160);
    size_t len = (size_t)sprintf(cfg, "{\"mcpServers\":{\"s0\":{\"url\":\"%s\"", fixture);
    if (https) {
      len += (size_t)sprintf(cfg + len, ",\"tls\":{\"caFile\":");
      len += put_json_str(cfg + len, https_ca_file);
      cfg[len++] = '}';
    }
    sprintf(cfg + len, "%s%s%s}}}", ours_protocol ? ",\"protocol\":\"" : "",
            ours_protocol ? ours_protocol : "", ours_protocol ? "\"" : "");
    return cfg;
  }
  size_t per = 6 * strlen(fixture) + 64;
  for (int a = 0; a < fixture_nargs; a++) per += 6 * strlen(fixture_args[a]) + 4;
  size_t cap = 64 + (size_t)n * per;
  char *cfg = malloc(cap);
  size_t len = (size_t)snprintf(cfg, cap, "{\"mcpServers\":{");
  for (int i = 0; i < n; i++) {
    len += (size_t)snprintf(cfg + len, cap - len, "%s\"s%d\":{\"command\":[", i ? "," : "", i);
    len += put_json_str(cfg + len, fixture);
    for (int a = 0; a < fixture_nargs; a++) {
      cfg[len++] = ',';
      len += put_json_str(cfg + len, fixture_args[a]);
    }
    len += (size_t)snprintf(cfg + len, cap - len, "]%s%s%s}",
                            ours_protocol ? ",\"protocol\":\"" : "",
                            ours_protocol ? ours_protocol : "", ours_protocol ? "\"" : "");
  }
  snprintf(cfg + len, cap - len, "}}");
  return cfg;
}

static void ours_check(void *h, int n) {
  tn_client *c = h;
  char *s = NULL;
  if (tn_server_statuses(c, &s) != TN_OK) die("tn_server_statuses: %s", tn_last_error_message());
  int k = 0;
  for (const char *p = s; (p = strstr(p, "\"status\":\"connected\"")); p++) k++;
  if (k != n) die("only %d of %d servers connected: %.3000s", k, n, s);
  tn_string_free(s);
}

static void *ours_connect(const char *fixture, int n) {
  char *cfg = config_for(fixture, n);
  tn_client *c = NULL;
  tn_status st = tn_connect(cfg, resolve, NULL, &c);
  if (st != TN_OK) die("tn_connect: %s: %s", tn_status_str(st), tn_last_error_message());
  free(cfg);
  return c;
}

/* The many-server leg: one config of nstdio stdio servers s0..s{nstdio-1} (each running
 * `fixture` followed by fixture_args) and nurls HTTP servers s{nstdio}..s{nstdio+nurls-1}
 * ({"url":urls[i]}); returns the handle once all are ready (dies otherwise). */
void *ours_connect_fleet(const char *fixture, int nstdio, char *const *urls, int nurls) {
  size_t per = 6 * strlen(fixture) + 64;
  for (int a = 0; a < fixture_nargs; a++) per += 6 * strlen(fixture_args[a]) + 4;
  size_t cap = 64 + (size_t)nstdio * per;
  for (int i = 0; i < nurls; i++) cap += 6 * strlen(urls[i]) + 64;
  char *cfg = malloc(cap);
  size_t len = (size_t)snprintf(cfg, cap, "{\"mcpServers\":{");
  for (int i = 0; i < nstdio; i++) {
    len += (size_t)snprintf(cfg + len, cap - len, "%s\"s%d\":{\"command\":[", i ? "," : "", i);
    len += put_json_str(cfg + len, fixture);
    for (int a = 0; a < fixture_nargs; a++) {
      cfg[len++] = ',';
      len += put_json_str(cfg + len, fixture_args[a]);
    }
    len += (size_t)snprintf(cfg + len, cap - len, "]}");
  }
  for (int i = 0; i < nurls; i++) {
    len += (size_t)snprintf(cfg + len, cap - len, "%s\"s%d\":{\"url\":", nstdio + i ? "," : "",
                            nstdio + i);
    len += put_json_str(cfg + len, urls[i]);
    cfg[len++] = '}';
  }
  if (len + 3 > cap) die("ours: fleet config overflow");
  snprintf(cfg + len, cap - len, "}}");
  tn_client *c = NULL;
  tn_status st = tn_connect(cfg, resolve, NULL, &c);
  if (st != TN_OK) die("tn_connect (%d stdio + %d HTTP servers): %s: %s", nstdio, nurls,
                       tn_status_str(st), tn_last_error_message());
  free(cfg);
  return c;
}

static void ours_disconnect(void *h) { tn_disconnect(h); }

/* tools/call echo {"text":"hello"} on the tool named `tool` (e.g. "s7_echo"); 0 when the result
 * is the expected one */
int ours_echo_tool(void *h, const char *tool) {
  char *out = NULL;
  tn_status st = tn_call_tool(h, tool, "{\"text\":\"hello\"}", &out);
  if (st != TN_OK) {
    fprintf(stderr, "bench: tn_call_tool %s: %s: %s\n", tool, tn_status_str(st),
            tn_last_error_message());
    return -1;
  }
  int ok = strstr(out, "\"output\":\"hello\"") && strstr(out, "\"isError\":false");
  if (!ok) fprintf(stderr, "bench: unexpected %s result %s\n", tool, out);
  tn_string_free(out);
  return ok ? 0 : -1;
}

static int ours_echo(void *h) {
  char *out = NULL;
  tn_status st = tn_call_tool(h, "s0_echo", "{\"text\":\"hello\"}", &out);
  if (st != TN_OK) {
    fprintf(stderr, "bench: tn_call_tool: %s: %s\n", tn_status_str(st), tn_last_error_message());
    return -1;
  }
  int ok = strstr(out, "\"output\":\"hello\"") && strstr(out, "\"isError\":false");
  if (!ok) fprintf(stderr, "bench: unexpected echo result %s\n", out);
  tn_string_free(out);
  return ok ? 0 : -1;
}

static int ours_ask(void *h) {
  char *out = NULL;
  tn_status st = tn_call_tool(h, "s0_ask_form", "{}", &out);
  if (st != TN_OK) {
    fprintf(stderr, "bench: tn_call_tool: %s: %s\n", tn_status_str(st), tn_last_error_message());
    return -1;
  }
  int ok = strstr(out, "accept") && strstr(out, "\"isError\":false");
  if (!ok) fprintf(stderr, "bench: unexpected ask_form result %s\n", out);
  tn_string_free(out);
  return ok ? 0 : -1;
}

/* The same question in MCP 2026-07-28 (contract §6): the fixture's --modern mode asks it as
 * an MRTR round (input_required, then the retry with inputResponses); the resolver is the same
 * inline one, run on the calling thread. */
int ours_mrtr_ask(void *h) {
  char *out = NULL;
  tn_status st = tn_call_tool(h, "s0_mrtr_ask", "{}", &out);
  if (st != TN_OK) {
    fprintf(stderr, "bench: tn_call_tool: %s: %s\n", tn_status_str(st), tn_last_error_message());
    return -1;
  }
  int ok = strstr(out, "accept") && strstr(out, "\"isError\":false");
  if (!ok) fprintf(stderr, "bench: unexpected mrtr_ask result %s\n", out);
  tn_string_free(out);
  return ok ? 0 : -1;
}

/* ---- asynchronous calls: `in_flight` tn_call_tool_async echo calls kept in flight by one
 * host thread for `ms` after a 30 ms warm-up; returns calls/s, CPU µs per call in *cpu_us */
#include <pthread.h>
#include <sys/resource.h>

static pthread_mutex_t amu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t acv = PTHREAD_COND_INITIALIZER;
static int a_out;
static unsigned long a_done, a_failed;

static void a_finished(void *user_data, tn_status st, const char *result_json) {
  (void)user_data;
  int ok = st == TN_OK && result_json && strstr(result_json, "\"output\":\"hello\"");
  pthread_mutex_lock(&amu);
  a_out--;
  a_done++;
  if (!ok) a_failed++;
  pthread_cond_signal(&acv);
  pthread_mutex_unlock(&amu);
}

static uint64_t cpu_now(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
         ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

double ours_async_window(void *h, int in_flight, int ms, double *cpu_us) {
  uint64_t start = now_ns(), t0 = 0, cpu0 = 0, end = 0;
  unsigned long k0 = 0;
  for (;;) {
    pthread_mutex_lock(&amu);
    while (a_out >= in_flight) pthread_cond_wait(&acv, &amu);
    uint64_t now = now_ns();
    if (!t0 && now - start >= 30000000u) {
      t0 = now;
      cpu0 = cpu_now();
      k0 = a_done;
    }
    if (t0 && now - t0 >= (uint64_t)ms * 1000000u) {
      unsigned long k1 = a_done;
      end = now;
      uint64_t cpu1 = cpu_now();
      while (a_out > 0) pthread_cond_wait(&acv, &amu);
      if (a_failed) die("ours: an async call failed");
      pthread_mutex_unlock(&amu);
      *cpu_us = (double)(cpu1 - cpu0) / 1e3 / (double)(k1 - k0);
      return (double)(k1 - k0) / ((double)(end - t0) / 1e9);
    }
    a_out++;
    pthread_mutex_unlock(&amu);
    tn_status st = tn_call_tool_async(h, "s0_echo", "{\"text\":\"hello\"}", NULL, a_finished,
                                      NULL, NULL, NULL);
    if (st != TN_OK) die("tn_call_tool_async: %s", tn_last_error_message());
  }
}

const client_ops ours_ops = {"ours", ours_connect, ours_check, ours_disconnect, ours_echo, ours_ask};
