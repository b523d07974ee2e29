"""Connect, list, call, answer an elicitation, log in. Run: python example.py SERVER [URL]"""
import os
import sys
import webbrowser

import toolnexus_c as tn

server = sys.argv[1] if len(sys.argv) > 1 else os.environ["TN_FIXTURE"]
config = {"mcpServers": {"fx": {"command": [server]}}}
if len(sys.argv) > 2:  # a remote server, which may need a login (OAuth)
    config["mcpServers"]["remote"] = {"url": sys.argv[2]}


def resolver(request):  # a §10 Request: {"id", "kind", "prompt", "url"?, "data"?}
    if request["kind"] == "authorization" and (request.get("data") or {}).get("source") == "oauth":
        # The library's own login: open it at once (webbrowser honours $BROWSER); the library
        # catches the redirect itself.
        webbrowser.open(request["url"])
        return tn.accept()
    print("server asks:", request["prompt"])
    return tn.accept({"name": "Ada"})  # or tn.decline(), tn.cancel(), a Future to answer later


with tn.connect(config, resolver) as client:
    print([t["name"] for t in client.tools()][:3])
    print(client.call("fx_echo", {"text": "hello"}).output)
    print(client.call("fx_ask_form").output)
    if "remote" in config["mcpServers"]:
        print("remote:", client.statuses()["servers"]["remote"]["status"])
    try:
        client.call("no_such_tool")
    except tn.ToolnexusError as e:  # NotFound here; str(e) is the library's message
        print("error:", e)
