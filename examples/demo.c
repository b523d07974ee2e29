/* demo: a C host using libtoolnexus against the bundled demo server (tests/fixture-server).
 * It connects, lists the tools, calls one that asks the user a question mid-call
 * (elicitation/create), answers it from the resolver, and prints the result.
 *
 *   ./scripts/demo            (builds everything, then runs this)
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "toolnexus.h"

/* The resolver: called on the server's reader thread while the tool call is in flight. It
 * gets a §10 Request ({"id","kind","prompt","data":{"schema":…}}) and answers with a §10
 * Answer ({"ok":true,"data":{…}}); the library maps it back to MCP and the call resumes. */
static int32_t ask_user(void *user_data, const char *request_json, tn_responder *responder) {
  (void)user_data;
  printf("\nthe server asks: %s\n", request_json);
  char name[128] = "Ada";
  if (isatty(0)) {
    printf("your name? ");
    fflush(stdout);
    if (fgets(name, sizeof name, stdin)) name[strcspn(name, "\r\n")] = 0;
  } else {
    printf("(stdin is not a terminal: answering \"%s\")\n", name);
  }
  char answer[512];
  /* Only `name` is given: the library fills in the schema's defaults (age, color). A real
   * host would escape user input as JSON; this demo keeps to plain names. */
  snprintf(answer, sizeof answer, "{\"ok\":true,\"data\":{\"name\":\"%s\"}}", name);
  if (tn_responder_answer(responder, answer) != TN_OK) {
    fprintf(stderr, "answer refused: %s\n", tn_last_error_message());
  }
  return TN_RESOLVED;
}

int main(int argc, char **argv) {
  const char *server = argc > 1 ? argv[1] : "target/debug/tn-fixture-server";
  char config[1024];
  snprintf(config, sizeof config,
           "{\"mcpServers\":{\"demo\":{\"command\":[\"%s\"],\"timeout\":10000}}}", server);
  printf("toolnexus %s\n", tn_version());

  tn_client *client = NULL;
  if (tn_connect(config, ask_user, NULL, &client) != TN_OK) {
    fprintf(stderr, "connect failed: %s\n", tn_last_error_message());
    return 1;
  }
  char *out = NULL;
  tn_server_statuses(client, &out);
  printf("statuses: %s\n", out);
  tn_string_free(out);

  tn_list_tools(client, &out);
  printf("tools: %.300s…\n", out);
  tn_string_free(out);

  int rc = 0;
  if (tn_call_tool(client, "demo_ask_form", "{\"message\":\"Who are you?\"}", &out) == TN_OK) {
    printf("\nresult: %s\n", out);
    rc = strstr(out, "\\\"action\\\":\\\"accept\\\"") ? 0 : 1;
    tn_string_free(out);
  } else {
    fprintf(stderr, "call failed: %s\n", tn_last_error_message());
    rc = 1;
  }
  tn_disconnect(client);
  return rc;
}
