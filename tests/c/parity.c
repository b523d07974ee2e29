/*
 * parity.c - runs every bridge parity vector through the C ABI of libtoolnexus.
 *
 *     parity <path-to-bridge-vectors.jsonl>
 *
 * The vector format is described in shared/parity/README.md. Each line is one
 * flat JSON object (parsed by json_flat.h). For each vector:
 *
 *   elicitation_to_request / answer_to_result / sanitize
 *       tn_elicitation_to_request / tn_answer_to_result / tn_sanitize_name
 *       with `input`; on `error: true` a non-OK status, *out NULL and a
 *       non-empty tn_last_error_message(); else TN_OK and the output equal to
 *       `output` byte for byte (after request-id substitution).
 *   server_request_response
 *       tn_server_request_response with a resolver that behaves as the
 *       vector's `resolver` says; checks the reply as above (null `output`:
 *       TN_OK and *out == NULL) and the Request the resolver saw against
 *       `request_seen` (null: the resolver must not have been called).
 *
 * Request ids ("id":"elc-<base36 time>-<counter>") are checked against
 * ^elc-[0-9a-z]+-[1-9][0-9]*$, replaced by <ID> before comparing, and must be
 * distinct across the run with strictly increasing counters.
 *
 * Prints one line per problem ("FAIL <case>: ...") and finally
 * "N passed, M failed". Exit status 0 only when every vector passed.
 *
 * C99; builds with -Wall -Wextra -Werror; frees everything (ASan/valgrind).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolnexus.h"
#include "json_flat.h"
#include "win_compat.h"

#define ID_PLACEHOLDER "\"id\":\"<ID>\""
#define ID_PREFIX "\"id\":\""
#define RESOLVER_FAIL_CODE 7 /* any value but TN_RESOLVED / TN_DEFERRED */

/* A byte whose address is stored into every out-pointer before a call: the
   library must set *out to NULL on entry (c-api.md), so it must never survive. */
static char g_sentinel_byte;
#define SENTINEL (&g_sentinel_byte)

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */
/* ------------------------------------------------------------------------ */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "parity: out of memory\n");
        exit(2);
    }
    return p;
}

static char *xstrndup(const char *s, size_t n)
{
    char *d = (char *)xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

/* Appends formatted text to a malloc'd string (used to collect problems seen
   inside the resolver callback). */
static void appendf(char **buf, const char *fmt, ...)
{
    va_list ap;
    size_t old = *buf ? strlen(*buf) : 0;
    int n;
    char *nb;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    nb = (char *)realloc(*buf, old + (old ? 2 : 0) + (size_t)n + 1);
    if (nb == NULL) {
        fprintf(stderr, "parity: out of memory\n");
        exit(2);
    }
    if (old) {
        nb[old++] = ';';
        nb[old++] = ' ';
    }
    va_start(ap, fmt);
    vsnprintf(nb + old, (size_t)n + 1, fmt, ap);
    va_end(ap);
    *buf = nb;
}

/* Prints s on one line: control bytes and DEL as \xNN, the rest raw. */
static void put_escaped(FILE *f, const char *s)
{
    const unsigned char *p;
    if (s == NULL) {
        fputs("(null)", f);
        return;
    }
    for (p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\x%02x", *p);
        else fputc(*p, f);
    }
}

/* ------------------------------------------------------------------------ */
/* Failure reporting                                                         */
/* ------------------------------------------------------------------------ */

typedef struct {
    const char *name; /* case name */
    int failed;
} vcase;

static void fail3(vcase *c, const char *what, const char *expected, const char *actual)
{
    c->failed = 1;
    printf("FAIL %s: %s | expected: ", c->name, what);
    put_escaped(stdout, expected);
    printf(" | actual: ");
    put_escaped(stdout, actual);
    printf("\n");
    fflush(stdout);
}

static void failf(vcase *c, const char *fmt, ...)
{
    va_list ap;
    c->failed = 1;
    printf("FAIL %s: ", c->name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static const char *status_text(tn_status st)
{
    const char *s = tn_status_str(st);
    return s ? s : "(null)";
}

/* ------------------------------------------------------------------------ */
/* Request ids                                                               */
/* ------------------------------------------------------------------------ */

static char **g_ids;
static size_t g_nids, g_ids_cap;
static const char *g_last_counter; /* points into the last entry of g_ids */

/* ^elc-[0-9a-z]+-[1-9][0-9]*$ ; on success *counter points at the counter. */
static int id_well_formed(const char *id, const char **counter)
{
    const char *p = id;
    if (strncmp(p, "elc-", 4) != 0) return 0;
    p += 4;
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z'))) return 0;
    while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z')) p++;
    if (*p != '-') return 0;
    p++;
    if (!(*p >= '1' && *p <= '9')) return 0;
    *counter = p;
    p++;
    while (*p >= '0' && *p <= '9') p++;
    return *p == '\0';
}

/* Compares two decimal counters without leading zeros. */
static int counter_cmp(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb) return la < lb ? -1 : 1;
    return strcmp(a, b);
}

/* Checks an id the library produced and records it. 1 when fine. */
static int check_and_record_id(vcase *c, const char *label, const char *id)
{
    const char *counter = NULL;
    size_t i;
    int ok = 1;

    if (!id_well_formed(id, &counter)) {
        char what[96];
        snprintf(what, sizeof what, "malformed request id in %s", label);
        fail3(c, what, "^elc-[0-9a-z]+-[1-9][0-9]*$", id);
        return 0;
    }
    for (i = 0; i < g_nids; i++) {
        if (strcmp(g_ids[i], id) == 0) {
            char what[96];
            snprintf(what, sizeof what, "request id in %s reused (ids must be unique per process)", label);
            fail3(c, what, "a new id", id);
            ok = 0;
            break;
        }
    }
    if (ok && g_last_counter != NULL && counter_cmp(counter, g_last_counter) <= 0) {
        char what[96], prev[96];
        snprintf(what, sizeof what, "request id counter in %s did not increase", label);
        snprintf(prev, sizeof prev, "a counter above %s", g_last_counter);
        fail3(c, what, prev, id);
        ok = 0;
    }
    if (g_nids == g_ids_cap) {
        size_t ncap = g_ids_cap ? g_ids_cap * 2 : 64;
        char **n = (char **)realloc(g_ids, ncap * sizeof *n);
        if (n == NULL) {
            fprintf(stderr, "parity: out of memory\n");
            exit(2);
        }
        g_ids = n;
        g_ids_cap = ncap;
    }
    g_ids[g_nids] = xstrdup(id);
    /* Keep tracking the highest counter seen, even after a problem. */
    if (g_last_counter == NULL || counter_cmp(counter, g_last_counter) > 0)
        g_last_counter = g_ids[g_nids] + (counter - id);
    g_nids++;
    return ok;
}

static size_t first_diff(const char *a, const char *b)
{
    size_t i = 0;
    while (a[i] != '\0' && a[i] == b[i]) i++;
    return i;
}

/* Compares the library's text `actual` with the vector's `expected`, byte for
   byte. When expected holds "id":"<ID>", the first "id":"…" in actual must be
   at the same place; its value is checked (and recorded) as a request id and
   replaced by <ID> before comparing. Reports failures itself; 1 when equal. */
static int compare_text(vcase *c, const char *label, const char *expected, const char *actual)
{
    const char *ph = strstr(expected, ID_PLACEHOLDER);
    const char *at, *val, *close;
    char *norm;
    size_t pre, plen = strlen(ID_PREFIX);
    int ok;
    char what[96];

    if (ph == NULL) {
        if (strcmp(expected, actual) == 0) return 1;
        snprintf(what, sizeof what, "%s differs from byte %lu", label,
                 (unsigned long)first_diff(expected, actual));
        fail3(c, what, expected, actual);
        return 0;
    }
    at = strstr(actual, ID_PREFIX);
    if (at == NULL) {
        snprintf(what, sizeof what, "no \"id\":\"...\" in %s", label);
        fail3(c, what, expected, actual);
        return 0;
    }
    val = at + plen;
    close = strchr(val, '"');
    if (close == NULL) {
        snprintf(what, sizeof what, "unterminated id string in %s", label);
        fail3(c, what, expected, actual);
        return 0;
    }
    {
        char *id = xstrndup(val, (size_t)(close - val));
        ok = check_and_record_id(c, label, id);
        free(id);
    }
    pre = (size_t)(at - actual);
    norm = (char *)xmalloc(pre + strlen(ID_PLACEHOLDER) + strlen(close + 1) + 1);
    memcpy(norm, actual, pre);
    strcpy(norm + pre, ID_PLACEHOLDER);
    strcat(norm, close + 1);
    if (strcmp(norm, expected) != 0) {
        snprintf(what, sizeof what, "%s differs from byte %lu (after id substitution)", label,
                 (unsigned long)first_diff(expected, norm));
        fail3(c, what, expected, norm);
        ok = 0;
    }
    free(norm);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* The resolver                                                              */
/* ------------------------------------------------------------------------ */

typedef struct {
    const char *mode;  /* the vector's `resolver` */
    int calls;
    char *seen;        /* copy of the first request_json */
    char *problems;    /* problems noticed inside the callback, or NULL */
} resolver_ctx;

static void answer_expect(resolver_ctx *ctx, tn_responder *responder, const char *answer, int want_ok)
{
    tn_status st = tn_responder_answer(responder, answer);
    if (want_ok && st != TN_OK) {
        const char *m = tn_last_error_message();
        appendf(&ctx->problems, "tn_responder_answer(%s) returned %d (%s), want TN_OK; message: %s",
                answer, (int)st, status_text(st), m ? m : "(null)");
    } else if (!want_ok) {
        if (st == TN_OK) {
            appendf(&ctx->problems, "tn_responder_answer(%s) returned TN_OK, want an error", answer);
        } else {
            const char *m = tn_last_error_message();
            if (m == NULL || m[0] == '\0')
                appendf(&ctx->problems,
                        "tn_responder_answer(%s) returned %d but tn_last_error_message() is %s",
                        answer, (int)st, m ? "empty" : "NULL");
        }
    }
}

static int32_t resolver_cb(void *user_data, const char *request_json, tn_responder *responder)
{
    resolver_ctx *ctx = (resolver_ctx *)user_data;
    const char *mode = ctx->mode;

    ctx->calls++;
    if (ctx->calls > 1) {
        appendf(&ctx->problems, "resolver called %d times", ctx->calls);
        return RESOLVER_FAIL_CODE;
    }
    if (request_json == NULL) {
        appendf(&ctx->problems, "resolver got request_json == NULL");
        return RESOLVER_FAIL_CODE;
    }
    ctx->seen = xstrdup(request_json);
    if (responder == NULL) {
        appendf(&ctx->problems, "resolver got responder == NULL");
        return RESOLVER_FAIL_CODE;
    }

    if (strcmp(mode, "accept_data") == 0) {
        /* Echo the Request's id: an Answer with a different id is invalid. */
        const char *at = strstr(request_json, ID_PREFIX);
        const char *val = at ? at + strlen(ID_PREFIX) : NULL;
        const char *close = val ? strchr(val, '"') : NULL;
        static const char tail[] = "\",\"ok\":true,\"data\":{\"name\":\"muthu\"}}";
        char *answer;
        size_t n;
        if (close == NULL) {
            appendf(&ctx->problems, "no \"id\":\"…\" in the request the resolver got");
            answer_expect(ctx, responder, "{\"ok\":true,\"data\":{\"name\":\"muthu\"}}", 1);
            return TN_RESOLVED;
        }
        n = (size_t)(close - val);
        answer = (char *)xmalloc(strlen("{\"id\":\"") + n + sizeof tail);
        strcpy(answer, "{\"id\":\"");
        memcpy(answer + strlen(answer), val, n);
        answer[strlen("{\"id\":\"") + n] = '\0';
        strcat(answer, tail);
        answer_expect(ctx, responder, answer, 1);
        free(answer);
        return TN_RESOLVED;
    }
    if (strcmp(mode, "accept_no_data") == 0) {
        answer_expect(ctx, responder, "{\"ok\":true}", 1);
        return TN_RESOLVED;
    }
    if (strcmp(mode, "declined") == 0) {
        answer_expect(ctx, responder, "{\"ok\":false,\"reason\":\"declined\"}", 1);
        return TN_RESOLVED;
    }
    if (strcmp(mode, "cancelled") == 0) {
        answer_expect(ctx, responder, "{\"ok\":false,\"reason\":\"cancelled\"}", 1);
        return TN_RESOLVED;
    }
    if (strcmp(mode, "expired") == 0) {
        answer_expect(ctx, responder, "{\"ok\":false,\"reason\":\"expired\"}", 1);
        return TN_RESOLVED;
    }
    if (strcmp(mode, "no_reason") == 0) {
        answer_expect(ctx, responder, "{\"ok\":false}", 1);
        return TN_RESOLVED;
    }
    if (strcmp(mode, "fails") == 0) {
        return RESOLVER_FAIL_CODE;
    }
    if (strcmp(mode, "no_answer") == 0) {
        return TN_RESOLVED;
    }
    if (strcmp(mode, "invalid_json") == 0) {
        answer_expect(ctx, responder, "this is {not JSON", 0);
        return TN_RESOLVED;
    }
    if (strcmp(mode, "invalid_answer") == 0) {
        answer_expect(ctx, responder, "{\"ok\":\"yes\"}", 0);
        return TN_RESOLVED;
    }
    appendf(&ctx->problems, "unknown resolver mode '%s'", mode);
    return RESOLVER_FAIL_CODE;
}

/* ------------------------------------------------------------------------ */
/* One vector                                                                */
/* ------------------------------------------------------------------------ */

static const char *const RESOLVER_MODES[] = {
    "absent", "accept_data", "accept_no_data", "declined", "cancelled", "expired",
    "no_reason", "fails", "no_answer", "invalid_json", "invalid_answer", NULL,
};

/* A string member usable as a C string (present, a string, no NUL inside). */
static const char *cstr_member(vcase *c, const jf_object *o, const char *key, int nullable,
                               int *is_null)
{
    const jf_member *m = jf_get(o, key);
    if (is_null) *is_null = 0;
    if (m == NULL) {
        failf(c, "malformed vector: no \"%s\"", key);
        return NULL;
    }
    if (m->kind == JF_NULL && nullable) {
        if (is_null) *is_null = 1;
        return NULL;
    }
    if (m->kind != JF_STRING) {
        failf(c, "malformed vector: \"%s\" is not a string%s", key, nullable ? " or null" : "");
        return NULL;
    }
    if (strlen(m->str) != m->str_len) {
        failf(c, "malformed vector: \"%s\" contains a NUL byte after decoding", key);
        return NULL;
    }
    return m->str;
}

/* Checks the outcome of a call that must fail. `out` is what the out-pointer
   holds after the call; frees it when the library (wrongly) filled it. */
static void expect_error(vcase *c, tn_status st, char *out)
{
    const char *msg = tn_last_error_message(); /* read before any other tn_ call */
    char *msg_copy = msg ? xstrdup(msg) : NULL;

    if (st == TN_OK) {
        fail3(c, "want an error status, got TN_OK", "(error)", out == SENTINEL ? "(out untouched)" : out);
    } else if (st == TN_ERR_PANIC) {
        failf(c, "the library panicked (TN_ERR_PANIC) on invalid input: %s", msg_copy ? msg_copy : "(null)");
    }
    if (out == SENTINEL) {
        failf(c, "*out was not set to NULL on entry");
    } else if (out != NULL) {
        if (st != TN_OK) failf(c, "error status %d but *out is not NULL", (int)st);
        else tn_string_free(out); /* a real output, reported above */
    }
    if (st != TN_OK && (msg_copy == NULL || msg_copy[0] == '\0'))
        failf(c, "error status %d (%s) but tn_last_error_message() is %s", (int)st,
              status_text(st), msg_copy ? "empty" : "NULL");
    free(msg_copy);
}

/* Checks the outcome of a call that must succeed. expected NULL means "TN_OK
   and no output". Frees out. */
static void expect_output(vcase *c, tn_status st, char *out, const char *expected)
{
    if (st != TN_OK) {
        const char *msg = tn_last_error_message();
        char what[96];
        snprintf(what, sizeof what, "want TN_OK, got status %d (%s)", (int)st, status_text(st));
        fail3(c, what, expected ? expected : "(no output)", msg ? msg : "(no message)");
        if (out != NULL && out != SENTINEL) failf(c, "error status %d but *out is not NULL", (int)st);
        if (out == SENTINEL) failf(c, "*out was not set to NULL on entry");
        return;
    }
    if (out == SENTINEL) {
        failf(c, "*out was not set to NULL on entry");
        return;
    }
    if (expected == NULL) {
        if (out != NULL) {
            fail3(c, "want no reply (*out == NULL)", "(null)", out);
            tn_string_free(out);
        }
        return;
    }
    if (out == NULL) {
        fail3(c, "TN_OK but *out is NULL", expected, NULL);
        return;
    }
    compare_text(c, "output", expected, out);
    tn_string_free(out);
}

typedef tn_status (*pure_fn)(const char *, char **);

static void run_vector(vcase *c, const jf_object *o)
{
    const char *fn, *input, *output, *resolver = NULL, *request_seen = NULL;
    int output_null = 0, seen_null = 0, error = 0;
    const jf_member *m;
    size_t i;
    int is_srr;

    /* ---- shape of the vector ---- */
    fn = cstr_member(c, o, "fn", 0, NULL);
    if (fn == NULL) return;
    is_srr = strcmp(fn, "server_request_response") == 0;
    for (i = 0; i < o->count; i++) {
        const char *k = o->members[i].key;
        if (strlen(k) != o->members[i].key_len ||
            !(strcmp(k, "fn") == 0 || strcmp(k, "case") == 0 || strcmp(k, "input") == 0 ||
              strcmp(k, "output") == 0 || strcmp(k, "error") == 0 ||
              (is_srr && (strcmp(k, "resolver") == 0 || strcmp(k, "request_seen") == 0)))) {
            failf(c, "malformed vector: unexpected key \"%s\" for fn %s", k, fn);
            return;
        }
    }
    input = cstr_member(c, o, "input", 0, NULL);
    if (input == NULL) return;
    output = cstr_member(c, o, "output", 1, &output_null);
    if (output == NULL && !output_null) return;
    m = jf_get(o, "error");
    if (m != NULL) {
        if (m->kind != JF_TRUE && m->kind != JF_FALSE) {
            failf(c, "malformed vector: \"error\" is not a boolean");
            return;
        }
        error = m->kind == JF_TRUE;
    }
    if (error && !output_null) {
        failf(c, "malformed vector: error is true but output is not null");
        return;
    }
    if (!error && !is_srr && output_null) {
        failf(c, "malformed vector: output is null for fn %s", fn);
        return;
    }
    if (is_srr) {
        resolver = cstr_member(c, o, "resolver", 0, NULL);
        if (resolver == NULL) return;
        for (i = 0; RESOLVER_MODES[i] != NULL; i++)
            if (strcmp(RESOLVER_MODES[i], resolver) == 0) break;
        if (RESOLVER_MODES[i] == NULL) {
            failf(c, "malformed vector: unknown resolver \"%s\"", resolver);
            return;
        }
        if (jf_get(o, "request_seen") != NULL || !error) {
            request_seen = cstr_member(c, o, "request_seen", 1, &seen_null);
            if (request_seen == NULL && !seen_null) return;
        } else {
            seen_null = -1; /* absent on an error vector: not checked */
        }
        if (request_seen != NULL && strcmp(resolver, "absent") == 0) {
            failf(c, "malformed vector: resolver absent but request_seen is not null");
            return;
        }
    }

    /* ---- the call ---- */
    if (!is_srr) {
        pure_fn f;
        char *out = SENTINEL;
        tn_status st;
        if (strcmp(fn, "elicitation_to_request") == 0) f = tn_elicitation_to_request;
        else if (strcmp(fn, "answer_to_result") == 0) f = tn_answer_to_result;
        else if (strcmp(fn, "sanitize") == 0) f = tn_sanitize_name;
        else {
            failf(c, "malformed vector: unknown fn \"%s\"", fn);
            return;
        }
        st = f(input, &out);
        if (error) expect_error(c, st, out);
        else expect_output(c, st, out, output);
        return;
    }

    {
        resolver_ctx ctx;
        char *out = SENTINEL;
        tn_status st;
        int absent = strcmp(resolver, "absent") == 0;

        memset(&ctx, 0, sizeof ctx);
        ctx.mode = resolver;
        if (absent) st = tn_server_request_response(NULL, NULL, input, &out);
        else st = tn_server_request_response(resolver_cb, &ctx, input, &out);

        if (error) expect_error(c, st, out);
        else expect_output(c, st, out, output);

        if (ctx.problems != NULL) failf(c, "in the resolver: %s", ctx.problems);
        if (seen_null == 1) {
            if (ctx.calls != 0) fail3(c, "the resolver must not have been called", "(not called)", ctx.seen);
        } else if (request_seen != NULL) {
            if (ctx.calls == 0) fail3(c, "the resolver was not called", request_seen, "(not called)");
            else if (ctx.seen != NULL) compare_text(c, "request_seen", request_seen, ctx.seen);
        }
        free(ctx.seen);
        free(ctx.problems);
    }
}

/* ------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    FILE *f;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    unsigned long lineno = 0, total = 0, passed = 0, failed = 0;
    char **names = NULL;
    size_t nnames = 0, names_cap = 0, i;

    if (argc != 2) {
        fprintf(stderr, "usage: %s <path-to-bridge-vectors.jsonl>\n", argv[0]);
        return 2;
    }
    f = fopen(argv[1], "rb");
    if (f == NULL) {
        perror(argv[1]);
        return 2;
    }

    while ((n = getline(&line, &cap, f)) != -1) {
        jf_object obj;
        char err[256], label[64];
        vcase c;
        const jf_member *cm;

        lineno++;
        total++;
        snprintf(label, sizeof label, "line-%lu", lineno);
        c.name = label;
        c.failed = 0;

        if (jf_parse(line, (size_t)n, &obj, err, sizeof err) != 0) {
            failf(&c, "cannot parse the vector line: %s", err);
            failed++;
            continue;
        }
        cm = jf_get(&obj, "case");
        if (cm != NULL && cm->kind == JF_STRING && cm->str_len > 0 && strlen(cm->str) == cm->str_len) {
            c.name = cm->str;
            for (i = 0; i < nnames; i++) {
                if (strcmp(names[i], cm->str) == 0) {
                    failf(&c, "malformed vector: duplicate case name (line %lu)", lineno);
                    break;
                }
            }
            if (nnames == names_cap) {
                size_t ncap = names_cap ? names_cap * 2 : 256;
                char **nn = (char **)realloc(names, ncap * sizeof *nn);
                if (nn == NULL) {
                    fprintf(stderr, "parity: out of memory\n");
                    return 2;
                }
                names = nn;
                names_cap = ncap;
            }
            names[nnames++] = xstrdup(cm->str);
        } else {
            failf(&c, "malformed vector: \"case\" missing, empty or not a string");
        }

        if (!c.failed) run_vector(&c, &obj);
        if (c.failed) failed++;
        else passed++;
        jf_free(&obj);
    }
    if (ferror(f)) {
        perror(argv[1]);
        failed++;
    }
    fclose(f);
    free(line);
    for (i = 0; i < nnames; i++) free(names[i]);
    free(names);
    for (i = 0; i < g_nids; i++) free(g_ids[i]);
    free(g_ids);

    if (total == 0) printf("FAIL: no vectors in %s\n", argv[1]);
    printf("%lu passed, %lu failed\n", passed, failed);
    return (failed == 0 && total > 0 && passed == total) ? 0 : 1;
}
