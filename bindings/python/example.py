"""Connect, list, call, answer an elicitation. Run: python example.py /path/to/mcp-server"""
import os
import sys

import toolnexus_c as tn

server = sys.argv[1] if len(sys.argv) > 1 else os.environ["TN_FIXTURE"]
config = {"mcpServers": {"fx": {"command": [server]}}}


def resolver(request):  # a §10 Request: {"id", "kind", "prompt", "data": {"schema": ...}}
    print("server asks:", request["prompt"])
    return tn.accept({"name": "Ada"})  # or tn.decline(), tn.cancel(), a Future to answer later


with tn.connect(config, resolver) as client:
    print([t["name"] for t in client.tools()][:3])
    print(client.call("fx_echo", {"text": "hello"}).output)
    print(client.call("fx_ask_form").output)
    try:
        client.call("no_such_tool")
    except tn.ToolnexusError as e:  # NotFound here; str(e) is the library's message
        print("error:", e)
