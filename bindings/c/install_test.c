/* Built against an installed copy (`make install`) with `pkg-config --cflags --libs toolnexus`:
 * connect the fixture server (argv[1]), list, call, answer an elicitation, surface an error. */
#include <stdio.h>
#include <string.h>
#include <toolnexus.h>

static int32_t ask(void *user_data, const char *request_json, tn_responder *r) {
  (void)user_data;
  (void)request_json;
  return tn_responder_answer(r, "{\"ok\":true,\"data\":{\"name\":\"Ada\"}}") == TN_OK ? TN_RESOLVED : -1;
}

#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); return 1; } } while (0)

int main(int argc, char **argv) {
  EXPECT(argc == 2, "usage: install_test FIXTURE_SERVER");
  EXPECT(strcmp(tn_version(), "0.1.0") == 0, "version %s", tn_version());
  char cfg[4096];
  snprintf(cfg, sizeof cfg, "{\"mcpServers\":{\"fx\":{\"command\":[\"%s\"]}}}", argv[1]);
  tn_client *c = NULL;
  EXPECT(tn_connect(cfg, ask, NULL, &c) == TN_OK, "connect: %s", tn_last_error_message());
  char *tools = NULL, *echo = NULL, *form = NULL, *none = NULL;
  EXPECT(tn_list_tools(c, &tools) == TN_OK && strstr(tools, "\"name\":\"fx_echo\""), "list");
  EXPECT(tn_call_tool(c, "fx_echo", "{\"text\":\"installed\"}", &echo) == TN_OK &&
             strcmp(echo, "{\"output\":\"installed\",\"isError\":false}") == 0, "echo: %s", echo);
  EXPECT(tn_call_tool(c, "fx_ask_form", NULL, &form) == TN_OK && strstr(form, "\\\"name\\\":\\\"Ada\\\""), "form: %s", form);
  EXPECT(tn_call_tool(c, "nope", NULL, &none) == TN_ERR_NOT_FOUND && none == NULL &&
             strcmp(tn_last_error_message(), "no tool named `nope`") == 0, "error: %s", tn_last_error_message());
  printf("%s\n%s\n", echo, form);
  tn_string_free(tools);
  tn_string_free(echo);
  tn_string_free(form);
  tn_disconnect(c);
  puts("install test ok");
  return 0;
}
