// Tests of toolnexus.hpp against tests/fixture-server, plus the bridge parity vectors through
// the wrapper's pure functions, and durable suspension against the TypeScript SDK 2.4 modern
// peer (run from the repository root: .cache/peers, tests/peers). Usage: test FIXTURE_SERVER
// VECTORS_JSONL. `test --resume CONFIG TOKEN ANSWERS` is the second process of the suspension
// test: it resumes TOKEN with a client of its own and prints the result's JSON.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include <csignal>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

// tn_debug_force_panic is debug-only (c-api.md "Debug-only"); the tests link the debug build.
#define TOOLNEXUS_DEBUG_API
#include "toolnexus.hpp"

namespace tn = toolnexus;

static std::atomic<int> checks{0}, failures{0};
#define CHECK(cond, msg)                                                              \
  do {                                                                                \
    ++checks;                                                                         \
    if (!(cond)) {                                                                    \
      ++failures;                                                                     \
      std::cerr << "FAIL " << __FILE__ << ":" << __LINE__ << ": " << msg << "\n";     \
    }                                                                                 \
  } while (0)

static std::string fixture;

static std::string config() {
  return R"({"mcpServers":{"fx":{"command":[)" + tn::detail::quote(fixture) + "]}}}";
}

static bool has(const std::string &s, const std::string &sub) { return s.find(sub) != std::string::npos; }

template <class F>
static tn::Error error_of(F f) {
  try {
    f();
  } catch (const tn::Error &e) {
    return e;
  }
  return tn::Error(TN_OK, "no error");
}

static void test_connect_list_call() {
  CHECK(tn::version() == "0.1.0", tn::version());
  tn::Client c(config());
  CHECK(has(c.statuses(), R"("fx":{"status":"connected")"), c.statuses());
  auto tools = c.tools();
  bool sorted = true, found = false;
  for (size_t i = 0; i < tools.size(); ++i) {
    if (i && !(tools[i - 1].name < tools[i].name)) sorted = false;
    if (tools[i].name == "fx_echo")
      found = tools[i].server == "fx" && tools[i].remote_name == "echo" && has(tools[i].input_schema, "text");
  }
  CHECK(tools.size() > 20 && sorted && found, "tools: " << c.tools_json().substr(0, 200));
  auto r = c.call("fx_echo", R"({"text":"h\u00e9llo \"q\" 😀"})");
  CHECK(r.output == "h\xC3\xA9llo \"q\" \xF0\x9F\x98\x80" && !r.is_error && r.metadata.empty(), r.json);
  CHECK(c.call("fx_add", R"({"a":2,"b":3})").output == "5", "add");
  auto f = c.call("fx_fail");
  CHECK(f.is_error && has(f.output, "first problem"), f.json);
  CHECK(has(c.call("fx_image").metadata, R"("type":"image")"), "image metadata");
}

static void test_errors() {
  auto e = error_of([] { tn::Client c("{bad"); });
  CHECK(e.status() == TN_ERR_INVALID_JSON &&
            std::string(e.what()) == "config_json is not JSON: key must be a string at line 1 column 2",
        e.status() << " " << e.what());
  e = error_of([] { tn::Client c("[1]"); });
  CHECK(e.status() == TN_ERR_CONFIG && std::string(e.what()) == "the config must be a JSON object, got an array",
        e.what());
  tn::Client c(config());
  e = error_of([&] { c.call("nope"); });
  CHECK(e.status() == TN_ERR_NOT_FOUND && std::string(e.what()) == "no tool named `nope`", e.what());
  e = error_of([&] { c.call("fx_echo", "{bad"); });
  CHECK(e.status() == TN_ERR_INVALID_JSON && has(e.what(), "args_json is not JSON: "), e.what());
  e = error_of([] { tn::answer_to_result(R"({"ok":"yes"})"); });
  CHECK(e.status() == TN_ERR_INVALID_ARGUMENT && std::string(e.what()) == "Answer `ok` must be a boolean, got a string",
        e.what());
  e = error_of([] { tn::detail::check(tn_debug_force_panic("boom from c++")); });
  CHECK(e.status() == TN_ERR_PANIC && has(e.what(), "boom from c++"), e.what());
  c.close();
  c.close();  // idempotent
  e = error_of([&] { c.call("fx_echo"); });
  CHECK(e.status() == TN_ERR_CLOSED, e.what());
}

static void test_elicitation() {
  std::string mode = "accept";
  std::vector<tn::Request> seen;
  tn::Client c(config(), [&](const tn::Request &q) {
    seen.push_back(q);
    if (mode == "accept") return tn::Answer::accept(R"({"name":"Ada"})");
    if (mode == "decline") return tn::Answer::decline();
    if (mode == "cancel") return tn::Answer::cancel();
    if (mode == "throw") throw std::runtime_error("resolver exploded");
    if (mode == "throw-int") throw 42;
    if (mode == "invalid") return tn::Answer::raw(R"({"ok":"yes"})");
    return tn::Answer::none();
  });
  CHECK(c.call("fx_ask_form").output == R"({"action":"accept","content":{"name":"Ada","age":30,"color":"green"}})",
        "accept");
  CHECK(seen.size() == 1 && seen[0].kind == "input" && seen[0].prompt == "Who are you?" &&
            seen[0].id.rfind("elc-", 0) == 0 && has(seen[0].data, R"("schema")") &&
            seen[0].json.rfind(R"({"id":"elc-)", 0) == 0,
        "request " << (seen.empty() ? "" : seen[0].json));
  mode = "decline";
  CHECK(c.call("fx_ask_form").output == R"({"action":"decline"})", "decline");
  mode = "cancel";
  CHECK(c.call("fx_ask_form").output == R"({"action":"cancel"})", "cancel");
  mode = "none";
  CHECK(c.call("fx_ask_form").output == R"({"action":"cancel"})", "no answer");
  mode = "throw";
  CHECK(c.call("fx_ask_form").output == R"({"action":"cancel"})", "throwing resolver");
  mode = "throw-int";
  CHECK(c.call("fx_ask_form").output == R"({"action":"cancel"})", "throwing a non-std exception");
  mode = "invalid";
  CHECK(c.call("fx_ask_form").output == R"({"action":"cancel"})", "invalid answer");
  auto errs = c.resolver_errors();
  CHECK(errs.size() == 3 && has(errs[0], "resolver exploded") && has(errs[2], "must be a boolean"),
        errs.size() << " resolver errors");
  mode = "accept";
  CHECK(c.call("fx_ask_url").output == R"({"action":"accept"})", "url");
  CHECK(seen.back().kind == "authorization" && seen.back().url == "https://example.test/auth", seen.back().json);
  CHECK(c.call("fx_echo", R"({"text":"alive"})").output == "alive", "still alive");
}

static void test_deferred() {
  std::vector<std::thread> threads;
  std::mutex mu;
  {
    tn::Client c(config(), [&](const tn::Request &q) {
      tn::Responder r = q.responder;
      std::lock_guard<std::mutex> g(mu);
      threads.emplace_back([r] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        r.answer(tn::Answer::accept(R"({"name":"Later"})").json);
        // a second answer is refused
        auto e = error_of([&] { r.answer(tn::Answer::decline().json); });
        CHECK(e.status() == TN_ERR_CLOSED, e.what());
      });
      return tn::Answer::defer();
    });
    auto t0 = std::chrono::steady_clock::now();
    auto out = c.call("fx_ask_form").output;
    CHECK(has(out, R"("name":"Later")") && std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(200),
          out);
    // the reader goes on while an answer is deferred
    std::string second;
    std::thread t([&] { second = c.call("fx_ask_form").output; });
    CHECK(c.call("fx_echo", R"({"text":"meanwhile"})").output == "meanwhile", "meanwhile");
    t.join();
    CHECK(has(second, R"("name":"Later")"), second);
  }
  for (auto &t : threads) t.join();
}

static void test_threads_and_reentrancy() {
  tn::Client *self = nullptr;
  tn::Error close_err(TN_OK, ""), call_err(TN_OK, "");
  tn::Client c(config(), [&](const tn::Request &) {
    if (self) {
      close_err = error_of([&] { self->close(); });
      call_err = error_of([&] { self->call("fx_echo", R"({"text":"inner"})"); });
    }
    return tn::Answer::accept(R"({"name":"T"})");
  });
  self = &c;
  CHECK(has(c.call("fx_ask_form").output, R"("name":"T")"), "reentrant resolver still answers");
  CHECK(close_err.status() == TN_ERR_REENTRANT && has(close_err.what(), "inline resolver"), close_err.what());
  CHECK(call_err.status() == TN_ERR_REENTRANT, call_err.what());
  self = nullptr;
  std::atomic<int> ok{0};
  std::vector<std::thread> ts;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 8; ++i)
    ts.emplace_back([&, i] {
      try {
        bool good = c.call("fx_slow", R"({"ms":300})").output == "slept 300";
        for (int j = 0; j < 30; ++j) {
          std::string text = "t" + std::to_string(i) + "-" + std::to_string(j);
          good = good && c.call("fx_echo", R"({"text":")" + text + R"("})").output == text;
        }
        good = good && has(c.call("fx_ask_form").output, R"("name":"T")");
        if (good) ++ok;
      } catch (const std::exception &e) {
        std::cerr << "thread " << i << ": " << e.what() << "\n";
      }
    });
  for (auto &t : ts) t.join();
  CHECK(ok == 8, ok << " of 8 threads ok");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(8 * 300), "calls overlapped");
  // move keeps the client (and its resolver) working
  tn::Client moved = std::move(c);
  CHECK(!c && moved && has(moved.call("fx_ask_form").output, R"("name":"T")"), "moved client");
}

// ---- parity vectors

// Replaces the request id ("id":"elc-<base36>-<counter>") with <ID> after checking its form.
static std::string norm(const std::string &s) {
  const std::string key = "\"id\":\"elc-";
  size_t at = s.find(key);
  if (at == std::string::npos) return s;
  size_t start = at + 6, i = start + 4, dash = std::string::npos;
  while (i < s.size() && s[i] != '"') {
    char c = s[i];
    if (c == '-' && dash == std::string::npos) dash = i;
    else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z' && dash == std::string::npos))) return s;
    ++i;
  }
  if (i >= s.size() || dash == std::string::npos || dash == start + 4 || dash + 1 == i || s[dash + 1] == '0') return s;
  return s.substr(0, start) + "<ID>" + s.substr(i);
}

static tn::Resolver resolver_for(const std::string &mode, std::vector<std::string> &seen) {
  return [mode, &seen](const tn::Request &q) -> tn::Answer {
    seen.push_back(q.json);
    if (mode == "accept_data") return tn::Answer::raw(R"({"id":)" + tn::detail::quote(q.id) + R"(,"ok":true,"data":{"name":"muthu"}})");
    if (mode == "accept_no_data") return tn::Answer::accept();
    if (mode == "declined") return tn::Answer::decline();
    if (mode == "cancelled") return tn::Answer::cancel();
    if (mode == "expired") return tn::Answer::raw(R"({"ok":false,"reason":"expired"})");
    if (mode == "no_reason") return tn::Answer::raw(R"({"ok":false})");
    if (mode == "fails") throw std::runtime_error("the resolver fails");
    if (mode == "no_answer") return tn::Answer::none();
    if (mode == "invalid_json") return tn::Answer::raw("this is {not JSON");
    if (mode == "invalid_answer") return tn::Answer::raw(R"({"ok":"yes"})");
    throw std::logic_error("unknown mode " + mode);
  };
}

static void test_parity(const std::string &path) {
  std::ifstream in(path);
  CHECK(in.good(), "cannot open " << path);
  std::string line;
  int n = 0, bad = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ++n;
    std::string fn, name, input, output, mode, seen_want;
    bool output_null = true, error = false, has_seen = false, seen_null = true;
    for (auto &kv : tn::detail::members(line)) {
      const std::string &k = kv.first, &v = kv.second;
      if (k == "fn") fn = tn::detail::as_string(v);
      else if (k == "case") name = tn::detail::as_string(v);
      else if (k == "input") input = tn::detail::as_string(v);
      else if (k == "output") output_null = v == "null", output = tn::detail::as_string(v);
      else if (k == "error") error = v == "true";
      else if (k == "resolver") mode = tn::detail::as_string(v);
      else if (k == "request_seen") has_seen = true, seen_null = v == "null", seen_want = tn::detail::as_string(v);
    }
    std::vector<std::string> seen;
    std::optional<std::string> out;
    std::string problem;
    try {
      if (fn == "elicitation_to_request") out = tn::elicitation_to_request(input);
      else if (fn == "answer_to_result") out = tn::answer_to_result(input);
      else if (fn == "sanitize") out = tn::sanitize_name(input);
      else if (fn == "server_request_response")
        out = tn::server_request_response(input, mode == "absent" ? tn::Resolver() : resolver_for(mode, seen));
      else problem = "unknown fn " + fn;
      if (error) problem = "want an error, got " + out.value_or("no reply");
      else if (output_null && out) problem = "want no reply, got " + *out;
      else if (!output_null && (!out || norm(*out) != output)) problem = "want " + output + "\n   got  " + out.value_or("no reply");
    } catch (const tn::Error &e) {
      if (!error) problem = std::string("unexpected error: ") + e.what();
      else if (e.status() == TN_ERR_PANIC || !*e.what()) problem = std::string("bad error: ") + e.what();
    }
    if (problem.empty() && fn == "server_request_response" && has_seen) {
      if (seen_null && !seen.empty()) problem = "resolver called: " + seen[0];
      if (!seen_null && (seen.size() != 1 || norm(seen[0]) != seen_want))
        problem = "request seen: want " + seen_want + "\n   got  " + (seen.empty() ? "nothing" : seen[0]);
    }
    if (!problem.empty()) {
      ++bad;
      std::cerr << "parity " << name << ": " << problem << "\n";
    }
  }
  CHECK(n > 100 && bad == 0, bad << " of " << n << " parity vectors failed");
  std::cout << n - bad << "/" << n << " parity vectors ok\n";
}

// ---- calls the host controls (contract §7)

static std::string cancelled_ids(const tn::Client &c) { return c.call("fx_cancelled_ids").output; }

static size_t count_ids(const std::string &ids) {
  return ids == "[]" ? 0 : tn::detail::elements(ids).size();
}

static void test_call_async() {
  tn::Client c(config());
  tn::AsyncCall a = c.call_async("fx_echo", R"({"text":"async"})");
  CHECK(a.valid() && a.id() > 0, "id " << a.id());
  auto r = a.get();
  CHECK(r.output == "async" && !r.is_error && r.json == c.call("fx_echo", R"({"text":"async"})").json, r.json);
  CHECK(!a.cancel(), "a finished call cannot be cancelled");
  auto e = error_of([&] { c.call_async("nope"); });
  CHECK(e.status() == TN_ERR_NOT_FOUND && std::string(e.what()) == "no tool named `nope`", e.what());
  e = error_of([&] { c.call_async("fx_echo", "{bad"); });
  CHECK(e.status() == TN_ERR_INVALID_JSON, e.what());

  // 200 in flight at once, each completes once with its own result
  std::vector<tn::AsyncCall> calls;
  for (int i = 0; i < 200; ++i) calls.push_back(c.call_async("fx_echo", R"({"text":")" + std::to_string(i) + "\"}"));
  int good = 0;
  for (int i = 0; i < 200; ++i) good += calls[i].get().output == std::to_string(i);
  CHECK(good == 200, good << " of 200");

  // a held call: the future is not ready until the server answers
  tn::AsyncCall slow = c.call_async("fx_slow", R"({"ms":400})");
  CHECK(slow.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout, "ready too early");
  CHECK(slow.future().get().output == "slept 400", "slow");

  // a per-call timeout wins over the server's
  auto t0 = std::chrono::steady_clock::now();
  tn::CallOptions o;
  o.timeout = std::chrono::milliseconds(300);
  auto late = c.call("fx_slow", R"({"ms":5000})", o);
  CHECK(late.is_error && has(late.output, "300 ms") && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2),
        late.json);
}

static void test_cancel() {
  tn::Client c(config());
  CHECK(cancelled_ids(c) == "[]", cancelled_ids(c));
  tn::AsyncCall a = c.call_async("fx_slow", R"({"ms":30000})");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto t0 = std::chrono::steady_clock::now();
  CHECK(a.cancel(), "cancel");
  auto r = a.get();
  CHECK(r.is_error && has(r.output, "was cancelled"), r.json);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1), "cancel was not prompt");
  CHECK(!a.cancel(), "a second cancel");
  std::string ids;
  for (int i = 0; i < 100 && count_ids(ids = cancelled_ids(c)) != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(count_ids(ids) == 1, "the server saw " << ids);

  // calls dropped without get(), and calls in flight at close(): each completes, nothing leaks
  for (int i = 0; i < 5; ++i) c.call_async("fx_slow", R"({"ms":30000})");
  tn::AsyncCall held = c.call_async("fx_slow", R"({"ms":30000})");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  c.close();
  auto d = held.get();
  CHECK(d.is_error && has(d.output, "disconnected"), d.json);
  CHECK(!held.cancel(), "cancel after close");
  CHECK(error_of([&] { c.call_async("fx_echo"); }).status() == TN_ERR_CLOSED, "closed");
}

static std::string ev_path() {
  const char *p = ".cache/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
  return std::ifstream(p).good() ? p : "";
}

static void test_progress() {
  std::string ev = ev_path();
  if (ev.empty() || std::system("node --version >/dev/null 2>&1") != 0) {
    std::cout << "skipped: progress (server-everything not installed)\n";
    return;
  }
  tn::Client c(R"({"mcpServers":{"ev":{"command":["node",)" + tn::detail::quote(ev) + R"(,"stdio"],"timeout":10000}}})");
  std::mutex mu;
  std::vector<tn::Progress> seen;
  std::atomic<bool> done{false};
  bool after_done = false;
  tn::CallOptions o;
  o.on_progress = [&](const tn::Progress &p) {
    std::lock_guard<std::mutex> g(mu);
    if (done) after_done = true;
    seen.push_back(p);
  };
  auto a = c.call_async("ev_trigger-long-running-operation", R"({"duration":1,"steps":4})", o);
  auto r = a.get();
  done = true;
  CHECK(!r.is_error && has(r.output, "Long running operation completed"), r.json);
  {
    std::lock_guard<std::mutex> g(mu);
    bool in_order = seen.size() == 4;
    for (size_t i = 0; in_order && i < seen.size(); ++i)
      in_order = seen[i].progress == double(i + 1) && seen[i].total == 4.0 && has(seen[i].json, "progress");
    CHECK(in_order && !after_done, "progress: " << seen.size());
  }
  // progress restarts a per-call timeout: a 2 s job reporting every 250 ms outlives 700 ms
  std::atomic<int> n{0};
  tn::CallOptions o2;
  o2.timeout = std::chrono::milliseconds(700);
  o2.on_progress = [&](const tn::Progress &) { ++n; };
  auto r2 = c.call("ev_trigger-long-running-operation", R"({"duration":2,"steps":8})", o2);
  CHECK(!r2.is_error && n == 8, r2.json << " after " << n.load() << " reports");
  // an exception thrown by on_progress cancels the call; get() rethrows it
  tn::CallOptions o3;
  o3.on_progress = [](const tn::Progress &p) { throw std::runtime_error("stop at " + std::to_string(int(p.progress))); };
  auto t0 = std::chrono::steady_clock::now();
  auto a3 = c.call_async("ev_trigger-long-running-operation", R"({"duration":20,"steps":20})", o3);
  std::string what;
  try {
    a3.get();
  } catch (const std::runtime_error &e) {
    what = e.what();
  }
  CHECK(what == "stop at 1" && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5), what);
  CHECK(!a3.cancel(), "already ended by the cancel");
  CHECK(has(c.call("ev_echo", R"({"message":"after"})").output, "after"), "after");
}

// ---- durable suspension (contract §6)

static std::string self_exe;

// The TS SDK 2.4 peer, modern era only, over stdio, as server "tsm"; empty when not installed.
static std::string modern_config() {
  char buf[4096];
  if (!getcwd(buf, sizeof buf)) return "";
  std::string root = buf, nm = root + "/.cache/peers/npm-modern/node_modules", peer = root + "/tests/peers/ts_peer.mjs";
  struct stat sb;
  if (stat(nm.c_str(), &sb) != 0 || stat(peer.c_str(), &sb) != 0) return "";
  return R"({"mcpServers":{"tsm":{"command":["node",)" + tn::detail::quote(peer) + R"(,"stdio-modern"],"env":{"PEER_NODE_MODULES":)" +
         tn::detail::quote(nm) + "}}}}";
}

// Runs this binary again (`--resume …`), returning its exit status and stdout.
static int second_process(const std::vector<std::string> &args, std::string &out) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  std::vector<char *> argv{const_cast<char *>(self_exe.c_str())};
  for (auto &a : args) argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, self_exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return -1;
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int resume_main(const std::string &cfg, const std::string &token, const std::string &answers) {
  try {
    tn::Client c(cfg);  // no resolver
    std::cout << c.resume(token, answers).json << "\n";
    return 0;
  } catch (const tn::Error &e) {
    std::cerr << "resume: " << e.status() << " " << e.what() << "\n";
    return 3;
  }
}

// Calls tsm_ask with a resolver that returns tn::suspend; checks and returns the pending.
static tn::Pending suspend_once(const std::string &cfg) {
  std::vector<std::string> seen;
  std::mutex mu;
  tn::Client c(cfg, [&](const tn::Request &r) {
    std::lock_guard<std::mutex> g(mu);
    seen.push_back(r.id);
    return tn::suspend;
  });
  auto r = c.call("tsm_ask");
  auto p = r.pending();
  CHECK(!r.is_error && r.output == "The server asked for input; the call is suspended.\nWho are you?", r.json);
  std::lock_guard<std::mutex> g(mu);
  CHECK(p && p->requests.size() == 1 && seen.size() == 1 && p->requests[0].id == seen[0] &&
            p->requests[0].prompt == "Who are you?" && p->requests[0].kind == "input" && p->resume.rfind("tn1.", 0) == 0 &&
            has(r.metadata, p->json),
        r.json);
  CHECK(c.resolver_errors().empty(), "resolver errors");
  return p ? *p : tn::Pending{};
}

static void test_suspend_and_resume() {
  std::string cfg = modern_config();
  if (cfg.empty()) {
    std::cerr << "skipped test_suspend_and_resume: run scripts/install-peers.sh (the TS SDK 2.4 peer)\n";
    return;
  }
  // resumed in a second process with the same config
  tn::Pending p = suspend_once(cfg);
  if (p.requests.empty()) return;
  std::string out;
  int rc = second_process(
      {"--resume", cfg, p.resume, tn::answers({{p.requests[0].id, tn::Answer::accept(R"({"name":"Resumed"})")}})}, out);
  CHECK(rc == 0, "second process exited " << rc << ": " << out);
  auto r = tn::detail::parse_result(out.empty() ? "{}" : out);
  CHECK(!r.is_error && !r.pending() && has(r.output, R"("action":"accept")") &&
            has(r.output, R"("content":{"name":"Resumed","age":30})"),
        out);
  // here, asynchronously, with a decline; and with no answers: cancel
  tn::Client c(cfg);
  p = suspend_once(cfg);
  auto a = c.resume_async(p.resume, tn::answers({{p.requests[0].id, tn::Answer::decline()}}));
  CHECK(a.wait_for(std::chrono::seconds(60)) == std::future_status::ready, "resume_async");
  r = a.get();
  CHECK(!r.is_error && has(r.output, R"("action":"decline")"), r.json);
  p = suspend_once(cfg);
  tn::CallOptions o;
  o.timeout = std::chrono::milliseconds(30000);
  r = c.resume(p.resume, "{}", o);
  CHECK(!r.is_error && has(r.output, R"("action":"cancel")"), r.json);
  // malformed tokens: TN_ERR_INVALID_ARGUMENT, sync and async
  for (const char *bad : {"nope", "tn1.!!!", "tn1.e30"}) {
    auto e = error_of([&] { c.resume(bad); });
    CHECK(e.status() == TN_ERR_INVALID_ARGUMENT, bad << ": " << e.status() << " " << e.what());
    e = error_of([&] { c.resume_async(bad).get(); });
    CHECK(e.status() == TN_ERR_INVALID_ARGUMENT, bad << ": " << e.status() << " " << e.what());
  }
  p = suspend_once(cfg);
  auto e = error_of([&] { c.resume(p.resume, R"({"elc-not-in-token":{"ok":true}})"); });
  CHECK(e.status() == TN_ERR_INVALID_ARGUMENT && has(e.what(), "not the id of a Request"), e.what());
  // a client without that server: TN_ERR_NOT_FOUND naming it
  {
    tn::Client other(config());
    e = error_of([&] { other.resume(p.resume); });
    CHECK(e.status() == TN_ERR_NOT_FOUND && has(e.what(), "`tsm`"), e.status() << " " << e.what());
    e = error_of([&] { other.resume_async(p.resume).get(); });
    CHECK(e.status() == TN_ERR_NOT_FOUND && has(e.what(), "`tsm`"), e.status() << " " << e.what());
  }
  // the refusals used nothing up
  r = c.resume(p.resume, tn::answers({{p.requests[0].id, tn::Answer::accept(R"({"name":"Late"})")}}));
  CHECK(has(r.output, R"("name":"Late")"), r.json);
  // a legacy server's elicitation cannot be suspended: cancel
  tn::Client fx(config(), [](const tn::Request &) { return tn::Answer::suspend(); });
  r = fx.call("fx_ask_form");
  CHECK(!r.pending() && has(r.output, "cancel"), r.json);
}

static void test_skills() {
  const std::string pdf = "skill://pdf-processing/SKILL.md";
  tn::Client c(R"({"mcpServers":{"fx":{"command":[)" + tn::detail::quote(fixture) + R"(,"--skills"]}}})");
  auto listing = c.skills();
  CHECK(has(listing, R"({"servers":{"fx":{"skills":[{"uri":"skill://pdf-processing/SKILL.md")"), listing.substr(0, 200));
  auto sk = c.get_skill("fx", pdf);
  CHECK(sk.server == "fx" && sk.uri == pdf && sk.text.rfind("---\nname: pdf-processing\n", 0) == 0 &&
            has(sk.frontmatter, R"("license":"Apache-2.0")") && sk.mime_type == "text/markdown",
        sk.json);
  auto forms = c.read_skill_file("fx", pdf, "references/FORMS.md");
  CHECK(forms.text == "Supporting content.\n" && forms.uri == "skill://pdf-processing/references/FORMS.md", forms.json);
  CHECK(c.read_skill_file("fx", pdf, "assets/logo.png").blob == "iVBORw0KGgoAAf7/", "logo");
  auto e = error_of([&] { c.get_skill("fx", "skill://tampered-digest/SKILL.md"); });
  CHECK(e.status() == TN_ERR_NOT_FOUND && has(e.what(), "digest mismatch"), e.what());
  e = error_of([&] { c.read_skill_file("fx", pdf, "references/SECRET.md"); });
  CHECK(e.status() == TN_ERR_NOT_FOUND && has(e.what(), "nothing was requested"), e.what());
  e = error_of([&] { c.get_skill("nope", pdf); });
  CHECK(e.status() == TN_ERR_NOT_FOUND && std::string(e.what()) == "no server named `nope` in the config", e.what());
}

// Long-lived hosts: on_event sees a tool-list change and a killed server restarted, on one thread
// that is not the caller's; an exception it throws is kept.
static void test_events() {
  tn::Client c(R"({"mcpServers":{"fx":{"command":[)" + tn::detail::quote(fixture) +
               R"(,"--live"],"restart":{"backoffMs":100}}}})");
  std::mutex mu;
  std::vector<tn::Event> seen;
  std::thread::id on;
  c.on_event([&](const tn::Event &e) {
    std::lock_guard<std::mutex> g(mu);
    on = std::this_thread::get_id();
    seen.push_back(e);
    if (e.type == "log") throw std::runtime_error("handler bug");
  });
  auto wait_for = [&](const std::string &needle) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> g(mu);
        for (auto &e : seen)
          if (has(e.json, needle)) return e;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return tn::Event{};
  };
  c.call("fx_toggle_tool", R"({"on":true})");
  auto e = wait_for(R"("added":["fx_live_extra"])");
  CHECK(e.type == "tools" && e.server == "fx", e.json);
  CHECK(c.call("fx_live_extra").output == "live_extra ok", "the added tool");
  c.call("fx_log", R"({"level":"error","message":"boom"})");
  CHECK(wait_for("boom").type == "log", "a log event");
  pid_t pid = std::stoi(c.call("fx_pid").output);
  kill(pid, SIGKILL);
  CHECK(has(wait_for(R"("status":"restarting")").json, "killed by signal 9"), "restarting");
  CHECK(c.call("fx_echo", R"({"text":"back"})").output == "back", "back");
  CHECK(!wait_for(R"("status":"connected")").json.empty(), "connected");
  CHECK(on != std::this_thread::get_id(), "the library's event thread");
  CHECK(c.event_errors().size() == 1 && has(c.event_errors()[0], "handler bug"), "kept");
  c.on_event(nullptr);
  c.close();
}

// Tasks: a required-task tool's result like any call, its status changes with their
// resume token on on_progress, a wait that ends while the task works gives a pending carrying the
// task, and resume collects it.
static void test_tasks() {
  tn::Client c(R"({"mcpServers":{"fx":{"command":[)" + tn::detail::quote(fixture) +
               R"(,"--dual","--tasks"],"protocol":"modern"}}})");
  std::mutex mu;
  std::vector<tn::Progress> seen;
  tn::CallOptions o;
  o.on_progress = [&](const tn::Progress &p) {
    std::lock_guard<std::mutex> g(mu);
    seen.push_back(p);
  };
  auto r = c.call("fx_task_slow", R"({"ms":300,"steps":3})", o);
  CHECK(!r.is_error && r.output == "slow task done after 3 steps", r.json);
  {
    std::lock_guard<std::mutex> g(mu);
    bool ok = !seen.empty() && has(seen.front().task, R"("status":"working")") &&
              has(seen.back().task, R"("status":"completed")");
    for (auto &p : seen)
      if (!p.task.empty()) ok = ok && p.resume.rfind("tn1.", 0) == 0;
    CHECK(ok, "task statuses: " << seen.size());
  }
  tn::CallOptions quick;
  quick.timeout = std::chrono::milliseconds(200);
  r = c.call("fx_task_slow", R"({"ms":1200,"steps":1})", quick);
  auto p = r.pending();
  CHECK(!r.is_error && p && has(p->task, R"("status":"working")"), r.json);
  if (p) {
    auto done = c.resume(p->resume, "{}");
    CHECK(!done.is_error && done.output == "slow task done after 1 steps", done.json);
  }
}

// Resources, templates, subscriptions, prompts and completions against the fixture's
// --resources mode in both eras: every method, the errors, a subscription's resource_updated
// event and none after unsubscribe, a prompt list change, a blob's bytes, a slow read cancelled
// through read_resource_async; and tn_call_tool_ex, tn_tools_for, tn_tools_to_provider,
// tn_list_tasks.
static void test_resources(bool modern) {
  const std::string era = modern ? "modern: " : "legacy: ";
  tn::Client c(R"({"mcpServers":{"fx":{"command":[)" + tn::detail::quote(fixture) + R"(,"--resources")" +
                   (modern ? R"(,"--modern")" : "") + "]}}}",
               [](const tn::Request &) { return tn::Answer::accept(R"({"version":"4"})"); });
  auto rs = c.resources();
  CHECK(rs.size() >= 4 && rs[0].uri == "fx://ask" && rs[2].uri == "fx://doc/1" && rs[2].title == "Document 1" &&
            rs[2].size && rs[2].server == "fx",
        era << c.resources_json());
  auto ts = c.resource_templates();
  CHECK(ts.size() == 2 && ts[0].uri_template == "fx://item/{id}", era << c.resource_templates_json());
  auto r = c.read_resource("fx", "fx://doc/1");
  CHECK(r.contents.size() == 1 && r.contents[0].text == "document 1" && !r.contents[0].is_blob, era << r.json);
  r = c.read_resource("fx", "fx://bin/1", {std::chrono::milliseconds(5000)});
  auto bytes = r.contents.empty() ? std::vector<unsigned char>() : r.contents[0].bytes();
  bool all = bytes.size() == 256;
  for (size_t i = 0; all && i < bytes.size(); ++i) all = bytes[i] == i;
  CHECK(all && r.contents[0].is_blob && r.contents[0].mime_type == "application/octet-stream", era << r.json);
  CHECK(c.read_resource("fx", "fx://ask").contents[0].text == "version 4", era << "the resolver answered the read");
  auto t = tn::uri_template("fx://item/{id}", R"({"id":7})");
  CHECK(t.variables == std::vector<std::string>{"id"} && t.uri && *t.uri == "fx://item/7", t.json);
  CHECK(c.read_resource("fx", *t.uri).contents[0].text == "item 7", era << "a template read");
  CHECK(!tn::uri_template("fx://search{?q,lang}").uri, "no values: no uri");

  auto ps = c.prompts();
  const tn::Prompt *greet = nullptr;
  for (auto &p : ps)
    if (p.name == "fx_greet") greet = &p;
  CHECK(greet && greet->prompt == "greet" && greet->arguments.size() == 2 && greet->arguments[0].required,
        era << c.prompts_json());
  auto g = c.get_prompt("fx_greet", R"({"name":"Ada"})");
  CHECK(g.description == "Greets someone" && g.messages.size() == 1 && g.messages[0].is_text &&
            g.messages[0].text == "Hello, Ada!" && g.messages[0].role == "user",
        era << g.json);
  g = c.get_prompt("fx_blocks", "", {std::chrono::milliseconds(5000)});
  CHECK(g.messages.size() == 7 && !g.messages[1].is_text && has(g.messages[1].content, R"("image")"), era << g.json);
  auto comp = c.complete("fx", tn::prompt_ref("greet"), "name", "a", R"({"lang":"fr"})");
  CHECK(comp.values == (std::vector<std::string>{"Amélie", "Antoine"}), era << comp.json);
  comp = c.complete("fx", tn::resource_ref("fx://item/{id}"), "id", "1");
  CHECK(comp.values.size() == 3 && comp.total && *comp.total == 3 && !comp.has_more, era << comp.json);

  CHECK(error_of([&] { c.read_resource("nope", "fx://doc/1"); }).status() == TN_ERR_NOT_FOUND, era << "server");
  CHECK(error_of([&] { c.read_resource("fx", "fx://nothing"); }).status() == TN_ERR_NOT_FOUND, era << "uri");
  CHECK(error_of([&] { c.get_prompt("fx_greet", "{}"); }).status() == TN_ERR_SERVER, era << "missing argument");
  CHECK(error_of([&] { c.get_prompt("fx_greet", "[1]"); }).status() == TN_ERR_INVALID_ARGUMENT, era << "bad args");
  CHECK(error_of([&] { c.complete(R"({"server":"fx"})"); }).status() == TN_ERR_INVALID_ARGUMENT, era << "request");
  CHECK(error_of([&] { c.unsubscribe("fx", "fx://doc/9"); }).status() == TN_ERR_NOT_FOUND, era << "unsubscribe");
  CHECK(error_of([&] { c.read_resource("fx", "fx://slow/5000", {std::chrono::milliseconds(200)}); }).status() ==
            TN_ERR_TIMEOUT,
        era << "timeout");
  CHECK(error_of([] { tn::uri_template("fx://item/{id"); }).status() == TN_ERR_INVALID_ARGUMENT, "template");

  // Held before the changes, so that the events tell what changed.
  std::mutex mu;
  std::vector<tn::Event> seen;
  c.on_event([&](const tn::Event &e) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(e);
  });
  auto count = [&](const std::string &type) {
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (auto &e : seen) n += e.type == type;
    return n;
  };
  auto wait_for = [&](const std::string &type) {
    for (int i = 0; i < 500 && count(type) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard<std::mutex> lock(mu);
    for (auto &e : seen)
      if (e.type == type) return e;
    return tn::Event{};
  };
  c.subscribe("fx", "fx://doc/1");
  CHECK(c.call("fx_touch", R"({"uri":"fx://doc/1"})").output == "touched 1", era << "touched");
  auto e = wait_for("resource_updated");
  CHECK(e.server == "fx" && e.uri == "fx://doc/1", era << e.json);
  c.unsubscribe("fx", "fx://doc/1");
  CHECK(c.call("fx_touch", R"({"uri":"fx://doc/1"})").output == "touched 0", era << "after unsubscribe");
  c.call("fx_toggle_prompt", R"({"on":true})");
  e = wait_for("prompts");
  CHECK(has(e.json, R"("added":["fx_extra"])"), era << e.json);
  CHECK(count("resource_updated") == 1, era << "no update after unsubscribe");

  // A slow read cancelled from this thread while it runs on its own.
  auto slow = c.read_resource_async("fx", "fx://slow/30000");
  auto other = c.get_prompt_async("fx_greet", R"({"name":"Bo"})");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto t0 = std::chrono::steady_clock::now();
  CHECK(slow.cancel(), era << "cancel ended it");
  CHECK(error_of([&] { slow.get(); }).status() == TN_ERR_CANCELLED, era << "cancelled");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3), era << "promptly");
  CHECK(other.get().messages[0].text == "Hello, Bo!", era << "the other request");
  CHECK(!other.cancel(), era << "nothing to cancel once done");
  auto quick = c.read_resource_async("fx", "fx://doc/2", {std::chrono::milliseconds(5000)});
  CHECK(quick.get().contents[0].text == "document 2", era << "async read");
  c.on_event(nullptr);
}

static void test_other_wrappers() {
  tn::Client c(config());
  tn::CallOptions o;
  o.timeout = std::chrono::milliseconds(200);
  auto r = c.call("fx_slow", R"({"ms":5000})", o);  // tn_call_tool_ex
  CHECK(r.is_error && has(r.json, "200 ms"), r.json);
  CHECK(c.call("fx_echo", R"({"text":"ex"})", tn::CallOptions{}).output == "ex", "ex without a timeout");
  CHECK(has(c.tools_for("anthropic"), R"("input_schema")"), "tools_for");
  CHECK(tn::tools_to_provider(c.tools_json(), "openai") == c.tools_for("openai"), "tools_to_provider");
  CHECK(error_of([&] { c.tools_for("cohere"); }).status() == TN_ERR_INVALID_ARGUMENT, "style");
  CHECK(error_of([&] { c.tasks("fx"); }).status() == TN_ERR_NOT_FOUND, "no tasks");
  tn::Client t(R"({"mcpServers":{"fx":{"command":[)" + tn::detail::quote(fixture) +
               R"(,"--dual","--tasks"],"protocol":"legacy"}}})");
  t.call("fx_task_slow", R"({"ms":50,"steps":1})");
  CHECK(has(t.tasks("fx"), R"({"server":"fx","tasks":)"), t.tasks("fx"));
}

int main(int argc, char **argv) {
  self_exe = argv[0];
  if (argc == 5 && std::string(argv[1]) == "--resume") return resume_main(argv[2], argv[3], argv[4]);
  if (argc < 3) {
    std::cerr << "usage: test FIXTURE_SERVER VECTORS_JSONL\n";
    return 2;
  }
  fixture = argv[1];
  try {
    test_connect_list_call();
    test_errors();
    test_elicitation();
    test_deferred();
    test_threads_and_reentrancy();
    test_parity(argv[2]);
    test_call_async();
    test_cancel();
    test_progress();
    test_suspend_and_resume();
    test_skills();
    test_events();
    test_tasks();
    test_resources(false);
    test_resources(true);
    test_other_wrappers();
  } catch (const std::exception &e) {
    ++failures;
    std::cerr << "uncaught: " << e.what() << "\n";
  }
  std::cout << checks - failures << " of " << checks << " checks passed\n";
  return failures ? 1 : 0;
}
