#include "shim.h"
#include "_cgo_export.h"

/* The tn_resolver_fn handed to the library: user_data is a cgo.Handle. */
static int32_t tn_go_resolver(void *user_data, const char *request_json, tn_responder *responder) {
  return tnGoResolve((uintptr_t)user_data, (char *)request_json, (uintptr_t)responder);
}

tn_status tn_go_connect(const char *config_json, int with_resolver, uintptr_t user_data, uintptr_t *client_out) {
  tn_client *c = NULL;
  tn_status st = tn_connect(config_json, with_resolver ? tn_go_resolver : NULL, (void *)user_data, &c);
  *client_out = (uintptr_t)c;
  return st;
}

tn_status tn_go_list_tools(uintptr_t client, char **out) {
  return tn_list_tools((const tn_client *)client, out);
}

tn_status tn_go_server_statuses(uintptr_t client, char **out) {
  return tn_server_statuses((const tn_client *)client, out);
}

tn_status tn_go_call_tool(uintptr_t client, const char *name, const char *args_json, char **out) {
  return tn_call_tool((tn_client *)client, name, args_json, out);
}

void tn_go_disconnect(uintptr_t client) { tn_disconnect((tn_client *)client); }

tn_status tn_go_answer(uintptr_t responder, const char *answer_json) {
  return tn_responder_answer((tn_responder *)responder, answer_json);
}

tn_status tn_go_server_request_response(int with_resolver, uintptr_t user_data, const char *message_json, char **out) {
  return tn_server_request_response(with_resolver ? tn_go_resolver : NULL, (void *)user_data, message_json, out);
}
