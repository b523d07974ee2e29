/* The HTTP floor: the smallest honest MCP streamable-HTTP client (2025-11-25), written for the
 * benchmark's HTTP leg.
 *
 * Plain sockets (TCP_NODELAY), HTTP/1.1 keep-alive, a pool of idle connections (a caller takes
 * one or opens one, and puts it back), so 16 callers end up on 16 connections, as a pooling
 * client would. A call is one POST written with one write, its answer read on the caller's own
 * thread: Content-Length JSON, or a chunked SSE stream (one event per chunk). The elicitation
 * arrives as an event on the call's stream; the caller answers it at once with a second POST on
 * another pooled connection (202), then reads on until the response event and the last chunk.
 * No threads of its own, no JSON library (the top-level `id`/`method` scan of floor.c).
 * connect = initialize (its Mcp-Session-Id kept, the protocol version checked),
 * notifications/initialized (202), tools/list (checked); disconnect = DELETE, close the pool.
 *
 * HTTPS (an https:// URL; compiled in with -DBENCH_TLS, OpenSSL's libssl): the same, each
 * pooled connection with its own TLS session, verified against https_ca_file (bench.h) and the
 * URL's IP address; one SSL_CTX (the CA file read once) for the process, and a new connection
 * offers the last session ticket the server sent (resumption), as the library's rustls does.
 */
#include "bench.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>
#ifdef BENCH_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#endif

typedef struct hconn {
  int fd;
#ifdef BENCH_TLS
  SSL *ssl; /* NULL: plain HTTP */
#endif
  size_t off, len;
  struct hconn *next;
  char buf[65536];
} hconn;

typedef struct {
  struct sockaddr_in addr;
#ifdef BENCH_TLS
  SSL_CTX *ctx; /* NULL: plain HTTP */
#endif
  char host[64], hostport[96], path[128], sid[160];
  pthread_mutex_t mu;
  hconn *idle;
  atomic_ulong next_id;
} fh;

/* ------------------------------------------------------------------ connections */

#ifdef BENCH_TLS
static void die_tls(const char *what) {
  char e[256];
  ERR_error_string_n(ERR_get_error(), e, sizeof e);
  die("floor-http: %s: %s", what, e);
}

/* The TLS settings, made once (SSL_CTX_new and reading the CA file are not free) and kept for
 * the process, as the library keeps one HTTP client per distinct settings; with it the last
 * session the server gave us (a TLS 1.3 ticket), offered by the next connection opened, so it
 * can resume instead of doing a full handshake, as rustls' client (the library's) does. */
static pthread_mutex_t tls_mu = PTHREAD_MUTEX_INITIALIZER;
static SSL_SESSION *tls_last;

static int tls_new_session(SSL *ssl, SSL_SESSION *sess) {
  (void)ssl;
  pthread_mutex_lock(&tls_mu);
  if (tls_last) SSL_SESSION_free(tls_last);
  tls_last = sess;
  pthread_mutex_unlock(&tls_mu);
  return 1; /* the reference is ours */
}

static SSL_CTX *tls_ctx(void) {
  static SSL_CTX *ctx;
  pthread_mutex_lock(&tls_mu);
  if (!ctx) {
    if (!https_ca_file) die("floor-http: an https:// URL needs a CA file (--https-ca)");
    ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) die_tls("SSL_CTX_new");
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_load_verify_locations(ctx, https_ca_file, NULL) != 1) die_tls(https_ca_file);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, tls_new_session);
  }
  pthread_mutex_unlock(&tls_mu);
  return ctx;
}
#endif

static hconn *hc_open(fh *h) {
  hconn *c = malloc(sizeof *c);
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->fd < 0) die("floor-http: socket: %s", strerror(errno));
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(c->fd, (struct sockaddr *)&h->addr, sizeof h->addr) != 0)
    die("floor-http: connect: %s", strerror(errno));
#ifdef BENCH_TLS
  c->ssl = NULL;
  if (h->ctx) {
    c->ssl = SSL_new(h->ctx);
    if (!c->ssl || !SSL_set_fd(c->ssl, c->fd)) die_tls("SSL_new");
    /* the URL's host is an IP address: check it against the certificate's IP SANs */
    if (!X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), h->host)) die_tls("set1_ip_asc");
    pthread_mutex_lock(&tls_mu);
    if (tls_last) SSL_set_session(c->ssl, tls_last);
    pthread_mutex_unlock(&tls_mu);
    if (SSL_connect(c->ssl) != 1) {
      long v = SSL_get_verify_result(c->ssl);
      if (v != X509_V_OK) die("floor-http: TLS: %s", X509_verify_cert_error_string(v));
      die_tls("SSL_connect");
    }
  }
#endif
  c->off = c->len = 0;
  c->next = NULL;
  return c;
}

static void hc_close(hconn *c) {
#ifdef BENCH_TLS
  if (c->ssl) {
    SSL_shutdown(c->ssl); /* sends close_notify; does not wait for the server's */
    SSL_free(c->ssl);
  }
#endif
  close(c->fd);
  free(c);
}

/* read / write on one connection, through TLS when it has it; read: 0 at EOF, < 0 on error */
static ssize_t hc_read(hconn *c, void *buf, size_t n) {
#ifdef BENCH_TLS
  if (c->ssl) {
    int k = SSL_read(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (k > 0) return k;
    return SSL_get_error(c->ssl, k) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
  }
#endif
  ssize_t k;
  while ((k = read(c->fd, buf, n)) < 0 && errno == EINTR) {
  }
  return k;
}

static void hc_write(hconn *c, const char *p, size_t left) {
#ifdef BENCH_TLS
  if (c->ssl) { /* without SSL_MODE_ENABLE_PARTIAL_WRITE: all of it or an error */
    if (SSL_write(c->ssl, p, (int)left) != (int)left) die_tls("SSL_write");
    return;
  }
#endif
  while (left) {
    ssize_t k = write(c->fd, p, left);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) die("floor-http: write: %s", strerror(errno));
    p += k;
    left -= (size_t)k;
  }
}

static hconn *hc_get(fh *h) {
  pthread_mutex_lock(&h->mu);
  hconn *c = h->idle;
  if (c) h->idle = c->next;
  pthread_mutex_unlock(&h->mu);
  return c ? c : hc_open(h);
}

static void hc_put(fh *h, hconn *c) {
  pthread_mutex_lock(&h->mu);
  c->next = h->idle;
  h->idle = c;
  pthread_mutex_unlock(&h->mu);
}

/* at least n unread bytes in c->buf (n <= its size), reading as needed; -1 on EOF/error */
static int need(hconn *c, size_t n) {
  if (c->len - c->off >= n) return 0;
  if (c->off + n > sizeof c->buf) {
    memmove(c->buf, c->buf + c->off, c->len - c->off);
    c->len -= c->off;
    c->off = 0;
  }
  while (c->len - c->off < n) {
    ssize_t k = hc_read(c, c->buf + c->len, sizeof c->buf - c->len);
    if (k <= 0) return -1;
    c->len += (size_t)k;
  }
  return 0;
}

/* the unread bytes up to and including `delim` (a pointer into c->buf; consumed) */
static char *until(hconn *c, const char *delim, size_t *n) {
  size_t dl = strlen(delim), have;
  for (;;) {
    char *s = c->buf + c->off;
    char *e = memmem(s, c->len - c->off, delim, dl);
    if (e) {
      *n = (size_t)(e - s) + dl;
      c->off += *n;
      return s;
    }
    have = c->len - c->off;
    if (need(c, have + 1) != 0) die("floor-http: connection closed mid-message");
  }
}

/* ------------------------------------------------------------------ one exchange */

typedef struct {
  int status, chunked;
  long clen;
} head;

static void post(fh *h, hconn *c, const char *method, const char *body) {
  char req[8192];
  size_t bl = body ? strlen(body) : 0;
  int n = snprintf(req, sizeof req,
                   "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                   "Accept: application/json, text/event-stream\r\n"
                   "%s%s%sMCP-Protocol-Version: 2025-11-25\r\nContent-Length: %zu\r\n\r\n",
                   method, h->path, h->hostport, h->sid[0] ? "Mcp-Session-Id: " : "", h->sid,
                   h->sid[0] ? "\r\n" : "", bl);
  if (n < 0 || (size_t)n + bl >= sizeof req) die("floor-http: request too long");
  memcpy(req + n, body ? body : "", bl);
  hc_write(c, req, (size_t)n + bl);
}

static int hdr_is(const char *line, size_t n, const char *name, const char **val) {
  size_t k = strlen(name);
  if (n <= k || strncasecmp(line, name, k) || line[k] != ':') return 0;
  const char *v = line + k + 1;
  while (*v == ' ') v++;
  *val = v;
  return 1;
}

static head read_head(fh *h, hconn *c, int keep_sid) {
  size_t n;
  char *s = until(c, "\r\n\r\n", &n);
  head hd = {0, 0, 0};
  if (n < 12 || memcmp(s, "HTTP/1.1 ", 9)) die("floor-http: bad status line");
  hd.status = atoi(s + 9);
  char *line = memchr(s, '\n', n) + 1;
  while (line < s + n - 2) {
    char *eol = memchr(line, '\r', (size_t)(s + n - line));
    size_t ln = (size_t)(eol - line);
    const char *v;
    if (hdr_is(line, ln, "content-length", &v)) hd.clen = atol(v);
    else if (hdr_is(line, ln, "transfer-encoding", &v)) hd.chunked = !strncasecmp(v, "chunked", 7);
    else if (keep_sid && hdr_is(line, ln, "mcp-session-id", &v)) {
      size_t vl = (size_t)(eol - v);
      if (vl >= sizeof h->sid) die("floor-http: session id too long");
      memcpy(h->sid, v, vl);
      h->sid[vl] = 0;
    }
    line = eol + 2;
  }
  return hd;
}

/* Reading into caller buffers (MSG_MAX bytes, on the caller's stack), not into thread-local
 * ones: static TLS is allocated and zeroed for every thread of the process, the library's
 * reader threads included, so 3 x 64 KiB of _Thread_local here cost ours (two threads per
 * server) twice what it cost the floor, in RSS per server and in each connect. */
#define MSG_MAX 65536

/* the Content-Length body, NUL-terminated, into out (MSG_MAX bytes), or skipped when out is
 * NULL */
static void read_body(hconn *c, long clen, char *out) {
  if ((size_t)clen + 1 > sizeof c->buf) die("floor-http: body too long");
  if (need(c, (size_t)clen + 1 - 1) != 0) die("floor-http: short body");
  if (out) {
    memcpy(out, c->buf + c->off, (size_t)clen);
    out[clen] = 0;
  }
  c->off += (size_t)clen;
}

/* the next chunk, NUL-terminated, into out (MSG_MAX bytes); NULL at the last chunk */
static char *read_chunk(hconn *c, size_t *len, char *out) {
  size_t n;
  char *s = until(c, "\r\n", &n);
  size_t sz = strtoul(s, NULL, 16);
  if (sz == 0) {
    until(c, "\r\n", &n);
    return NULL;
  }
  if (sz + 2 > sizeof c->buf) die("floor-http: chunk too long");
  if (need(c, sz + 2) != 0) die("floor-http: short chunk");
  memcpy(out, c->buf + c->off, sz);
  out[sz] = 0;
  c->off += sz + 2;
  *len = sz;
  return out;
}

/* POST a request and return its response message (JSON text) in out (MSG_MAX bytes). Server
 * requests arriving on its stream are answered on another pooled connection. */
static char *call(fh *h, const char *method, const char *params, int keep_sid, char *out) {
  char body[4096];
  unsigned long id = atomic_fetch_add(&h->next_id, 1);
  snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%lu,\"method\":\"%s\"%s%s}", id,
           method, params ? ",\"params\":" : "", params ? params : "");
  hconn *c = hc_get(h);
  post(h, c, "POST", body);
  head hd = read_head(h, c, keep_sid);
  if (hd.status != 200) die("floor-http: %s answered HTTP %d", method, hd.status);
  char *msg = NULL;
  if (!hd.chunked) {
    read_body(c, hd.clen, out);
    msg = out;
  } else {
    size_t n;
    char *ev;
    char evbuf[MSG_MAX];
    while ((ev = read_chunk(c, &n, evbuf))) {
      char *data = strstr(ev, "data: ");
      if (!data || data[6] == '\n' || data[6] == '\r' || data[6] == 0) continue; /* priming */
      data += 6;
      size_t dl = strcspn(data, "\n");
      const char *rid, *m;
      size_t rn, mn;
      scan_top(data, dl, &rid, &rn, &m, &mn);
      if (m) { /* a server request: elicitation/create → accept */
        char ans[512];
        snprintf(ans, sizeof ans,
                 "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"action\":\"accept\","
                 "\"content\":{\"name\":\"x\"}}}",
                 (int)rn, rid);
        hconn *c2 = hc_get(h);
        post(h, c2, "POST", ans);
        head h2 = read_head(h, c2, 0);
        if (h2.status != 202) die("floor-http: answer got HTTP %d", h2.status);
        if (h2.clen) read_body(c2, h2.clen, NULL);
        hc_put(h, c2);
      } else if (rid) {
        memcpy(out, data, dl);
        out[dl] = 0;
        msg = out;
      }
    }
  }
  hc_put(h, c);
  if (!msg) die("floor-http: no response to %s", method);
  return msg;
}

static void notify(fh *h, const char *method) {
  char body[256];
  snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\"}", method);
  hconn *c = hc_get(h);
  post(h, c, "POST", body);
  head hd = read_head(h, c, 0);
  if (hd.status != 202) die("floor-http: %s got HTTP %d", method, hd.status);
  if (hd.clen) read_body(c, hd.clen, NULL);
  hc_put(h, c);
}

/* ------------------------------------------------------------------ the ops */

static void *fh_connect(const char *url, int n) {
  if (n != 1) die("floor-http: one server only");
  fh *h = calloc(1, sizeof *h);
  pthread_mutex_init(&h->mu, NULL);
  atomic_init(&h->next_id, 1);
  int port;
  const char *rest = url;
  if (!strncmp(url, "https://", 8)) {
#ifdef BENCH_TLS
    h->ctx = tls_ctx();
    rest = url + 8;
#else
    die("floor-http: %s: built without OpenSSL (no -DBENCH_TLS)", url);
#endif
  } else if (!strncmp(url, "http://", 7)) {
    rest = url + 7;
  } else {
    die("floor-http: cannot parse %s", url);
  }
  if (sscanf(rest, "%63[^:]:%d%127s", h->host, &port, h->path) != 3)
    die("floor-http: cannot parse %s", url);
  snprintf(h->hostport, sizeof h->hostport, "%s:%d", h->host, port);
  h->addr.sin_family = AF_INET;
  h->addr.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, h->host, &h->addr.sin_addr) != 1) die("floor-http: bad host %s", h->host);
  char out[MSG_MAX];
  char *r = call(h, "initialize",
                 "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"elicitation\":{}},"
                 "\"clientInfo\":{\"name\":\"floor\",\"version\":\"0\"}}",
                 1, out);
  if (!strstr(r, "\"protocolVersion\":\"2025-11-25\"") || !h->sid[0])
    die("floor-http: initialize: %s", r);
  notify(h, "notifications/initialized");
  r = call(h, "tools/list", NULL, 0, out);
  if (!strstr(r, "\"echo\"")) die("floor-http: tools/list: %.200s", r);
  return h;
}

static void fh_check(void *p, int n) {
  fh *h = p;
  if (n != 1 || !h->sid[0]) die("floor-http: not connected");
}

static void fh_disconnect(void *p) {
  fh *h = p;
  hconn *c = hc_get(h);
  post(h, c, "DELETE", NULL);
  head hd = read_head(h, c, 0);
  if (hd.clen) read_body(c, hd.clen, NULL);
  hc_put(h, c);
  while ((c = h->idle)) {
    h->idle = c->next;
    hc_close(c);
  }
  pthread_mutex_destroy(&h->mu);
  free(h);
}

static int fh_echo(void *p) {
  char out[MSG_MAX];
  char *r = call(p, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}}", 0, out);
  return strstr(r, "\"text\":\"hello\"") ? 0 : -1;
}

static int fh_ask(void *p) {
  char out[MSG_MAX];
  char *r = call(p, "tools/call", "{\"name\":\"ask_form\",\"arguments\":{}}", 0, out);
  return strstr(r, "accept") ? 0 : -1;
}

const client_ops floor_http_ops = {"floor", fh_connect, fh_check, fh_disconnect, fh_echo, fh_ask};
