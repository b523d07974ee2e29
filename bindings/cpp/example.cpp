// Connect, list, call, answer an elicitation, log in. Run: ./example SERVER [URL]
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <iostream>

#include "toolnexus.hpp"

extern char **environ;

// Opens url with $BROWSER when set, else xdg-open; true when the opener exited 0.
static bool open_browser(const std::string &url) {
  const char *opener = std::getenv("BROWSER");
  if (!opener || !*opener) opener = "xdg-open";
  const char *argv[] = {opener, url.c_str(), nullptr};
  pid_t pid;
  if (posix_spawnp(&pid, opener, nullptr, nullptr, const_cast<char **>(argv), environ) != 0) return false;
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv) {
  const char *server = argc > 1 ? argv[1] : std::getenv("TN_FIXTURE");
  if (!server) return std::cerr << "usage: example SERVER [URL]\n", 2;
  std::string config = R"({"mcpServers":{"fx":{"command":[)" + toolnexus::detail::quote(server) + "]}";
  if (argc > 2)  // a remote server, which may need a login (OAuth)
    config += R"(,"remote":{"url":)" + toolnexus::detail::quote(argv[2]) + "}";
  config += "}}";
  try {
    toolnexus::Client client(config, [](const toolnexus::Request &req) {
      if (req.kind == "authorization" && req.data.find(R"("source":"oauth")") != std::string::npos) {
        // The library's own login: open it at once; the library catches the redirect.
        return open_browser(req.url) ? toolnexus::Answer::accept() : toolnexus::Answer::cancel();
      }
      std::cout << "server asks: " << req.prompt << "\n";
      return toolnexus::Answer::accept(R"({"name":"Ada"})");
    });
    for (const auto &tool : client.tools())
      if (tool.name == "fx_echo" || tool.name == "fx_ask_form") std::cout << "tool " << tool.name << "\n";
    std::cout << client.call("fx_echo", R"({"text":"hello"})").output << "\n";
    std::cout << client.call("fx_ask_form").output << "\n";
    if (argc > 2) std::cout << "remote: " << client.statuses() << "\n";
    client.call("no_such_tool");
  } catch (const toolnexus::Error &e) {
    std::cout << "error " << e.status() << ": " << e.what() << "\n";
  }
  return 0;
}
