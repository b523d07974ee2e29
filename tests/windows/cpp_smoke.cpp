// The C++ wrapper (bindings/cpp/toolnexus.hpp) built with mingw-w64 g++ and run under Wine
// against the Windows fixture server: connect, list, call, an elicitation answered,
// an error thrown. (bindings/cpp/test.cpp and example.cpp start processes with posix_spawn.)
// Run: cpp_smoke FIXTURE; prints "cpp smoke: ok" and exits 0 when every check held.
#include <cstdio>
#include <iostream>
#include <string>

#include "toolnexus.hpp"

static int failed = 0;
static void check(bool ok, const std::string &what) {
  if (!ok) {
    failed = 1;
    std::cerr << "check failed: " << what << "\n";
  }
}

int main(int argc, char **argv) {
  if (argc < 2) return std::cerr << "usage: cpp_smoke FIXTURE\n", 2;
  std::string config = R"({"mcpServers":{"fx":{"command":[)" + toolnexus::detail::quote(argv[1]) + "]}}}";
  try {
    int asked = 0;
    toolnexus::Client client(config, [&](const toolnexus::Request &) {
      asked++;
      return toolnexus::Answer::accept(R"({"name":"Ada","age":36,"color":"red","subscribe":true})");
    });
    bool echo = false;
    for (const auto &tool : client.tools()) echo |= tool.name == "fx_echo";
    check(echo, "fx_echo listed");
    auto r = client.call("fx_echo", R"({"text":"hello from C++"})");
    check(r.output == "hello from C++", "echo: " + r.output);
    r = client.call("fx_ask_form");
    check(asked == 1 && r.output.find("Ada") != std::string::npos, "elicitation: " + r.output);
    bool threw = false;
    try {
      client.call("no_such_tool");
    } catch (const toolnexus::Error &e) {
      threw = std::string(e.what()).find("no_such_tool") != std::string::npos;
    }
    check(threw, "an unknown tool throws, naming it");
  } catch (const toolnexus::Error &e) {
    std::cerr << "error " << e.status() << ": " << e.what() << "\n";
    return 1;
  }
  if (!failed) std::cout << "cpp smoke: ok\n";
  return failed;
}
