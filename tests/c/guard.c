/* The guard around every exported function (c-api.md "Conventions"): NULL in each
 * pointer argument, invalid UTF-8, non-JSON, wrong shapes and a forced panic all give the
 * right status and a message that says what was wrong; nothing crashes. */
/* tn_debug_force_panic is debug-only (c-api.md "Debug-only"); these tests use a debug build. */
#define TOOLNEXUS_DEBUG_API
#include "check.h"
#include <pthread.h>

#define DIRTY ((char *)0x1)

static void expect_err(tn_status got, tn_status want, const char *needle, const char *what) {
  const char *m = tn_last_error_message();
  CHECK(got == want, "%s: status %d, want %d (%s)", what, got, want, m ? m : "no message");
  CHECK(m && m[0], "%s: no last-error message", what);
  if (needle) CHECK(contains(m, needle), "%s: message '%s' lacks '%s'", what, m ? m : "", needle);
}

static void test_version_and_status_text(void) {
  CHECK(strcmp(tn_version(), "0.1.0") == 0, "version %s", tn_version());
  for (int i = 0; i <= 8; i++) CHECK(tn_status_str(i) && tn_status_str(i)[0], "status text %d", i);
  CHECK(strcmp(tn_status_str(TN_ERR_PANIC), tn_status_str(TN_ERR_INTERNAL)) != 0, "distinct texts");
  CHECK(contains(tn_status_str(12345), "unknown"), "unknown code text");
}

static void test_null_arguments(void) {
  char *out = DIRTY;
  expect_err(tn_elicitation_to_request(NULL, &out), TN_ERR_INVALID_ARGUMENT, "params_json", "e2r NULL in");
  CHECK(out == NULL, "out reset to NULL");
  expect_err(tn_elicitation_to_request("{}", NULL), TN_ERR_INVALID_ARGUMENT, "request_json_out", "e2r NULL out");
  out = DIRTY;
  expect_err(tn_answer_to_result(NULL, &out), TN_ERR_INVALID_ARGUMENT, "answer_json", "a2r NULL in");
  CHECK(out == NULL, "out reset");
  expect_err(tn_answer_to_result("{\"ok\":true}", NULL), TN_ERR_INVALID_ARGUMENT, "result_json_out", "a2r NULL out");
  out = DIRTY;
  expect_err(tn_server_request_response(NULL, NULL, NULL, &out), TN_ERR_INVALID_ARGUMENT, "message_json", "srr NULL in");
  CHECK(out == NULL, "out reset");
  expect_err(tn_server_request_response(NULL, NULL, "{}", NULL), TN_ERR_INVALID_ARGUMENT, "reply_json_out", "srr NULL out");
  expect_err(tn_sanitize_name(NULL, &out), TN_ERR_INVALID_ARGUMENT, "name_json", "sanitize NULL");
  expect_err(tn_sanitize_name("\"a\"", NULL), TN_ERR_INVALID_ARGUMENT, "name_json_out", "sanitize NULL out");
  expect_err(tn_responder_answer(NULL, "{\"ok\":true}"), TN_ERR_INVALID_ARGUMENT, "responder", "answer NULL responder");
  expect_err(tn_responder_answer((tn_responder *)0x7fff0000, NULL), TN_ERR_INVALID_ARGUMENT, "answer_json", "answer NULL json");
  tn_client *c = (tn_client *)0x1;
  expect_err(tn_connect(NULL, NULL, NULL, &c), TN_ERR_INVALID_ARGUMENT, "config_json", "connect NULL config");
  CHECK(c == NULL, "client_out reset");
  expect_err(tn_connect("{}", NULL, NULL, NULL), TN_ERR_INVALID_ARGUMENT, "client_out", "connect NULL out");
  expect_err(tn_list_tools(NULL, &out), TN_ERR_INVALID_ARGUMENT, "client", "list NULL client");
  expect_err(tn_server_statuses(NULL, &out), TN_ERR_INVALID_ARGUMENT, "client", "statuses NULL client");
  expect_err(tn_call_tool(NULL, "x", NULL, &out), TN_ERR_INVALID_ARGUMENT, "client", "call NULL client");
  tn_string_free(NULL);
  tn_disconnect(NULL);
  /* a client that exists, with NULL in each remaining argument */
  CHECK(tn_connect("{}", NULL, NULL, &c) == TN_OK, "empty config connects");
  expect_err(tn_list_tools(c, NULL), TN_ERR_INVALID_ARGUMENT, "tools_json_out", "list NULL out");
  expect_err(tn_server_statuses(c, NULL), TN_ERR_INVALID_ARGUMENT, "statuses_json_out", "statuses NULL out");
  expect_err(tn_call_tool(c, NULL, NULL, &out), TN_ERR_INVALID_ARGUMENT, "name", "call NULL name");
  expect_err(tn_call_tool(c, "x", NULL, NULL), TN_ERR_INVALID_ARGUMENT, "result_json_out", "call NULL out");
  expect_err(tn_call_tool(c, "nope", NULL, &out), TN_ERR_NOT_FOUND, "nope", "unknown tool");
  tn_disconnect(c);
  tn_disconnect(c); /* idempotent: the handle is a token, the second call finds nothing */
  expect_err(tn_list_tools(c, &out), TN_ERR_CLOSED, "disconnected", "list after disconnect");
}

static void test_invalid_utf8(void) {
  char *out = DIRTY;
  const char bad[] = {'{', '"', 'm', 'e', 's', 's', 'a', 'g', 'e', '"', ':', '"', (char)0xff, '"', '}', 0};
  expect_err(tn_elicitation_to_request(bad, &out), TN_ERR_INVALID_ARGUMENT, "UTF-8", "e2r bad utf8");
  CHECK(out == NULL, "out NULL");
  expect_err(tn_answer_to_result(bad, &out), TN_ERR_INVALID_ARGUMENT, "UTF-8", "a2r bad utf8");
  expect_err(tn_server_request_response(NULL, NULL, bad, &out), TN_ERR_INVALID_ARGUMENT, "UTF-8", "srr bad utf8");
  expect_err(tn_sanitize_name(bad, &out), TN_ERR_INVALID_ARGUMENT, "UTF-8", "sanitize bad utf8");
  tn_client *c = NULL;
  expect_err(tn_connect(bad, NULL, NULL, &c), TN_ERR_INVALID_ARGUMENT, "UTF-8", "connect bad utf8");
  CHECK(tn_connect("{}", NULL, NULL, &c) == TN_OK, "connect");
  expect_err(tn_call_tool(c, bad, NULL, &out), TN_ERR_INVALID_ARGUMENT, "UTF-8", "call bad name");
  expect_err(tn_call_tool(c, "x", bad, &out), TN_ERR_INVALID_ARGUMENT, "UTF-8", "call bad args");
  tn_disconnect(c);
  expect_err(tn_responder_answer((tn_responder *)0x7fff0000, bad), TN_ERR_INVALID_ARGUMENT, "UTF-8", "answer bad utf8");
}

static void test_not_json(void) {
  char *out = DIRTY;
  const char *texts[] = {"", "{", "nope", "{\"a\":1} trailing", "\"\\ud800\"", "{'a':1}"};
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
    expect_err(tn_elicitation_to_request(texts[i], &out), TN_ERR_INVALID_JSON, "not JSON", texts[i]);
    expect_err(tn_answer_to_result(texts[i], &out), TN_ERR_INVALID_JSON, "not JSON", texts[i]);
    expect_err(tn_server_request_response(NULL, NULL, texts[i], &out), TN_ERR_INVALID_JSON, "not JSON", texts[i]);
    tn_client *c = NULL;
    expect_err(tn_connect(texts[i], NULL, NULL, &c), TN_ERR_INVALID_JSON, "not JSON", texts[i]);
  }
  /* nesting deeper than 128 levels is rejected, not a stack overflow */
  char deep[600];
  memset(deep, '[', 300);
  memset(deep + 300, ']', 299);
  deep[599] = 0;
  deep[300 + 299 - 1] = ']';
  expect_err(tn_answer_to_result(deep, &out), TN_ERR_INVALID_JSON, NULL, "deep nesting");
  CHECK(out == NULL, "out NULL");
}

static void test_wrong_shapes(void) {
  char *out = DIRTY;
  expect_err(tn_elicitation_to_request("[]", &out), TN_ERR_INVALID_ARGUMENT, "object", "e2r array");
  /* contract §4: the pure function takes an object; null is invalid input like any other */
  expect_err(tn_elicitation_to_request("null", &out), TN_ERR_INVALID_ARGUMENT, "got null", "e2r null");
  expect_err(tn_elicitation_to_request("7", &out), TN_ERR_INVALID_ARGUMENT, "object", "e2r number");
  CHECK(out == NULL, "e2r: no output on error");
  expect_err(tn_answer_to_result("{\"ok\":\"yes\"}", &out), TN_ERR_INVALID_ARGUMENT, "ok", "a2r ok string");
  expect_err(tn_answer_to_result("{\"ok\":true,\"data\":[1]}", &out), TN_ERR_INVALID_ARGUMENT, "data", "a2r data array");
  expect_err(tn_server_request_response(NULL, NULL, "[1]", &out), TN_ERR_INVALID_ARGUMENT, "object", "srr array");
  expect_err(tn_sanitize_name("5", &out), TN_ERR_INVALID_ARGUMENT, "string", "sanitize number");
  tn_client *c = NULL;
  expect_err(tn_connect("[]", NULL, NULL, &c), TN_ERR_CONFIG, "object", "config array");
  expect_err(tn_connect("{\"mcpServers\":7}", NULL, NULL, &c), TN_ERR_CONFIG, "mcpServers", "server map number");
  CHECK(c == NULL, "no client on error");
  CHECK(tn_connect("{}", NULL, NULL, &c) == TN_OK, "connect");
  expect_err(tn_call_tool(c, "x", "[1]", &out), TN_ERR_INVALID_ARGUMENT, "args_json", "args array");
  expect_err(tn_call_tool(c, "x", "{", &out), TN_ERR_INVALID_JSON, "args_json", "args not JSON");
  tn_disconnect(c);
  expect_err(tn_responder_answer((tn_responder *)0x7fff0000, "{\"ok\":true}"), TN_ERR_CLOSED, "already", "unknown responder");
}

static void test_forced_panic(void) {
  expect_err(tn_debug_force_panic("boom 42"), TN_ERR_PANIC, "boom 42", "forced panic");
  CHECK(contains(tn_last_error_message(), " at src/ffi/mod.rs:"), "the message says where: %s", tn_last_error_message());
  expect_err(tn_debug_force_panic(NULL), TN_ERR_PANIC, "panic", "forced panic default");
  char *out = NULL;
  CHECK(tn_answer_to_result("{\"ok\":false}", &out) == TN_OK, "library still works after a panic");
  CHECK(out && strcmp(out, "{\"action\":\"cancel\"}") == 0, "result %s", out ? out : "NULL");
  CHECK(tn_last_error_message() == NULL, "a success clears the last error");
  tn_string_free(out);
}

static void *other_thread(void *arg) {
  (void)arg;
  /* the last error is per thread: this thread has none */
  return (void *)(tn_last_error_message() == NULL ? (void *)1 : NULL);
}

static void test_last_error_is_per_thread(void) {
  char *out = NULL;
  tn_answer_to_result("nope", &out);
  CHECK(tn_last_error_message() != NULL, "this thread has an error");
  pthread_t t;
  void *r = NULL;
  pthread_create(&t, NULL, other_thread, NULL);
  pthread_join(t, &r);
  CHECK(r == (void *)1, "another thread sees no error");
  CHECK(tn_last_error_message() != NULL, "still set here");
}

static pthread_key_t teardown_key;
static void on_thread_teardown(void *v) {
  /* tn_ calls from a TLS destructor, when the library's own thread-locals may be gone: they
   * must not abort the process */
  char *out = NULL;
  tn_disconnect(NULL);
  tn_answer_to_result("nope", &out);
  (void)tn_last_error_message();
  tn_string_free(out);
  *(int *)v = 1;
}
static void *teardown_thread(void *flag) {
  pthread_setspecific(teardown_key, flag);
  char *out = NULL;
  tn_answer_to_result("nope", &out); /* the library's thread-locals exist now */
  return NULL;
}

static void test_calls_during_thread_teardown(void) {
  static int ran;
  pthread_key_create(&teardown_key, on_thread_teardown);
  pthread_t t;
  pthread_create(&t, NULL, teardown_thread, &ran);
  pthread_join(t, NULL);
  CHECK(ran == 1, "the destructor ran and the process is alive");
}

int main(int argc, char **argv) {
  static const tn_test tests[] = {
      {"version_and_status_text", test_version_and_status_text},
      {"null_arguments", test_null_arguments},
      {"invalid_utf8", test_invalid_utf8},
      {"not_json", test_not_json},
      {"wrong_shapes", test_wrong_shapes},
      {"forced_panic", test_forced_panic},
      {"last_error_is_per_thread", test_last_error_is_per_thread},
      {"calls_during_thread_teardown", test_calls_during_thread_teardown},
  };
  return run_tests(tests, sizeof tests / sizeof *tests, argc, argv);
}
