// Connect, list, call, answer an elicitation. Run: ./example /path/to/an/mcp/server
#include <cstdlib>
#include <iostream>

#include "toolnexus.hpp"

int main(int argc, char **argv) {
  const char *server = argc > 1 ? argv[1] : std::getenv("TN_FIXTURE");
  if (!server) return std::cerr << "usage: example SERVER\n", 2;
  std::string config = R"({"mcpServers":{"fx":{"command":[)" + toolnexus::detail::quote(server) + "]}}}";
  try {
    toolnexus::Client client(config, [](const toolnexus::Request &req) {
      std::cout << "server asks: " << req.prompt << "\n";
      return toolnexus::Answer::accept(R"({"name":"Ada"})");
    });
    for (const auto &tool : client.tools())
      if (tool.name == "fx_echo" || tool.name == "fx_ask_form") std::cout << "tool " << tool.name << "\n";
    std::cout << client.call("fx_echo", R"({"text":"hello"})").output << "\n";
    std::cout << client.call("fx_ask_form").output << "\n";
    client.call("no_such_tool");
  } catch (const toolnexus::Error &e) {
    std::cout << "error " << e.status() << ": " << e.what() << "\n";
  }
  return 0;
}
