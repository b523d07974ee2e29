// toolnexus.hpp: a header-only C++17 wrapper over the toolnexus C ABI (include/toolnexus.h).
//
//   toolnexus::Client c(config_json, [](const toolnexus::Request &r) {
//     return toolnexus::Answer::accept(R"({"name":"Ada"})");
//   });
//   for (auto &t : c.tools()) std::cout << t.name << "\n";
//   toolnexus::ToolResult r = c.call("fx_echo", R"({"text":"hi"})");
//   toolnexus::AsyncCall a = c.call_async("fx_slow", R"({"ms":5000})");  // returns at once
//   a.cancel();                    // the server is told; a.get() is an is_error result
//
// Errors are toolnexus::Error (a std::runtime_error whose what() is the library's
// tn_last_error_message, plus the status). The resolver is a std::function; an exception it
// throws makes the server see cancel. A resolver that returns toolnexus::suspend suspends the
// question durably (contract §6): the call returns at once with result.pending(), and
// client.resume(token, answers) finishes it, from any process connected with the same config.
// Long-lived hosts: client.on_event(fn) hands fn each event (a server restarting or
// back, its tool list changed, its log messages) on the library's event thread, in order.
// Resources, prompts and completions: client.resources(), resource_templates(),
// read_resource(server, uri) (and read_resource_async, cancellable), subscribe / unsubscribe
// (updates as "resource_updated" events), prompts(), get_prompt(name, args_json) (and
// get_prompt_async), complete(...); toolnexus::uri_template expands a template.
// Link with -ltoolnexus.
//
// SPDX-License-Identifier: MIT OR Apache-2.0 (LICENSE-MIT, LICENSE-APACHE of toolnexus)
#ifndef TOOLNEXUS_HPP
#define TOOLNEXUS_HPP

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "toolnexus.h"

namespace toolnexus {

// A failed tn_ call: what() is the library's message, status() the tn_status.
class Error : public std::runtime_error {
 public:
  Error(tn_status status, const std::string &message) : std::runtime_error(message), status_(status) {}
  tn_status status() const noexcept { return status_; }

 private:
  tn_status status_;
};

inline std::string version() { return tn_version(); }

namespace detail {

// Throws the Error for a failed call; must run right after it, on the same thread.
[[noreturn]] inline void fail(tn_status st) {
  const char *m = tn_last_error_message();
  throw Error(st, m && *m ? m : tn_status_str(st));
}

inline void check(tn_status st) {
  if (st != TN_OK) fail(st);
}

// A C string for the library; text with a NUL inside would be cut there, so it is refused.
inline const char *cstr(const std::string &s, const char *what) {
  if (s.find('\0') != std::string::npos)
    throw Error(TN_ERR_INVALID_ARGUMENT, std::string(what) + " contains a NUL character");
  return s.c_str();
}

// An out-string owned by the library, released with tn_string_free.
struct OutString {
  char *p = nullptr;
  OutString() = default;
  OutString(const OutString &) = delete;
  OutString &operator=(const OutString &) = delete;
  ~OutString() { tn_string_free(p); }
  std::string str() const { return p ? std::string(p) : std::string(); }
};

// ---- a minimal JSON reader: enough to split an object into raw values and decode strings.

inline void skip_ws(const std::string &s, size_t &i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
}

inline void put_utf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

inline bool hex4(const std::string &s, size_t i, uint32_t &v) {
  if (i + 4 > s.size()) return false;
  v = 0;
  for (size_t k = i; k < i + 4; ++k) {
    char c = s[k];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
    else return false;
  }
  return true;
}

// Reads the JSON string starting at s[i] == '"'; i ends after the closing quote.
inline bool read_string(const std::string &s, size_t &i, std::string &out) {
  if (i >= s.size() || s[i] != '"') return false;
  ++i;
  out.clear();
  while (i < s.size()) {
    char c = s[i++];
    if (c == '"') return true;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (i >= s.size()) return false;
    char e = s[i++];
    switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp;
        if (!hex4(s, i, cp)) return false;
        i += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && i + 6 <= s.size() && s[i] == '\\' && s[i + 1] == 'u') {
          uint32_t lo;
          if (hex4(s, i + 2, lo) && lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
          }
        }
        put_utf8(out, cp);
        break;
      }
      default: return false;
    }
  }
  return false;
}

// Skips one JSON value starting at s[i] (after whitespace).
inline bool skip_value(const std::string &s, size_t &i, int depth = 0) {
  if (depth > 512) return false;
  skip_ws(s, i);
  if (i >= s.size()) return false;
  char c = s[i];
  if (c == '"') {
    std::string tmp;
    return read_string(s, i, tmp);
  }
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    ++i;
    skip_ws(s, i);
    if (i < s.size() && s[i] == close) return ++i, true;
    for (;;) {
      if (c == '{') {
        std::string key;
        skip_ws(s, i);
        if (!read_string(s, i, key)) return false;
        skip_ws(s, i);
        if (i >= s.size() || s[i++] != ':') return false;
      }
      if (!skip_value(s, i, depth + 1)) return false;
      skip_ws(s, i);
      if (i >= s.size()) return false;
      if (s[i] == ',') { ++i; continue; }
      if (s[i] == close) return ++i, true;
      return false;
    }
  }
  size_t start = i;
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n' &&
         s[i] != '\t' && s[i] != '\r')
    ++i;
  return i > start;
}

// The members of a JSON object as (key, raw value text), in order. Throws on malformed text.
inline std::vector<std::pair<std::string, std::string>> members(const std::string &s) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t i = 0;
  skip_ws(s, i);
  if (i >= s.size() || s[i] != '{') throw Error(TN_ERR_INVALID_JSON, "not a JSON object");
  ++i;
  skip_ws(s, i);
  if (i < s.size() && s[i] == '}') return out;
  for (;;) {
    std::string key;
    skip_ws(s, i);
    if (!read_string(s, i, key)) throw Error(TN_ERR_INVALID_JSON, "bad JSON object key");
    skip_ws(s, i);
    if (i >= s.size() || s[i++] != ':') throw Error(TN_ERR_INVALID_JSON, "missing ':' in JSON object");
    skip_ws(s, i);
    size_t start = i;
    if (!skip_value(s, i)) throw Error(TN_ERR_INVALID_JSON, "bad JSON value");
    out.emplace_back(std::move(key), s.substr(start, i - start));
    skip_ws(s, i);
    if (i < s.size() && s[i] == ',') { ++i; continue; }
    if (i < s.size() && s[i] == '}') return out;
    throw Error(TN_ERR_INVALID_JSON, "unterminated JSON object");
  }
}

// The elements of a JSON array as raw value texts.
inline std::vector<std::string> elements(const std::string &s) {
  std::vector<std::string> out;
  size_t i = 0;
  skip_ws(s, i);
  if (i >= s.size() || s[i] != '[') throw Error(TN_ERR_INVALID_JSON, "not a JSON array");
  ++i;
  skip_ws(s, i);
  if (i < s.size() && s[i] == ']') return out;
  for (;;) {
    skip_ws(s, i);
    size_t start = i;
    if (!skip_value(s, i)) throw Error(TN_ERR_INVALID_JSON, "bad JSON value");
    out.push_back(s.substr(start, i - start));
    skip_ws(s, i);
    if (i < s.size() && s[i] == ',') { ++i; continue; }
    if (i < s.size() && s[i] == ']') return out;
    throw Error(TN_ERR_INVALID_JSON, "unterminated JSON array");
  }
}

// A raw value as a string: decoded when it is a JSON string, else "" .
inline std::string as_string(const std::string &raw) {
  std::string out;
  size_t i = 0;
  return read_string(raw, i, out) ? out : std::string();
}

inline std::string quote(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          static const char *hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace detail

// A one-shot responder token for a deferred answer; copyable, answerable from any thread.
class Responder {
 public:
  Responder() = default;
  explicit Responder(tn_responder *r) : r_(r) {}
  // Answers with §10 Answer JSON text; throws Error (e.g. TN_ERR_CLOSED when already
  // answered, timed out or disconnected; TN_ERR_INVALID_ARGUMENT for an invalid Answer).
  void answer(const std::string &answer_json) const {
    detail::check(tn_responder_answer(r_, detail::cstr(answer_json, "answer")));
  }
  // The same, reporting instead of throwing: true when the answer was taken.
  bool try_answer(const std::string &answer_json) const noexcept {
    return answer_json.find('\0') == std::string::npos && tn_responder_answer(r_, answer_json.c_str()) == TN_OK;
  }

 private:
  tn_responder *r_ = nullptr;
};

// A §10 Request. data is the raw JSON of "data" ({"schema":…}) or empty; json the exact text.
struct Request {
  std::string id, kind, prompt, url, data, json;
  Responder responder;  // for Answer::defer(): answer later, from any thread
};

// What a resolver returns.
struct Answer {
  std::string json;        // the §10 Answer JSON text; empty: no answer (the server sees cancel)
  bool deferred = false;   // the resolver answers later through Request::responder
  bool suspended = false;  // TN_SUSPEND: see suspend()

  // data_json: the accepted content as a JSON object text, or empty for none.
  static Answer accept(const std::string &data_json = "") {
    return {data_json.empty() ? R"({"ok":true})" : R"({"ok":true,"data":)" + data_json + "}", false};
  }
  static Answer decline() { return {R"({"ok":false,"reason":"declined"})", false}; }
  static Answer cancel() { return {R"({"ok":false,"reason":"cancelled"})", false}; }
  static Answer raw(std::string answer_json) { return {std::move(answer_json), false}; }
  static Answer defer() { return {std::string(), true}; }
  static Answer none() { return {}; }
  // Suspends the question durably (contract §6): counts for an MRTR or -32042 question (a
  // server of the 2026-07-28 era); for a legacy elicitation or an OAuth login it is cancel.
  // The call returns at once, not an error, with a ToolResult whose pending() holds the
  // Requests and the resume token; Client::resume continues it, from any thread or another
  // process connected with the same config.
  static Answer suspend() { return {std::string(), false, true}; }
};

// The resolver's return that suspends the question: `return toolnexus::suspend;` (the same as
// Answer::suspend()).
inline const Answer suspend = Answer::suspend();

// The answers_json of Client::resume from (Request id, Answer) pairs:
//   c.resume(p.resume, toolnexus::answers({{p.requests[0].id, Answer::accept(R"({"name":"Ada"})")}}));
// An Answer with no JSON (none, defer, suspend) is left out: that Request is cancel.
inline std::string answers(std::initializer_list<std::pair<std::string, Answer>> list);

using Resolver = std::function<Answer(const Request &)>;

// A suspended call's metadata.pending (contract §6): the questions, and the token that
// Client::resume takes with an answer per Request id. json is its exact text.
struct Pending {
  std::vector<Request> requests;
  std::string resume, json;
  // A call that became a task: {"taskId","status"} as JSON, else empty; resume(p.resume,
  // "{}") collects it, nothing run again.
  std::string task;
};

// A §0.1 ToolResult. metadata is raw JSON or empty; json the library's exact text.
struct ToolResult {
  std::string output;
  bool is_error = false;
  std::string metadata, json;
  // The call's pending when a resolver suspended it (toolnexus::suspend), else nullopt.
  std::optional<Pending> pending() const;
};

// One listed tool; json is its whole object (title, annotations, … included).
struct Tool {
  std::string name, description, server, remote_name, input_schema, json;
};

// A skill loaded by Client::get_skill (SEP-2640): its SKILL.md verified against its entry;
// frontmatter and resources are raw JSON texts, json the library's whole text.
struct Skill {
  std::string server, uri, frontmatter, resources, mime_type, text, json;
};

// One file of a loaded skill (Client::read_skill_file): text, or blob (base64) for binary.
struct SkillFile {
  std::string server, skill, uri, mime_type, text, blob, json;
};

// One notifications/progress report for a call; json is the library's text.
struct Progress {
  double progress = 0;
  std::optional<double> total;
  std::string message, json;
  // A task's status change: task is {"taskId","status","statusMessage"?} as JSON and
  // resume the token that collects the task later; both empty for a plain progress report.
  std::string task, resume;
};

// Options of call_async (and call): timeout replaces the server's timeout for this call (an
// idle timeout: each progress report restarts it; the server's maxTotalTimeout still bounds
// the call). on_progress gets each report in order, before the call completes, on a library
// thread (keep it short: one client's callbacks share that thread); if it throws, the call is
// cancelled and get() rethrows that exception once the call has ended.
struct CallOptions {
  std::optional<std::chrono::milliseconds> timeout;
  std::function<void(const Progress &)> on_progress;
};

namespace detail {

}  // namespace detail

// One event of a client (docs/live-servers.md): type "status", "tools" or "log", the
// server it is about, and the library's exact JSON text (every other member is in it).
// Also "resource_updated" (uri: a subscribed uri), "resources" ("added", "removed",
// "changed": uris; "templates": {…} the same for uriTemplates) and "prompts" ("added",
// "removed", "changed": prompt host names); the lists are listed again before these come.
struct Event {
  std::string type;
  std::string server;
  std::string json;
  std::string uri;  // "resource_updated" only
};

// Called with each event on the library's event thread, one at a time; what it throws is
// kept in event_errors(). It may call the client but not close it.
using EventHandler = std::function<void(const Event &)>;

namespace detail {

struct EventState {
  EventHandler fn;
  std::mutex mu;
  std::vector<std::string> errors;
};

inline void event_trampoline(void *user_data, const char *event_json) noexcept {
  auto *st = static_cast<EventState *>(user_data);
  try {
    Event e;
    e.json = event_json ? event_json : "";
    for (auto &kv : members(e.json)) {
      if (kv.first == "type") e.type = as_string(kv.second);
      else if (kv.first == "server") e.server = as_string(kv.second);
      else if (kv.first == "uri") e.uri = as_string(kv.second);
    }
    st->fn(e);
  } catch (const std::exception &x) {
    std::lock_guard<std::mutex> g(st->mu);
    if (st->errors.size() >= 100) st->errors.erase(st->errors.begin());
    st->errors.push_back(x.what());
  } catch (...) {
    std::lock_guard<std::mutex> g(st->mu);
    st->errors.push_back("an exception that is not a std::exception");
  }
}

struct ResolverState {
  Resolver fn;
  bool deferrable;
  std::mutex mu;
  std::vector<std::string> errors;

  void note(std::string e) {
    std::lock_guard<std::mutex> g(mu);
    if (errors.size() >= 100) errors.erase(errors.begin());
    errors.push_back(std::move(e));
  }
};

inline Request parse_request(const char *text, tn_responder *r) {
  Request q;
  q.json = text;
  for (auto &kv : members(q.json)) {
    if (kv.first == "id") q.id = as_string(kv.second);
    else if (kv.first == "kind") q.kind = as_string(kv.second);
    else if (kv.first == "prompt") q.prompt = as_string(kv.second);
    else if (kv.first == "url") q.url = as_string(kv.second);
    else if (kv.first == "data") q.data = kv.second;
  }
  q.responder = Responder(r);
  return q;
}

// The tn_resolver_fn: nothing thrown ever crosses into C.
inline int32_t trampoline(void *user_data, const char *request_json, tn_responder *r) noexcept {
  auto *st = static_cast<ResolverState *>(user_data);
  try {
    Answer a = st->fn(parse_request(request_json, r));
    if (a.suspended) return TN_SUSPEND;  // the library makes it cancel where it cannot suspend
    if (a.deferred) {
      if (st->deferrable) return TN_DEFERRED;
      st->note("Answer::defer() in server_request_response: the responder ends when the resolver returns");
      return -1;
    }
    if (a.json.empty()) return TN_RESOLVED;  // no answer: cancel
    tn_status s = tn_responder_answer(r, cstr(a.json, "answer"));
    if (s != TN_OK) {
      const char *m = tn_last_error_message();
      st->note("the library refused the answer " + a.json + ": " + (m ? m : tn_status_str(s)));
      return -1;
    }
    return TN_RESOLVED;
  } catch (const std::exception &e) {
    try { st->note(std::string("resolver threw: ") + e.what()); } catch (...) {}
  } catch (...) {
    try { st->note("resolver threw a non-std exception"); } catch (...) {}
  }
  return -1;  // anything but TN_RESOLVED/TN_DEFERRED: the server sees cancel
}

inline ToolResult parse_result(std::string json) {
  ToolResult r;
  r.json = std::move(json);
  for (auto &kv : members(r.json)) {
    if (kv.first == "output") r.output = as_string(kv.second);
    else if (kv.first == "isError") r.is_error = kv.second == "true";
    else if (kv.first == "metadata") r.metadata = kv.second;
  }
  return r;
}

inline Progress parse_progress(const char *text) {
  Progress p;
  p.json = text;
  for (auto &kv : members(p.json)) {
    if (kv.first == "progress") p.progress = std::stod(kv.second);
    else if (kv.first == "total") p.total = std::stod(kv.second);
    else if (kv.first == "message") p.message = as_string(kv.second);
    else if (kv.first == "task") p.task = kv.second;
    else if (kv.first == "resume") p.resume = as_string(kv.second);
  }
  return p;
}

// One asynchronous call: the user_data handed to tn_call_tool_async. It owns itself (self)
// from the start until done has fired; the AsyncCall handle shares it. The library serialises
// one call's callbacks, so progress_error needs no lock.
struct CallState {
  std::promise<ToolResult> promise;
  std::function<void(const Progress &)> on_progress;
  tn_client *client = nullptr;
  uint64_t id = 0;                    // written by tn_call_tool_async before any callback fires
  std::exception_ptr progress_error;  // what on_progress threw: the call's outcome
  std::shared_ptr<CallState> self;
};

// The tn_call_done_fn: nothing thrown ever crosses into C.
inline void call_done(void *user_data, tn_status status, const char *result_json) noexcept {
  auto *st = static_cast<CallState *>(user_data);
  std::shared_ptr<CallState> keep = std::move(st->self);  // freed when this returns (or later)
  try {
    if (st->progress_error) {
      st->promise.set_exception(st->progress_error);
    } else if (status == TN_OK && result_json) {
      st->promise.set_value(parse_result(result_json));
    } else {
      // The library set the last error on this thread before calling done.
      const char *m = tn_last_error_message();
      st->promise.set_exception(std::make_exception_ptr(Error(status, m && *m ? m : tn_status_str(status))));
    }
  } catch (...) {
    try { st->promise.set_exception(std::current_exception()); } catch (...) {}
  }
}

// The tn_progress_fn: a throwing on_progress cancels the call, and get() rethrows what it
// threw once done has fired.
inline void call_progress(void *user_data, const char *progress_json) noexcept {
  auto *st = static_cast<CallState *>(user_data);
  if (st->progress_error || !st->on_progress) return;
  try {
    st->on_progress(parse_progress(progress_json));
  } catch (...) {
    st->progress_error = std::current_exception();
    tn_call_cancel(st->client, st->id);  // its done fires after this callback returns
  }
}

}  // namespace detail

inline std::optional<Pending> ToolResult::pending() const {
  if (metadata.empty()) return std::nullopt;
  for (auto &kv : detail::members(metadata)) {
    if (kv.first != "pending" || kv.second.empty() || kv.second[0] != '{') continue;
    Pending p;
    p.json = kv.second;
    for (auto &f : detail::members(p.json)) {
      if (f.first == "resume") p.resume = detail::as_string(f.second);
      else if (f.first == "task") p.task = f.second;
      else if (f.first == "requests")
        for (auto &q : detail::elements(f.second)) p.requests.push_back(detail::parse_request(q.c_str(), nullptr));
    }
    return p;
  }
  return std::nullopt;
}

inline std::string answers(std::initializer_list<std::pair<std::string, Answer>> list) {
  std::string out = "{";
  for (auto &kv : list) {
    if (kv.second.json.empty()) continue;
    if (out.size() > 1) out += ',';
    out += detail::quote(kv.first) + ":" + kv.second.json;
  }
  return out + "}";
}

// ---- resources, prompts and completions

// Options of a resource read or a prompt: timeout replaces the server's timeout for it.
struct RequestOptions {
  std::optional<std::chrono::milliseconds> timeout;
};

// One listed resource; json is its whole object (annotations, icons, _meta, …).
struct Resource {
  std::string server, uri, name, title, description, mime_type, json;
  std::optional<long long> size;
};

// One listed resource template (RFC 6570; toolnexus::uri_template expands it).
struct ResourceTemplate {
  std::string server, uri_template, name, title, description, mime_type, json;
};

// One of a read's contents: text, or blob (base64) when is_blob; bytes() decodes either.
struct ResourceContents {
  std::string uri, mime_type, text, blob, json;
  bool is_blob = false;
  std::vector<unsigned char> bytes() const;
};

// What read_resource returns: the contents, the result's _meta (raw JSON or empty), its text.
struct ReadResult {
  std::vector<ResourceContents> contents;
  std::string meta, json;
};

struct PromptArgument {
  std::string name, title, description;
  bool required = false;
};

// One listed prompt: name is its host name (get_prompt takes it), prompt the server's own name
// (prompt_ref takes it); json is its whole object.
struct Prompt {
  std::string name, server, prompt, title, description, json;
  std::vector<PromptArgument> arguments;
};

// One message of a prompt: content is its content block as raw JSON; text is set (is_text)
// when it is a text block.
struct PromptMessage {
  std::string role, content, text;
  bool is_text = false;
};

struct PromptResult {
  std::string description, json;
  std::vector<PromptMessage> messages;
};

// A server's completion object: the values, total when it said, has_more.
struct Completion {
  std::vector<std::string> values;
  std::optional<long long> total;
  bool has_more = false;
  std::string json;
};

// toolnexus::uri_template's result: the variables, and the expansion when values were given.
struct UriTemplate {
  std::vector<std::string> variables;
  std::optional<std::string> uri;
  std::string json;
};

// A completion ref to a prompt, by the server's name for it (Prompt::prompt), as JSON text.
inline std::string prompt_ref(const std::string &name) {
  return R"({"type":"ref/prompt","name":)" + detail::quote(name) + "}";
}
// A completion ref to a resource template (its uriTemplate) or a resource uri, as JSON text.
inline std::string resource_ref(const std::string &uri) {
  return R"({"type":"ref/resource","uri":)" + detail::quote(uri) + "}";
}

namespace detail {

inline std::vector<unsigned char> base64_decode(const std::string &in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<unsigned char> out;
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < in.size() && in[i] != '='; ++i) {
    int v = val(in[i]);
    if (v < 0) throw Error(TN_ERR_INVALID_ARGUMENT, "a blob that is not base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<unsigned char>((acc >> bits) & 0xFF));
    }
  }
  for (; i < in.size(); ++i)
    if (in[i] != '=') throw Error(TN_ERR_INVALID_ARGUMENT, "a blob that is not base64");
  return out;
}

inline std::vector<std::string> strings(const std::string &raw) {
  std::vector<std::string> out;
  for (auto &e : elements(raw)) out.push_back(as_string(e));
  return out;
}

inline std::string timeout_options(const RequestOptions &o) {
  return o.timeout ? "{\"timeoutMs\":" + std::to_string(o.timeout->count()) + "}" : std::string();
}

inline ReadResult parse_read(std::string json) {
  ReadResult r;
  r.json = std::move(json);
  for (auto &kv : members(r.json)) {
    if (kv.first == "_meta") r.meta = kv.second;
    if (kv.first != "contents") continue;
    for (auto &raw : elements(kv.second)) {
      ResourceContents c;
      c.json = raw;
      for (auto &m : members(raw)) {
        if (m.first == "uri") c.uri = as_string(m.second);
        else if (m.first == "mimeType") c.mime_type = as_string(m.second);
        else if (m.first == "text") c.text = as_string(m.second);
        else if (m.first == "blob") c.blob = as_string(m.second), c.is_blob = true;
      }
      r.contents.push_back(std::move(c));
    }
  }
  return r;
}

inline PromptResult parse_prompt(std::string json) {
  PromptResult r;
  r.json = std::move(json);
  for (auto &kv : members(r.json)) {
    if (kv.first == "description") r.description = as_string(kv.second);
    if (kv.first != "messages") continue;
    for (auto &raw : elements(kv.second)) {
      PromptMessage m;
      for (auto &f : members(raw)) {
        if (f.first == "role") m.role = as_string(f.second);
        else if (f.first == "content") m.content = f.second;
      }
      if (!m.content.empty() && m.content[0] == '{') {
        std::string type, text;
        bool has_text = false;
        for (auto &f : members(m.content)) {
          if (f.first == "type") type = as_string(f.second);
          else if (f.first == "text") text = as_string(f.second), has_text = true;
        }
        if (type == "text" && has_text) m.text = std::move(text), m.is_text = true;
      }
      r.messages.push_back(std::move(m));
    }
  }
  return r;
}

inline Completion parse_completion(std::string json) {
  Completion c;
  c.json = std::move(json);
  for (auto &kv : members(c.json)) {
    if (kv.first == "values") c.values = strings(kv.second);
    else if (kv.first == "total") c.total = std::stoll(kv.second);
    else if (kv.first == "hasMore") c.has_more = kv.second == "true";
  }
  return c;
}

// One request running on a thread of its own (read_resource_async, get_prompt_async): the
// library writes its id (from that thread) before the request goes out, cancel() reads it.
struct RequestState {
  tn_client *client = nullptr;
  std::atomic<uint64_t> id{0};
  std::atomic<bool> finished{false};
};
static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t), "the library writes a uint64_t");

}  // namespace detail

inline std::vector<unsigned char> ResourceContents::bytes() const {
  if (is_blob) return detail::base64_decode(blob);
  return std::vector<unsigned char>(text.begin(), text.end());
}

// A resource read or a prompt started by Client::read_resource_async / get_prompt_async: it
// runs on a thread of its own; get() waits for its outcome (or rethrows its Error:
// TN_ERR_CANCELLED once cancel() ended it, TN_ERR_TIMEOUT, TN_ERR_NOT_FOUND, …), cancel()
// cancels it at the server. Move-only; may be dropped without waiting (Client::close() ends
// every request still in flight).
template <class T>
class AsyncRequest {
 public:
  AsyncRequest() = default;
  AsyncRequest(AsyncRequest &&) noexcept = default;
  AsyncRequest &operator=(AsyncRequest &&) noexcept = default;

  T get() { return future_.get(); }
  std::future<T> &future() noexcept { return future_; }
  template <class Rep, class Period>
  std::future_status wait_for(const std::chrono::duration<Rep, Period> &d) const {
    return future_.wait_for(d);
  }
  // Cancels the request at the server (waiting the moment it takes to start, if it has not
  // yet): true when this cancel ended it, false when it had ended already.
  bool cancel() const {
    if (!state_) return false;
    for (;;) {
      uint64_t id = state_->id.load();
      if (id != 0) {
        tn_status st = tn_call_cancel(state_->client, id);
        if (st == TN_OK) return true;
        if (st == TN_ERR_NOT_FOUND || st == TN_ERR_CLOSED) return false;
        detail::fail(st);
      }
      if (state_->finished.load()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  bool valid() const noexcept { return future_.valid(); }

 private:
  friend class Client;
  std::shared_ptr<detail::RequestState> state_;
  std::future<T> future_;
};

// An RFC 6570 URI template's variables and, when values_json (a JSON object of strings,
// numbers, booleans, arrays or objects) is given, its expansion (levels 1-4). For a resource
// template picker: fill the variables, then client.read_resource(server, *t.uri). A malformed
// template throws Error (TN_ERR_INVALID_ARGUMENT).
inline UriTemplate uri_template(const std::string &template_text, const std::string &values_json = "") {
  std::string req = R"({"template":)" + detail::quote(template_text);
  if (!values_json.empty()) req += R"(,"values":)" + values_json;
  req += "}";
  detail::OutString out;
  detail::check(tn_uri_template(detail::cstr(req, "request"), &out.p));
  UriTemplate t;
  t.json = out.str();
  for (auto &kv : detail::members(t.json)) {
    if (kv.first == "variables") t.variables = detail::strings(kv.second);
    else if (kv.first == "uri") t.uri = detail::as_string(kv.second);
  }
  return t;
}

// A JSON array of tools (as Client::tools_json lists them) in a model provider's
// function-calling shape: style "openai", "anthropic" or "gemini" (JSON text in and out).
inline std::string tools_to_provider(const std::string &tools_json, const std::string &style) {
  detail::OutString out;
  detail::check(tn_tools_to_provider(detail::cstr(tools_json, "tools"), detail::cstr(style, "style"), &out.p));
  return out.str();
}

// A call started by Client::call_async: get() waits for its ToolResult (or rethrows its
// error), cancel() cancels it at the server. Move-only; may be dropped without waiting (the
// call then completes unobserved; Client::close() completes every call still in flight).
class AsyncCall {
 public:
  AsyncCall() = default;
  AsyncCall(AsyncCall &&) noexcept = default;
  AsyncCall &operator=(AsyncCall &&) noexcept = default;

  // Waits for the outcome: a ToolResult (cancel, timeouts and dead servers are is_error
  // results), or throws Error (e.g. TN_ERR_CLOSED) or what on_progress threw. Once only.
  ToolResult get() { return future_.get(); }
  // The std::future itself, for wait_for / wait_until (or get).
  std::future<ToolResult> &future() noexcept { return future_; }
  template <class Rep, class Period>
  std::future_status wait_for(const std::chrono::duration<Rep, Period> &d) const {
    return future_.wait_for(d);
  }
  // Cancels the call at the server: true when this cancel ended it (get() then returns an
  // is_error result saying it was cancelled); false when it had ended already.
  bool cancel() const {
    if (!state_) return false;
    tn_status st = tn_call_cancel(state_->client, state_->id);
    if (st == TN_OK) return true;
    if (st == TN_ERR_NOT_FOUND || st == TN_ERR_CLOSED) return false;
    detail::fail(st);
  }
  // The library's id of the call (as tn_call_cancel takes it).
  uint64_t id() const noexcept { return state_ ? state_->id : 0; }
  bool valid() const noexcept { return future_.valid(); }

 private:
  friend class Client;
  std::shared_ptr<detail::CallState> state_;
  std::future<ToolResult> future_;
};

// ---- pure functions (contract §4): JSON text in, JSON text out, byte-identical across ports.

inline std::string elicitation_to_request(const std::string &params_json) {
  detail::OutString out;
  detail::check(tn_elicitation_to_request(detail::cstr(params_json, "params"), &out.p));
  return out.str();
}

inline std::string answer_to_result(const std::string &answer_json) {
  detail::OutString out;
  detail::check(tn_answer_to_result(detail::cstr(answer_json, "answer"), &out.p));
  return out.str();
}

// name_json: a JSON string literal; returns the sanitized name as a JSON string literal.
inline std::string sanitize_name(const std::string &name_json) {
  detail::OutString out;
  detail::check(tn_sanitize_name(detail::cstr(name_json, "name"), &out.p));
  return out.str();
}

// The reply to write back, or nullopt when the message is not a server request. The resolver
// runs synchronously; Answer::defer() counts as cancel here.
inline std::optional<std::string> server_request_response(const std::string &message_json,
                                                          const Resolver &resolver = nullptr) {
  detail::ResolverState st{resolver, false, {}, {}};
  detail::OutString out;
  detail::check(tn_server_request_response(resolver ? detail::trampoline : nullptr, resolver ? &st : nullptr,
                                           detail::cstr(message_json, "message"), &out.p));
  if (!out.p) return std::nullopt;
  return out.str();
}

// ---- the client

// An RAII tn_client: connects in the constructor, disconnects in the destructor. Move-only;
// safe to use from many threads at once.
class Client {
 public:
  // config_json: an MCP config. resolver may be empty: then no elicitation is advertised.
  // Throws Error when the config is unusable (per-server failures are in statuses()).
  explicit Client(const std::string &config_json, Resolver resolver = nullptr) {
    if (resolver) state_.reset(new detail::ResolverState{std::move(resolver), true, {}, {}});
    tn_client *c = nullptr;
    detail::check(tn_connect(detail::cstr(config_json, "config"), state_ ? detail::trampoline : nullptr,
                             state_.get(), &c));
    c_.store(c);
  }
  Client(const Client &) = delete;
  Client &operator=(const Client &) = delete;
  Client(Client &&o) noexcept
      : c_(o.c_.exchange(nullptr)),
        state_(std::move(o.state_)),
        events_(std::move(o.events_)),
        retired_(std::move(o.retired_)) {}
  Client &operator=(Client &&o) noexcept {
    if (this != &o) {
      destroy();
      c_.store(o.c_.exchange(nullptr));
      state_ = std::move(o.state_);
      events_ = std::move(o.events_);
      retired_ = std::move(o.retired_);
    }
    return *this;
  }

  // Registers fn for the client's events (an empty fn removes it), replacing the one
  // before, which is not running any more once this returns (unless called from inside it).
  void on_event(EventHandler fn) {
    std::unique_ptr<detail::EventState> st;
    if (fn) st.reset(new detail::EventState{std::move(fn), {}, {}});
    detail::check(tn_set_event_callback(handle(), st ? detail::event_trampoline : nullptr, st.get()));
    std::lock_guard<std::mutex> g(events_mu_);
    if (events_) retired_.push_back(std::move(events_));  // may still be running its last call
    events_ = std::move(st);
  }

  // What the event handler threw, most recent last.
  std::vector<std::string> event_errors() const {
    std::lock_guard<std::mutex> g(events_mu_);
    if (!events_) return {};
    std::lock_guard<std::mutex> g2(events_->mu);
    return events_->errors;
  }
  ~Client() { destroy(); }

  // The tools as the library's JSON array text, sorted by name.
  std::string tools_json() const {
    detail::OutString out;
    detail::check(tn_list_tools(handle(), &out.p));
    return out.str();
  }

  std::vector<Tool> tools() const {
    std::vector<Tool> out;
    for (auto &raw : detail::elements(tools_json())) {
      Tool t;
      t.json = raw;
      for (auto &kv : detail::members(raw)) {
        if (kv.first == "name") t.name = detail::as_string(kv.second);
        else if (kv.first == "description") t.description = detail::as_string(kv.second);
        else if (kv.first == "server") t.server = detail::as_string(kv.second);
        else if (kv.first == "remoteName") t.remote_name = detail::as_string(kv.second);
        else if (kv.first == "inputSchema") t.input_schema = kv.second;
      }
      out.push_back(std::move(t));
    }
    return out;
  }

  // {"servers":{"<name>":{"status":…}}} as JSON text.
  std::string statuses() const {
    detail::OutString out;
    detail::check(tn_server_statuses(handle(), &out.p));
    return out.str();
  }

  // Skills (SEP-2640): {"servers":{"<name>":{"skills":[entry…],"warnings":[…]?}|{"error":"…"}}}
  // as JSON text, for each connected server that offers them. No skill file is read.
  std::string skills() const {
    detail::OutString out;
    detail::check(tn_list_skills(handle(), &out.p));
    return out.str();
  }

  // Loads the skill of `server` whose SKILL.md is `uri`, verified (size, SHA-256, frontmatter).
  // A mismatch, an unknown skill or server, or a server without skills throws Error
  // (TN_ERR_NOT_FOUND) saying what did not match.
  Skill get_skill(const std::string &server, const std::string &uri) const {
    detail::OutString out;
    detail::check(tn_get_skill(handle(), detail::cstr(server, "server"), detail::cstr(uri, "uri"), &out.p));
    Skill sk;
    sk.json = out.str();
    for (auto &m : detail::members(sk.json)) {
      if (m.first == "server") sk.server = detail::as_string(m.second);
      else if (m.first == "uri") sk.uri = detail::as_string(m.second);
      else if (m.first == "frontmatter") sk.frontmatter = m.second;
      else if (m.first == "resources") sk.resources = m.second;
      else if (m.first == "mimeType") sk.mime_type = detail::as_string(m.second);
      else if (m.first == "text") sk.text = detail::as_string(m.second);
    }
    return sk;
  }

  // One file of a skill get_skill loaded, by URI or by its path in the skill, verified against
  // the entry; a file the entry does not list throws (TN_ERR_NOT_FOUND) without a request.
  SkillFile read_skill_file(const std::string &server, const std::string &skill_uri, const std::string &file) const {
    detail::OutString out;
    detail::check(tn_read_skill_file(handle(), detail::cstr(server, "server"), detail::cstr(skill_uri, "skill_uri"),
                                     detail::cstr(file, "file"), &out.p));
    SkillFile f;
    f.json = out.str();
    for (auto &m : detail::members(f.json)) {
      if (m.first == "server") f.server = detail::as_string(m.second);
      else if (m.first == "skill") f.skill = detail::as_string(m.second);
      else if (m.first == "uri") f.uri = detail::as_string(m.second);
      else if (m.first == "mimeType") f.mime_type = detail::as_string(m.second);
      else if (m.first == "text") f.text = detail::as_string(m.second);
      else if (m.first == "blob") f.blob = detail::as_string(m.second);
    }
    return f;
  }

  // The connected tools in a model provider's function-calling shape ("openai", "anthropic" or
  // "gemini"; another throws TN_ERR_INVALID_ARGUMENT), as JSON text.
  std::string tools_for(const std::string &style) const {
    detail::OutString out;
    detail::check(tn_tools_for(handle(), detail::cstr(style, "style"), &out.p));
    return out.str();
  }

  // Tasks (MCP 2025-11-25): {"server","tasks":[<Task>…]} as JSON text, every page of server's
  // tasks/list; a server that lists none, or one of the 2026-07-28 era, throws TN_ERR_NOT_FOUND.
  std::string tasks(const std::string &server) const {
    detail::OutString out;
    detail::check(tn_list_tasks(handle(), detail::cstr(server, "server"), &out.p));
    return out.str();
  }

  // ---- resources

  // Every connected server's resources, all pages, sorted by server then uri, as JSON text.
  std::string resources_json() const {
    detail::OutString out;
    detail::check(tn_list_resources(handle(), &out.p));
    return out.str();
  }

  std::vector<Resource> resources() const {
    std::vector<Resource> out;
    for (auto &raw : detail::elements(resources_json())) {
      Resource r;
      r.json = raw;
      for (auto &kv : detail::members(raw)) {
        if (kv.first == "server") r.server = detail::as_string(kv.second);
        else if (kv.first == "uri") r.uri = detail::as_string(kv.second);
        else if (kv.first == "name") r.name = detail::as_string(kv.second);
        else if (kv.first == "title") r.title = detail::as_string(kv.second);
        else if (kv.first == "description") r.description = detail::as_string(kv.second);
        else if (kv.first == "mimeType") r.mime_type = detail::as_string(kv.second);
        else if (kv.first == "size") r.size = std::stoll(kv.second);
      }
      out.push_back(std::move(r));
    }
    return out;
  }

  // Every connected server's resource templates, sorted by server then uriTemplate (JSON text).
  std::string resource_templates_json() const {
    detail::OutString out;
    detail::check(tn_list_resource_templates(handle(), &out.p));
    return out.str();
  }

  std::vector<ResourceTemplate> resource_templates() const {
    std::vector<ResourceTemplate> out;
    for (auto &raw : detail::elements(resource_templates_json())) {
      ResourceTemplate t;
      t.json = raw;
      for (auto &kv : detail::members(raw)) {
        if (kv.first == "server") t.server = detail::as_string(kv.second);
        else if (kv.first == "uriTemplate") t.uri_template = detail::as_string(kv.second);
        else if (kv.first == "name") t.name = detail::as_string(kv.second);
        else if (kv.first == "title") t.title = detail::as_string(kv.second);
        else if (kv.first == "description") t.description = detail::as_string(kv.second);
        else if (kv.first == "mimeType") t.mime_type = detail::as_string(kv.second);
      }
      out.push_back(std::move(t));
    }
    return out;
  }

  // Reads uri from server (a question the server asks on the way goes to the resolver). Throws
  // Error: TN_ERR_NOT_FOUND (unknown server or uri), TN_ERR_SERVER (a result over
  // maxResultBytes, another failure), TN_ERR_TIMEOUT (no answer within options.timeout, else
  // the server's timeout).
  ReadResult read_resource(const std::string &server, const std::string &uri, RequestOptions options = {}) const {
    detail::OutString out;
    const char *s = detail::cstr(server, "server"), *u = detail::cstr(uri, "uri");
    if (!options.timeout) {
      detail::check(tn_read_resource(handle(), s, u, &out.p));
    } else {
      std::string opts = detail::timeout_options(options);
      detail::check(tn_read_resource_ex(handle(), s, u, opts.c_str(), nullptr, &out.p));
    }
    return detail::parse_read(out.str());
  }

  // read_resource on a thread of its own, returned at once; AsyncRequest::cancel() cancels it.
  AsyncRequest<ReadResult> read_resource_async(const std::string &server, const std::string &uri,
                                               RequestOptions options = {}) const {
    (void)detail::cstr(server, "server");  // refused here, not on the request's thread
    (void)detail::cstr(uri, "uri");
    return run_async<ReadResult>(
        [server, uri, opts = detail::timeout_options(options)](tn_client *c, uint64_t *id) {
          detail::OutString out;
          detail::check(tn_read_resource_ex(c, server.c_str(), uri.c_str(), opts.empty() ? nullptr : opts.c_str(), id,
                                            &out.p));
          return detail::parse_read(out.str());
        });
  }

  // Subscribes to uri on server (resources/subscribe; in MCP 2026-07-28 a new
  // subscriptions/listen, acknowledged before this returns): its updates come as
  // "resource_updated" events (on_event). Kept across restarts. A server that offers no
  // subscriptions throws TN_ERR_NOT_FOUND.
  void subscribe(const std::string &server, const std::string &uri) const {
    detail::check(tn_subscribe_resource(handle(), detail::cstr(server, "server"), detail::cstr(uri, "uri")));
  }

  // Ends the subscription: no "resource_updated" event of uri comes once this returns. A uri
  // not subscribed to throws TN_ERR_NOT_FOUND.
  void unsubscribe(const std::string &server, const std::string &uri) const {
    detail::check(tn_unsubscribe_resource(handle(), detail::cstr(server, "server"), detail::cstr(uri, "uri")));
  }

  // ---- prompts and completions

  // Every connected server's prompts, sorted by host name, as JSON text.
  std::string prompts_json() const {
    detail::OutString out;
    detail::check(tn_list_prompts(handle(), &out.p));
    return out.str();
  }

  std::vector<Prompt> prompts() const {
    std::vector<Prompt> out;
    for (auto &raw : detail::elements(prompts_json())) {
      Prompt p;
      p.json = raw;
      for (auto &kv : detail::members(raw)) {
        if (kv.first == "name") p.name = detail::as_string(kv.second);
        else if (kv.first == "server") p.server = detail::as_string(kv.second);
        else if (kv.first == "prompt") p.prompt = detail::as_string(kv.second);
        else if (kv.first == "title") p.title = detail::as_string(kv.second);
        else if (kv.first == "description") p.description = detail::as_string(kv.second);
        else if (kv.first == "arguments")
          for (auto &a : detail::elements(kv.second)) {
            PromptArgument arg;
            for (auto &f : detail::members(a)) {
              if (f.first == "name") arg.name = detail::as_string(f.second);
              else if (f.first == "title") arg.title = detail::as_string(f.second);
              else if (f.first == "description") arg.description = detail::as_string(f.second);
              else if (f.first == "required") arg.required = f.second == "true";
            }
            p.arguments.push_back(std::move(arg));
          }
      }
      out.push_back(std::move(p));
    }
    return out;
  }

  // Gets the prompt of host name `name`; args_json is a JSON object of strings (empty: none).
  // Throws Error: TN_ERR_NOT_FOUND (no such prompt), TN_ERR_SERVER (arguments the server
  // refuses, a missing required one, another failure), TN_ERR_TIMEOUT.
  PromptResult get_prompt(const std::string &name, const std::string &args_json = "",
                          RequestOptions options = {}) const {
    detail::OutString out;
    const char *n = detail::cstr(name, "name");
    const char *a = args_json.empty() ? nullptr : detail::cstr(args_json, "args");
    if (!options.timeout) {
      detail::check(tn_get_prompt(handle(), n, a, &out.p));
    } else {
      std::string opts = detail::timeout_options(options);
      detail::check(tn_get_prompt_ex(handle(), n, a, opts.c_str(), nullptr, &out.p));
    }
    return detail::parse_prompt(out.str());
  }

  // get_prompt on a thread of its own, returned at once; AsyncRequest::cancel() cancels it.
  AsyncRequest<PromptResult> get_prompt_async(const std::string &name, const std::string &args_json = "",
                                              RequestOptions options = {}) const {
    (void)detail::cstr(name, "name");
    (void)detail::cstr(args_json, "args");
    return run_async<PromptResult>(
        [name, args_json, opts = detail::timeout_options(options)](tn_client *c, uint64_t *id) {
          detail::OutString out;
          detail::check(tn_get_prompt_ex(c, name.c_str(), args_json.empty() ? nullptr : args_json.c_str(),
                                         opts.empty() ? nullptr : opts.c_str(), id, &out.p));
          return detail::parse_prompt(out.str());
        });
  }

  // completion/complete with the library's whole request, {"server","ref","argument":{"name",
  // "value"},"context"?:{"arguments":{…}}} (JSON text).
  Completion complete(const std::string &request_json) const {
    detail::OutString out;
    detail::check(tn_complete(handle(), detail::cstr(request_json, "request"), &out.p));
    return detail::parse_completion(out.str());
  }

  // The values server proposes for `argument` of ref_json (prompt_ref / resource_ref) starting
  // with value, given the other arguments already chosen (context_arguments_json, a JSON object
  // of strings, or empty). A server without completions gives no values.
  Completion complete(const std::string &server, const std::string &ref_json, const std::string &argument,
                      const std::string &value, const std::string &context_arguments_json = "") const {
    std::string req = R"({"server":)" + detail::quote(server) + R"(,"ref":)" + ref_json +
                      R"(,"argument":{"name":)" + detail::quote(argument) + R"(,"value":)" + detail::quote(value) + "}";
    if (!context_arguments_json.empty()) req += R"(,"context":{"arguments":)" + context_arguments_json + "}";
    return complete(req + "}");
  }

  // Calls a tool by its listed name; args_json is a JSON object text. Tool errors, timeouts
  // and dead servers are results with is_error; an unknown name throws (TN_ERR_NOT_FOUND).
  ToolResult call(const std::string &name, const std::string &args_json = "{}") const {
    detail::OutString out;
    detail::check(tn_call_tool(handle(), detail::cstr(name, "name"), detail::cstr(args_json, "args"), &out.p));
    return detail::parse_result(out.str());
  }

  // The same with options (a per-call timeout, progress): with on_progress it waits for
  // call_async; a timeout alone runs on this thread (tn_call_tool_ex), at the plain call's speed.
  ToolResult call(const std::string &name, const std::string &args_json, CallOptions options) const {
    if (options.on_progress) return call_async(name, args_json, std::move(options)).get();
    detail::OutString out;
    std::string opts = detail::timeout_options(RequestOptions{options.timeout});
    detail::check(tn_call_tool_ex(handle(), detail::cstr(name, "name"), detail::cstr(args_json, "args"),
                                  opts.empty() ? nullptr : opts.c_str(), nullptr, &out.p));
    return detail::parse_result(out.str());
  }

  // Starts a call and returns at once (contract §7); see AsyncCall. Throws Error when the
  // library refuses to start it (TN_ERR_NOT_FOUND for an unknown tool, TN_ERR_CLOSED, bad
  // args); then nothing runs.
  AsyncCall call_async(const std::string &name, const std::string &args_json = "{}",
                       CallOptions options = {}) const {
    const char *n = detail::cstr(name, "name"), *a = detail::cstr(args_json, "args");
    return start(std::move(options), [&](tn_client *c, const char *opts, tn_progress_fn progress, void *ud,
                                         uint64_t *id) {
      return tn_call_tool_async(c, n, a, opts, detail::call_done, progress, ud, id);
    });
  }

  // Continues a call that a resolver suspended (toolnexus::suspend; contract §6): token is its
  // result's pending()->resume, answers_json {"<Request id>": <§10 Answer>, …} (see
  // toolnexus::answers; a Request left out is cancel). Any client connected with the same
  // config may resume it, in this process or another. Same results as call(); the result may
  // carry another pending. Throws Error: TN_ERR_INVALID_ARGUMENT for a malformed token or a key
  // that is no Request id of it; TN_ERR_NOT_FOUND when its server is unknown to this client,
  // failed or disabled.
  ToolResult resume(const std::string &token, const std::string &answers_json = "{}") const {
    detail::OutString out;
    detail::check(tn_call_tool_resume(handle(), detail::cstr(token, "token"), detail::cstr(answers_json, "answers"),
                                      &out.p));
    return detail::parse_result(out.str());
  }

  // The same with options (a per-call timeout, progress), waiting for resume_async.
  ToolResult resume(const std::string &token, const std::string &answers_json, CallOptions options) const {
    return resume_async(token, answers_json, std::move(options)).get();
  }

  // resume(), started and returned at once, as call_async() is to call().
  AsyncCall resume_async(const std::string &token, const std::string &answers_json = "{}",
                         CallOptions options = {}) const {
    const char *t = detail::cstr(token, "token"), *a = detail::cstr(answers_json, "answers");
    return start(std::move(options), [&](tn_client *c, const char *opts, tn_progress_fn progress, void *ud,
                                         uint64_t *id) {
      return tn_call_tool_resume_async(c, t, a, opts, detail::call_done, progress, ud, id);
    });
  }

  // Why recent elicitations became cancel on the C++ side (exceptions, refused answers).
  std::vector<std::string> resolver_errors() const {
    if (!state_) return {};
    std::lock_guard<std::mutex> g(state_->mu);
    return state_->errors;
  }

  // Disconnects now (idempotent). From inside this client's resolver it throws Error with
  // TN_ERR_REENTRANT and the client stays connected.
  // Calls in flight on other threads return promptly (TN_ERR_CLOSED or an is_error result).
  void close() {
    tn_client *c = c_.load();
    bool expected = false;
    if (!c || !closing_.compare_exchange_strong(expected, true)) return;  // closed, or closing
    tn_disconnect(c);
    if (const char *m = tn_last_error_message()) {  // tn_disconnect is void: it left an error
      Error e(TN_ERR_REENTRANT, m);
      closing_.store(false);
      throw e;
    }
    c_.store(nullptr);
    state_.reset();  // the library calls the resolver no more once tn_disconnect returned
    {
      std::lock_guard<std::mutex> g(events_mu_);  // nor the event handler
      events_.reset();
      retired_.clear();
    }
    closing_.store(false);
  }

  explicit operator bool() const noexcept { return c_.load() != nullptr; }

 private:
  // Runs f(client, &id) (a tn_*_ex request) on a thread of its own; the AsyncRequest's state
  // holds the id the library writes.
  template <class T, class F>
  AsyncRequest<T> run_async(F f) const {
    auto st = std::make_shared<detail::RequestState>();
    st->client = handle();
    auto promise = std::make_shared<std::promise<T>>();
    AsyncRequest<T> a;
    a.future_ = promise->get_future();
    a.state_ = st;
    std::thread([st, promise, f = std::move(f)]() mutable {
      try {
        promise->set_value(f(st->client, reinterpret_cast<uint64_t *>(&st->id)));
      } catch (...) {
        promise->set_exception(std::current_exception());
      }
      st->finished.store(true);
    }).detach();
    return a;
  }

  // Starts an asynchronous call: f(client, options JSON or NULL, progress fn or NULL,
  // user_data, &id) is tn_call_tool_async or tn_call_tool_resume_async with its arguments.
  template <class F>
  AsyncCall start(CallOptions options, F f) const {
    tn_client *c = handle();
    std::string opts;
    if (options.timeout) opts = "{\"timeoutMs\":" + std::to_string(options.timeout->count()) + "}";
    auto st = std::make_shared<detail::CallState>();
    st->on_progress = std::move(options.on_progress);
    st->client = c;
    AsyncCall a;
    a.future_ = st->promise.get_future();
    a.state_ = st;
    st->self = st;  // until done fires
    tn_status s = f(c, opts.empty() ? nullptr : opts.c_str(), st->on_progress ? detail::call_progress : nullptr,
                    st.get(), &st->id);
    if (s != TN_OK) {
      st->self.reset();  // done never fires for a refused call
      detail::fail(s);
    }
    return a;
  }

  tn_client *handle() const {
    tn_client *c = c_.load();
    if (!c) throw Error(TN_ERR_CLOSED, "the client is closed");
    return c;
  }
  void destroy() noexcept {
    try {
      close();
    } catch (...) {
      // Destroyed inside its own resolver or event handler: the library keeps the client and
      // may call them again, so their state must outlive us.
      (void)state_.release();
      (void)events_.release();
      for (auto &r : retired_) (void)r.release();
      c_.store(nullptr);
    }
  }

  std::atomic<tn_client *> c_{nullptr};
  std::atomic<bool> closing_{false};
  std::unique_ptr<detail::ResolverState> state_;
  mutable std::mutex events_mu_;
  std::unique_ptr<detail::EventState> events_;
  // Handlers replaced from inside themselves: freed at close.
  std::vector<std::unique_ptr<detail::EventState>> retired_;
};

}  // namespace toolnexus

#endif  // TOOLNEXUS_HPP
