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

/* {"mcpServers":{"s0":{"command":["FIXTURE", fixture_args…]}, …}} */
static char *config_for(const char *fixture, int n) {
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
    len += (size_t)snprintf(cfg + len, cap - len, "]}");
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

static void ours_disconnect(void *h) { tn_disconnect(h); }

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

const client_ops ours_ops = {"ours", ours_connect, ours_check, ours_disconnect, ours_echo, ours_ask};
