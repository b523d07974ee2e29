/*
 * json_flat.h - a tiny strict parser for *flat* JSON objects, as used by the
 * parity vector lines (shared/parity/bridge-vectors.jsonl):
 *
 *     {"key": "string", "other": null, "flag": true, ...}
 *
 * Values may only be strings, null, true or false. Numbers, arrays and nested
 * objects are rejected, as are duplicate keys, raw control characters inside
 * strings, invalid UTF-8, lone surrogate escapes and trailing text. Every JSON
 * escape is decoded into UTF-8 (\" \\ \/ \b \f \n \r \t \uXXXX, surrogate
 * pairs included). A decoded string may contain NUL bytes (from \u0000), so
 * every string carries its length; it is also NUL-terminated for convenience.
 *
 * Header-only, C99, no dependencies beyond libc. Usage:
 *
 *     jf_object obj;
 *     char err[256];
 *     if (jf_parse(text, len, &obj, err, sizeof err) != 0) { ...err... }
 *     const jf_member *m = jf_get(&obj, "input");
 *     ...
 *     jf_free(&obj);
 */
#ifndef TN_TESTS_JSON_FLAT_H
#define TN_TESTS_JSON_FLAT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { JF_NULL = 0, JF_FALSE, JF_TRUE, JF_STRING } jf_kind;

typedef struct {
    char *key;        /* decoded, NUL-terminated (may also contain NULs) */
    size_t key_len;
    jf_kind kind;
    char *str;        /* JF_STRING only (else NULL): decoded UTF-8, NUL-terminated */
    size_t str_len;   /* JF_STRING only: length in bytes, not counting the terminator */
} jf_member;

typedef struct {
    jf_member *members;
    size_t count;
} jf_object;

typedef struct {
    const unsigned char *start;
    const unsigned char *p;
    const unsigned char *end;
    char *err;
    size_t err_size;
} jf_parser_;

static inline int jf_fail_(jf_parser_ *ps, const char *fmt, ...)
{
    if (ps->err != NULL && ps->err_size > 0) {
        int n = snprintf(ps->err, ps->err_size, "at byte %lu: ",
                         (unsigned long)(ps->p - ps->start));
        if (n >= 0 && (size_t)n < ps->err_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(ps->err + n, ps->err_size - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static inline void jf_free(jf_object *o)
{
    size_t i;
    if (o == NULL) return;
    for (i = 0; i < o->count; i++) {
        free(o->members[i].key);
        free(o->members[i].str);
    }
    free(o->members);
    o->members = NULL;
    o->count = 0;
}

static inline void jf_skip_ws_(jf_parser_ *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

/* Length of the valid UTF-8 sequence starting at p (1..4), or 0 if invalid. */
static inline size_t jf_utf8_len_(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0];
    size_t n, i;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1Fu; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0Fu; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07u; }
    else return 0;
    if ((size_t)(end - p) < n) return 0;
    for (i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3Fu);
    }
    if (n == 3 && cp < 0x800) return 0;                     /* overlong */
    if (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0; /* overlong / too big */
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;              /* encoded surrogate */
    return n;
}

static inline int jf_hex4_(jf_parser_ *ps, uint32_t *out)
{
    uint32_t v = 0;
    int i;
    if (ps->end - ps->p < 4) return jf_fail_(ps, "truncated \\u escape");
    for (i = 0; i < 4; i++) {
        unsigned char c = ps->p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return jf_fail_(ps, "bad hex digit in \\u escape");
    }
    ps->p += 4;
    *out = v;
    return 0;
}

static inline size_t jf_put_utf8_(char *o, uint32_t cp)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Parses a JSON string at ps->p (which must be at the opening quote). */
static inline int jf_string_(jf_parser_ *ps, char **out, size_t *out_len)
{
    const unsigned char *q;
    char *buf, *o;

    *out = NULL;
    *out_len = 0;
    if (ps->p >= ps->end || *ps->p != '"') return jf_fail_(ps, "expected '\"'");
    ps->p++;

    /* Pass 1: find the closing quote. The decoded text is never longer than
       the raw text (every escape shrinks or keeps its length). */
    q = ps->p;
    while (q < ps->end && *q != '"') {
        if (*q == '\\') {
            if (ps->end - q < 2) { q = ps->end; break; }
            q += 2;
        } else {
            q++;
        }
    }
    if (q >= ps->end) return jf_fail_(ps, "unterminated string");

    buf = (char *)malloc((size_t)(q - ps->p) + 1);
    if (buf == NULL) return jf_fail_(ps, "out of memory");
    o = buf;

    /* Pass 2: validate and decode. */
    while (*ps->p != '"') {
        unsigned char c = *ps->p;
        if (c < 0x20) { free(buf); return jf_fail_(ps, "raw control byte 0x%02x in string", c); }
        if (c == '\\') {
            unsigned char e;
            ps->p++;
            e = *ps->p++;
            switch (e) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '/': *o++ = '/'; break;
            case 'b': *o++ = '\b'; break;
            case 'f': *o++ = '\f'; break;
            case 'n': *o++ = '\n'; break;
            case 'r': *o++ = '\r'; break;
            case 't': *o++ = '\t'; break;
            case 'u': {
                uint32_t cp = 0, lo = 0;
                if (jf_hex4_(ps, &cp) != 0) { free(buf); return -1; }
                if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    free(buf);
                    return jf_fail_(ps, "lone low surrogate \\u%04x", (unsigned)cp);
                }
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                        free(buf);
                        return jf_fail_(ps, "high surrogate \\u%04x not followed by \\u", (unsigned)cp);
                    }
                    ps->p += 2;
                    if (jf_hex4_(ps, &lo) != 0) { free(buf); return -1; }
                    if (lo < 0xDC00 || lo > 0xDFFF) {
                        free(buf);
                        return jf_fail_(ps, "high surrogate \\u%04x followed by \\u%04x",
                                        (unsigned)cp, (unsigned)lo);
                    }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                o += jf_put_utf8_(o, cp);
                break;
            }
            default:
                free(buf);
                ps->p--;
                return jf_fail_(ps, "bad escape '\\%c'", (e >= 0x20 && e < 0x7f) ? e : '?');
            }
        } else if (c < 0x80) {
            *o++ = (char)c;
            ps->p++;
        } else {
            size_t n = jf_utf8_len_(ps->p, q);
            if (n == 0) { free(buf); return jf_fail_(ps, "invalid UTF-8 in string"); }
            memcpy(o, ps->p, n);
            o += n;
            ps->p += n;
        }
    }
    ps->p++; /* closing quote */
    *o = '\0';
    *out = buf;
    *out_len = (size_t)(o - buf);
    return 0;
}

static inline int jf_literal_(jf_parser_ *ps, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, lit, n) != 0) return -1;
    ps->p += n;
    return 0;
}

/* Parses exactly one flat JSON object filling the whole of text[0..len)
   (surrounding whitespace allowed). Returns 0 on success; on failure returns
   -1, leaves *out empty and writes a message into err. */
static inline int jf_parse(const char *text, size_t len, jf_object *out, char *err, size_t err_size)
{
    jf_parser_ ps;
    size_t cap = 0;

    out->members = NULL;
    out->count = 0;
    if (err != NULL && err_size > 0) err[0] = '\0';
    if (text == NULL) { if (err != NULL && err_size > 0) snprintf(err, err_size, "NULL text"); return -1; }

    ps.start = ps.p = (const unsigned char *)text;
    ps.end = ps.start + len;
    ps.err = err;
    ps.err_size = err_size;

    jf_skip_ws_(&ps);
    if (ps.p >= ps.end || *ps.p != '{') return jf_fail_(&ps, "expected '{'");
    ps.p++;
    jf_skip_ws_(&ps);
    if (ps.p < ps.end && *ps.p == '}') {
        ps.p++;
    } else {
        for (;;) {
            jf_member m;
            size_t i;
            memset(&m, 0, sizeof m);
            jf_skip_ws_(&ps);
            if (jf_string_(&ps, &m.key, &m.key_len) != 0) goto fail;
            for (i = 0; i < out->count; i++) {
                if (out->members[i].key_len == m.key_len &&
                    memcmp(out->members[i].key, m.key, m.key_len) == 0) {
                    free(m.key);
                    jf_fail_(&ps, "duplicate key");
                    goto fail;
                }
            }
            jf_skip_ws_(&ps);
            if (ps.p >= ps.end || *ps.p != ':') { free(m.key); jf_fail_(&ps, "expected ':'"); goto fail; }
            ps.p++;
            jf_skip_ws_(&ps);
            if (ps.p < ps.end && *ps.p == '"') {
                m.kind = JF_STRING;
                if (jf_string_(&ps, &m.str, &m.str_len) != 0) { free(m.key); goto fail; }
            } else if (jf_literal_(&ps, "null") == 0) {
                m.kind = JF_NULL;
            } else if (jf_literal_(&ps, "true") == 0) {
                m.kind = JF_TRUE;
            } else if (jf_literal_(&ps, "false") == 0) {
                m.kind = JF_FALSE;
            } else {
                free(m.key);
                jf_fail_(&ps, "unsupported value (only strings, null, true, false)");
                goto fail;
            }
            if (out->count == cap) {
                size_t ncap = cap ? cap * 2 : 8;
                jf_member *nm = (jf_member *)realloc(out->members, ncap * sizeof *nm);
                if (nm == NULL) {
                    free(m.key);
                    free(m.str);
                    jf_fail_(&ps, "out of memory");
                    goto fail;
                }
                out->members = nm;
                cap = ncap;
            }
            out->members[out->count++] = m;
            jf_skip_ws_(&ps);
            if (ps.p < ps.end && *ps.p == ',') { ps.p++; continue; }
            if (ps.p < ps.end && *ps.p == '}') { ps.p++; break; }
            jf_fail_(&ps, "expected ',' or '}'");
            goto fail;
        }
    }
    jf_skip_ws_(&ps);
    if (ps.p != ps.end) { jf_fail_(&ps, "trailing text after the object"); goto fail; }
    return 0;

fail:
    jf_free(out);
    return -1;
}

/* The member named key (a C string), or NULL when absent. */
static inline const jf_member *jf_get(const jf_object *o, const char *key)
{
    size_t i, n = strlen(key);
    for (i = 0; i < o->count; i++)
        if (o->members[i].key_len == n && memcmp(o->members[i].key, key, n) == 0)
            return &o->members[i];
    return NULL;
}

#endif /* TN_TESTS_JSON_FLAT_H */
