// A question suspended in one process and answered in another.
// Run: ./example_suspend COMMAND... (an MCP server of the 2026-07-28 era with a tool `ask`)
#include <spawn.h>
#include <sys/wait.h>

#include <iostream>
#include <string>

#include "toolnexus.hpp"

extern char **environ;

int main(int argc, char **argv) {
  namespace tn = toolnexus;
  if (argc == 5 && std::string(argv[1]) == "--resume") {  // the second process: the same config
    tn::Client client(argv[2]);                           // no resolver needed
    auto answers = tn::answers({{argv[4], tn::Answer::accept(R"({"name":"Ada"})")}});
    std::cout << "resumed: " << client.resume(argv[3], answers).output << "\n";  // throws tn::Error
    return 0;
  }
  std::string command;
  for (int i = 1; i < argc; ++i) command += (i > 1 ? "," : "") + tn::detail::quote(argv[i]);
  std::string config = R"({"mcpServers":{"forms":{"command":[)" + command + "]}}}";
  tn::ToolResult result;
  {
    tn::Client client(config, [](const tn::Request &) { return tn::suspend; });
    result = client.call("forms_ask");  // returns at once: nobody has to be there to answer
  }
  std::cout << result.output << std::endl;
  auto pending = result.pending();  // the Requests and the resume token ("tn1.…"): store them anywhere
  if (!pending) return 1;
  const char *second[] = {argv[0], "--resume", config.c_str(), pending->resume.c_str(),
                          pending->requests[0].id.c_str(), nullptr};
  pid_t pid;
  int status = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, const_cast<char **>(second), environ) != 0) return 1;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
