/* C side of the cgo binding. Client and responder handles are registry tokens (small
 * integers), so they cross into Go only as uintptr_t: held in a Go pointer type they would
 * trip the garbage collector's and checkptr's bad-pointer checks. */
#ifndef TOOLNEXUS_GO_SHIM_H
#define TOOLNEXUS_GO_SHIM_H
#include <stdint.h>
#include "toolnexus.h"

tn_status tn_go_connect(const char *config_json, int with_resolver, uintptr_t user_data, uintptr_t *client_out);
tn_status tn_go_list_tools(uintptr_t client, char **out);
tn_status tn_go_server_statuses(uintptr_t client, char **out);
tn_status tn_go_call_tool(uintptr_t client, const char *name, const char *args_json, char **out);
void tn_go_disconnect(uintptr_t client);
tn_status tn_go_answer(uintptr_t responder, const char *answer_json);
/* tn_call_tool_async with the Go done/progress trampolines; user_data is a cgo.Handle. */
tn_status tn_go_call_tool_async(uintptr_t client, const char *name, const char *args_json, const char *options_json,
                                int with_progress, uintptr_t user_data, uint64_t *call_id_out);
tn_status tn_go_call_cancel(uintptr_t client, uint64_t call_id);
tn_status tn_go_call_tool_resume(uintptr_t client, const char *token, const char *answers_json, char **out);
/* tn_call_tool_resume_async with the same trampolines as tn_go_call_tool_async. */
tn_status tn_go_call_tool_resume_async(uintptr_t client, const char *token, const char *answers_json,
                                       const char *options_json, int with_progress, uintptr_t user_data,
                                       uint64_t *call_id_out);
tn_status tn_go_list_skills(uintptr_t client, char **out);
tn_status tn_go_get_skill(uintptr_t client, const char *server, const char *uri, char **out);
tn_status tn_go_read_skill_file(uintptr_t client, const char *server, const char *skill_uri, const char *file,
                                char **out);
tn_status tn_go_server_request_response(int with_resolver, uintptr_t user_data, const char *message_json, char **out);
tn_status tn_go_call_tool_ex(uintptr_t client, const char *name, const char *args_json, const char *options_json,
                             uint64_t *call_id_out, char **out);
tn_status tn_go_list_tasks(uintptr_t client, const char *server, char **out);
tn_status tn_go_tools_for(uintptr_t client, const char *style, char **out);
/* Resources, prompts and completions. */
tn_status tn_go_list_resources(uintptr_t client, char **out);
tn_status tn_go_list_resource_templates(uintptr_t client, char **out);
tn_status tn_go_read_resource(uintptr_t client, const char *server, const char *uri, char **out);
tn_status tn_go_read_resource_ex(uintptr_t client, const char *server, const char *uri, const char *options_json,
                                 uint64_t *call_id_out, char **out);
tn_status tn_go_subscribe_resource(uintptr_t client, const char *server, const char *uri);
tn_status tn_go_unsubscribe_resource(uintptr_t client, const char *server, const char *uri);
tn_status tn_go_list_prompts(uintptr_t client, char **out);
tn_status tn_go_get_prompt(uintptr_t client, const char *name, const char *args_json, char **out);
tn_status tn_go_get_prompt_ex(uintptr_t client, const char *name, const char *args_json, const char *options_json,
                              uint64_t *call_id_out, char **out);
tn_status tn_go_complete(uintptr_t client, const char *request_json, char **out);
/* tn_set_event_callback with the Go trampoline (on) or NULL; user_data is a cgo.Handle. */
tn_status tn_go_set_event_callback(uintptr_t client, int on, uintptr_t user_data);
#endif
