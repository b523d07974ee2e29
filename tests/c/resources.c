/* Resources, templates, subscriptions, prompts and completions through the C ABI against the
 * fixture's --resources, in both eras (c-api.md "Resources", "Prompts"): every function, its
 * out-pointer conventions, bad input (NULLs, unknown servers, malformed JSON) answered with a
 * status and a message, never a crash; a read cancelled from another thread; an update event.
 * Also run under ASan+UBSan and valgrind (scripts/test). */
#include "check.h"
#include <pthread.h>

static tn_client *connect_fx(const char *flags, tn_resolver_fn r) {
  char *cfg = fmt("{\"mcpServers\":{\"fx\":{\"command\":[\"%s\",\"--resources\"%s]}}}", fixture(), flags);
  tn_client *c = NULL;
  tn_status st = tn_connect(cfg, r, NULL, &c);
  CHECK(st == TN_OK, "tn_connect: %d %s", st, tn_last_error_message());
  free(cfg);
  return c;
}

/* The out of a `char **` function, or "ERR <status>: <message>". */
#define TAKE(call_expr, out)                                                                   \
  do {                                                                                         \
    (out) = (char *)0x1;                                                                       \
    char *o_ = (char *)0x1;                                                                    \
    tn_status s_ = (call_expr);                                                                \
    CHECK(s_ == TN_OK ? o_ != NULL && o_ != (char *)0x1 : o_ == NULL, "out pointer conventions"); \
    (out) = s_ == TN_OK ? strdup(o_) : fmt("ERR %d: %s", s_, tn_last_error_message());         \
    if (s_ == TN_OK) tn_string_free(o_);                                                       \
  } while (0)

static const char *ERAS[] = {"", ",\"--modern\""};

static void test_lists_reads_prompts_completions_in_both_eras(void) {
  for (int e = 0; e < 2; e++) {
    tn_client *c = connect_fx(ERAS[e], NULL);
    char *r;
    TAKE(tn_list_resources(c, &o_), r);
    CHECK(contains(r, "{\"server\":\"fx\",\"uri\":\"fx://ask\"") && contains(r, "\"uri\":\"fx://doc/5\""), "%s", r);
    free(r);
    TAKE(tn_list_resource_templates(c, &o_), r);
    CHECK(contains(r, "\"uriTemplate\":\"fx://item/{id}\""), "%s", r);
    free(r);
    TAKE(tn_read_resource(c, "fx", "fx://doc/2", &o_), r);
    CHECK(strcmp(r, "{\"contents\":[{\"uri\":\"fx://doc/2\",\"mimeType\":\"text/plain\",\"text\":\"document 2\"}]}") == 0, "%s", r);
    free(r);
    TAKE(tn_read_resource(c, "fx", "fx://nowhere", &o_), r);
    CHECK(contains(r, "ERR 4") && contains(r, "fx://nowhere") && contains(r, "server `fx`"), "%s", r);
    free(r);
    TAKE(tn_list_prompts(c, &o_), r);
    CHECK(contains(r, "{\"name\":\"fx_greet\",\"server\":\"fx\",\"prompt\":\"greet\""), "%s", r);
    free(r);
    TAKE(tn_get_prompt(c, "fx_greet", "{\"name\":\"Ada\"}", &o_), r);
    CHECK(contains(r, "\"text\":\"Hello, Ada!\""), "%s", r);
    free(r);
    TAKE(tn_complete(c, "{\"server\":\"fx\",\"ref\":{\"type\":\"ref/prompt\",\"name\":\"code_review\"},"
                       "\"argument\":{\"name\":\"language\",\"value\":\"r\"}}", &o_), r);
    CHECK(strcmp(r, "{\"values\":[\"rust\"]}") == 0, "%s", r);
    free(r);
    tn_disconnect(c);
  }
}

static void test_bad_input_is_a_status_and_a_message(void) {
  tn_client *c = connect_fx("", NULL);
  char *r;
  TAKE(tn_read_resource(c, NULL, "fx://doc/1", &o_), r);
  CHECK(contains(r, "ERR 1") && contains(r, "server"), "%s", r);
  free(r);
  TAKE(tn_read_resource(c, "fx", NULL, &o_), r);
  CHECK(contains(r, "ERR 1") && contains(r, "uri"), "%s", r);
  free(r);
  TAKE(tn_read_resource(c, "nope", "fx://doc/1", &o_), r);
  CHECK(contains(r, "ERR 4") && contains(r, "nope"), "%s", r);
  free(r);
  TAKE(tn_get_prompt(c, "fx_greet", "{\"name\":", &o_), r);
  CHECK(contains(r, "ERR 2"), "%s", r);
  free(r);
  TAKE(tn_get_prompt(c, NULL, NULL, &o_), r);
  CHECK(contains(r, "ERR 1"), "%s", r);
  free(r);
  TAKE(tn_get_prompt(c, "fx_nothing", NULL, &o_), r);
  CHECK(contains(r, "ERR 4") && contains(r, "fx_nothing"), "%s", r);
  free(r);
  TAKE(tn_complete(c, "{\"server\":\"fx\"}", &o_), r);
  CHECK(contains(r, "ERR 1") && contains(r, "ref"), "%s", r);
  free(r);
  TAKE(tn_complete(c, NULL, &o_), r);
  CHECK(contains(r, "ERR 1"), "%s", r);
  free(r);
  CHECK(tn_subscribe_resource(c, NULL, "x") == TN_ERR_INVALID_ARGUMENT, "NULL server");
  CHECK(tn_unsubscribe_resource(c, "fx", "fx://never") == TN_ERR_NOT_FOUND, "%s", tn_last_error_message());
  CHECK(tn_list_resources(c, NULL) == TN_ERR_INVALID_ARGUMENT, "NULL out");
  TAKE(tn_uri_template("{\"template\":\"{a\"}", &o_), r);
  CHECK(contains(r, "ERR 1") && contains(r, "RFC 6570"), "%s", r);
  free(r);
  TAKE(tn_uri_template("{\"template\":\"fx://item/{id}{?q}\",\"values\":{\"id\":\"a b\",\"q\":[\"x\",\"y\"]}}", &o_), r);
  CHECK(strcmp(r, "{\"variables\":[\"id\",\"q\"],\"uri\":\"fx://item/a%20b?q=x,y\"}") == 0, "%s", r);
  free(r);
  tn_disconnect(c);
  char *after;
  TAKE(tn_list_prompts(c, &o_), after);
  CHECK(contains(after, "ERR 5"), "a disconnected client: %s", after);
  free(after);
  TAKE(tn_read_resource(c, "fx", "fx://doc/1", &o_), after);
  CHECK(contains(after, "ERR 5"), "%s", after);
  free(after);
}

typedef struct {
  tn_client *c;
  uint64_t id;
  tn_status status;
  char message[512];
} slow_read;

static void *read_slowly(void *arg) {
  slow_read *s = arg;
  char *o = NULL;
  s->status = tn_read_resource_ex(s->c, "fx", "fx://slow/10000", NULL, &s->id, &o);
  snprintf(s->message, sizeof s->message, "%s", s->status == TN_OK ? "" : tn_last_error_message());
  tn_string_free(o);
  return NULL;
}

static void test_a_read_is_cancelled_from_another_thread(void) {
  for (int e = 0; e < 2; e++) {
    tn_client *c = connect_fx(ERAS[e], NULL);
    slow_read s = {.c = c};
    pthread_t t;
    double t0 = now_s();
    pthread_create(&t, NULL, read_slowly, &s);
    while (__atomic_load_n(&s.id, __ATOMIC_SEQ_CST) == 0 && now_s() - t0 < 5) usleep(2000);
    usleep(100000);
    CHECK(tn_call_cancel(c, __atomic_load_n(&s.id, __ATOMIC_SEQ_CST)) == TN_OK, "%s", tn_last_error_message());
    pthread_join(t, NULL);
    CHECK(s.status == TN_ERR_CANCELLED && contains(s.message, "was cancelled"), "%d %s", s.status, s.message);
    CHECK(now_s() - t0 < 5, "promptly: %.1fs", now_s() - t0);
    char *o = NULL;
    uint64_t id = 1;
    CHECK(tn_read_resource_ex(c, "fx", "fx://slow/5000", "{\"timeoutMs\":200}", &id, &o) == TN_ERR_TIMEOUT,
          "%s", tn_last_error_message());
    CHECK(id == 0 && o == NULL, "0 and NULL on error");
    tn_disconnect(c);
  }
}

typedef struct {
  pthread_mutex_t lock;
  char seen[8192];
} events;

static void on_event(void *ud, const char *event_json) {
  events *e = ud;
  pthread_mutex_lock(&e->lock);
  strncat(e->seen, event_json, sizeof e->seen - strlen(e->seen) - 2);
  strcat(e->seen, "\n");
  pthread_mutex_unlock(&e->lock);
}

static int seen(events *e, const char *what, double within) {
  double t0 = now_s();
  for (;;) {
    pthread_mutex_lock(&e->lock);
    int found = contains(e->seen, what);
    pthread_mutex_unlock(&e->lock);
    if (found || now_s() - t0 > within) return found;
    usleep(5000);
  }
}

static void test_a_subscribed_update_is_an_event(void) {
  for (int e = 0; e < 2; e++) {
    tn_client *c = connect_fx(ERAS[e], NULL);
    events ev = {.lock = PTHREAD_MUTEX_INITIALIZER};
    CHECK(tn_set_event_callback(c, on_event, &ev) == TN_OK, "callback");
    CHECK(tn_subscribe_resource(c, "fx", "fx://doc/4") == TN_OK, "%s", tn_last_error_message());
    char *r = call(c, "fx_touch", "{\"uri\":\"fx://doc/4\"}");
    CHECK(contains(r, "touched 1"), "%s", r);
    free(r);
    CHECK(seen(&ev, "{\"type\":\"resource_updated\",\"server\":\"fx\",\"uri\":\"fx://doc/4\"}", 10), "%s", ev.seen);
    CHECK(tn_unsubscribe_resource(c, "fx", "fx://doc/4") == TN_OK, "%s", tn_last_error_message());
    tn_set_event_callback(c, NULL, NULL);
    tn_disconnect(c);
  }
}

int main(int argc, char **argv) {
  static const tn_test tests[] = {
      {"lists_reads_prompts_completions_in_both_eras", test_lists_reads_prompts_completions_in_both_eras},
      {"bad_input_is_a_status_and_a_message", test_bad_input_is_a_status_and_a_message},
      {"a_read_is_cancelled_from_another_thread", test_a_read_is_cancelled_from_another_thread},
      {"a_subscribed_update_is_an_event", test_a_subscribed_update_is_an_event},
  };
  return run_tests(tests, (int)(sizeof tests / sizeof tests[0]), argc, argv);
}
