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

tn_status tn_go_list_skills(uintptr_t client, char **out) {
  return tn_list_skills((const tn_client *)client, out);
}

tn_status tn_go_get_skill(uintptr_t client, const char *server, const char *uri, char **out) {
  return tn_get_skill((tn_client *)client, server, uri, out);
}

tn_status tn_go_read_skill_file(uintptr_t client, const char *server, const char *skill_uri, const char *file,
                                char **out) {
  return tn_read_skill_file((tn_client *)client, server, skill_uri, file, out);
}

void tn_go_disconnect(uintptr_t client) { tn_disconnect((tn_client *)client); }

tn_status tn_go_answer(uintptr_t responder, const char *answer_json) {
  return tn_responder_answer((tn_responder *)responder, answer_json);
}

tn_status tn_go_server_request_response(int with_resolver, uintptr_t user_data, const char *message_json, char **out) {
  return tn_server_request_response(with_resolver ? tn_go_resolver : NULL, (void *)user_data, message_json, out);
}

/* The tn_event_fn handed to the library: user_data is a cgo.Handle. */
static void tn_go_event(void *user_data, const char *event_json) {
  tnGoEvent((uintptr_t)user_data, (char *)event_json);
}

tn_status tn_go_set_event_callback(uintptr_t client, int on, uintptr_t user_data) {
  return tn_set_event_callback((tn_client *)client, on ? tn_go_event : NULL, (void *)user_data);
}

/* The tn_call_done_fn and tn_progress_fn handed to the library: user_data is a cgo.Handle. */
static void tn_go_done(void *user_data, tn_status status, const char *result_json) {
  tnGoCallDone((uintptr_t)user_data, status, (char *)result_json);
}

static void tn_go_progress(void *user_data, const char *progress_json) {
  tnGoCallProgress((uintptr_t)user_data, (char *)progress_json);
}

tn_status tn_go_call_tool_async(uintptr_t client, const char *name, const char *args_json, const char *options_json,
                                int with_progress, uintptr_t user_data, uint64_t *call_id_out) {
  return tn_call_tool_async((tn_client *)client, name, args_json, options_json, tn_go_done,
                            with_progress ? tn_go_progress : NULL, (void *)user_data, call_id_out);
}

tn_status tn_go_call_cancel(uintptr_t client, uint64_t call_id) {
  return tn_call_cancel((tn_client *)client, call_id);
}

tn_status tn_go_call_tool_resume(uintptr_t client, const char *token, const char *answers_json, char **out) {
  return tn_call_tool_resume((tn_client *)client, token, answers_json, out);
}

tn_status tn_go_call_tool_resume_async(uintptr_t client, const char *token, const char *answers_json,
                                       const char *options_json, int with_progress, uintptr_t user_data,
                                       uint64_t *call_id_out) {
  return tn_call_tool_resume_async((tn_client *)client, token, answers_json, options_json, tn_go_done,
                                   with_progress ? tn_go_progress : NULL, (void *)user_data, call_id_out);
}

tn_status tn_go_call_tool_ex(uintptr_t client, const char *name, const char *args_json, const char *options_json,
                             uint64_t *call_id_out, char **out) {
  return tn_call_tool_ex((tn_client *)client, name, args_json, options_json, call_id_out, out);
}

tn_status tn_go_list_tasks(uintptr_t client, const char *server, char **out) {
  return tn_list_tasks((const tn_client *)client, server, out);
}

tn_status tn_go_tools_for(uintptr_t client, const char *style, char **out) {
  return tn_tools_for((const tn_client *)client, style, out);
}

tn_status tn_go_list_resources(uintptr_t client, char **out) {
  return tn_list_resources((tn_client *)client, out);
}

tn_status tn_go_list_resource_templates(uintptr_t client, char **out) {
  return tn_list_resource_templates((tn_client *)client, out);
}

tn_status tn_go_read_resource(uintptr_t client, const char *server, const char *uri, char **out) {
  return tn_read_resource((tn_client *)client, server, uri, out);
}

tn_status tn_go_read_resource_ex(uintptr_t client, const char *server, const char *uri, const char *options_json,
                                 uint64_t *call_id_out, char **out) {
  return tn_read_resource_ex((tn_client *)client, server, uri, options_json, call_id_out, out);
}

tn_status tn_go_subscribe_resource(uintptr_t client, const char *server, const char *uri) {
  return tn_subscribe_resource((tn_client *)client, server, uri);
}

tn_status tn_go_unsubscribe_resource(uintptr_t client, const char *server, const char *uri) {
  return tn_unsubscribe_resource((tn_client *)client, server, uri);
}

tn_status tn_go_list_prompts(uintptr_t client, char **out) {
  return tn_list_prompts((tn_client *)client, out);
}

tn_status tn_go_get_prompt(uintptr_t client, const char *name, const char *args_json, char **out) {
  return tn_get_prompt((tn_client *)client, name, args_json, out);
}

tn_status tn_go_get_prompt_ex(uintptr_t client, const char *name, const char *args_json, const char *options_json,
                              uint64_t *call_id_out, char **out) {
  return tn_get_prompt_ex((tn_client *)client, name, args_json, options_json, call_id_out, out);
}

tn_status tn_go_complete(uintptr_t client, const char *request_json, char **out) {
  return tn_complete((tn_client *)client, request_json, out);
}
