"""A question suspended in one process and answered in another.
Run: python example_suspend.py COMMAND...   (an MCP server of the 2026-07-28 era with a tool `ask`)"""
import json
import subprocess
import sys

import toolnexus_c as tn

if sys.argv[1] == "--resume":  # the second process: the same config, no resolver needed
    config, pending = json.loads(sys.argv[2]), json.loads(sys.argv[3])
    answers = {q["id"]: tn.accept({"name": "Ada"}) for q in pending["requests"]}
    with tn.connect(config) as client:
        print("resumed:", client.resume(pending["resume"], answers).output)
    sys.exit()

config = {"mcpServers": {"forms": {"command": sys.argv[1:]}}}
with tn.connect(config, lambda request: tn.SUSPEND) as client:
    result = client.call("forms_ask")  # returns at once: nobody has to be there to answer
print(result.output)
pending = result.pending  # {"requests": [§10 Request, ...], "resume": "tn1...."}: store it anywhere
assert pending is not None
subprocess.run([sys.executable, __file__, "--resume", json.dumps(config), json.dumps(pending)], check=True)
