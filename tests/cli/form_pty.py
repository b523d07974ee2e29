"""`toolnexus call` answering a server's form on a terminal: the command runs on a
pseudo-terminal (Python's pty module) and this script types the answers.

    python3 tests/cli/form_pty.py TOOLNEXUS_BIN FIXTURE_SERVER

The fixture's ask_form is given a schema with every kind of field the form supports (text,
integer, number, enum, boolean, multi-select) and defaults; the result the server got back is
checked field by field. Then Esc at the first question must decline. `read` of a binary resource
must be refused on the terminal. Prints a summary line.
"""

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import sys
import tempfile
import termios
import time

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]")
DOWN, SPACE, ENTER, ESC, BACKSPACE = "\x1b[B", " ", "\r", "\x1b", "\x7f"

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "description": "as you like to be called"},
        "age": {"type": "integer", "default": 30},
        "ratio": {"type": "number"},
        "color": {"type": "string", "enum": ["red", "green", "blue"], "default": "green"},
        "subscribe": {"type": "boolean", "default": True},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "default": ["b"]},
    },
    "required": ["name"],
}


class Term:
    """The command on a pty: send keys, wait for text (ANSI sequences stripped)."""

    def __init__(self, argv, cwd):
        pid, fd = pty.fork()
        if pid == 0:  # the child: the pty is its controlling terminal and stdin/stdout/stderr
            try:
                os.chdir(cwd)
                os.execv(argv[0], argv)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.raw = b""
        self.seen = 0  # how much of the plain text earlier waits consumed

    def plain(self):
        return ANSI.sub(b"", self.raw).decode("utf-8", "replace")

    def pump(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the pty
            return False
        if not data:
            return False
        if b"\x1b[6n" in data:  # a cursor-position query: answer as a terminal would
            os.write(self.fd, b"\x1b[1;1R")
        self.raw += data
        return True

    def wait_for(self, text, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            i = self.plain().find(text, self.seen)
            if i >= 0:
                self.seen = i + len(text)
                return
            if not self.pump(0.1):
                break
        raise AssertionError("waited for %r; the terminal shows:\n%s" % (text, self.plain()[-3000:]))

    def send(self, keys):
        time.sleep(0.15)  # let the prompt finish drawing and enter raw mode
        os.write(self.fd, keys.encode())

    def finish(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline and self.pump(0.1):
            pass
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)


def last_json_line(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError("no JSON line in:\n" + text)


def main():
    exe, fixture = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "mcp.json"), "w") as f:
            json.dump({"mcpServers": {"fx": {"command": [fixture]}}}, f)
        args = json.dumps({"message": "Tell me about you", "schema": SCHEMA})

        t = Term([exe, "call", "fx_ask_form", args], d)
        t.wait_for("The server asks: Tell me about you")
        t.wait_for("Your name:")
        t.wait_for("as you like to be called")  # the description as help
        t.send(ENTER)  # required and empty: refused, asked again
        t.wait_for("required")
        t.send("Ada Lovelace" + ENTER)
        t.wait_for("age (optional):")
        t.wait_for("30")  # the default is shown
        t.send("x" + ENTER)
        t.wait_for("is not a whole number")
        t.send(BACKSPACE + ENTER)  # empty: Enter takes the default
        t.wait_for("ratio (optional):")
        t.send("1.50" + ENTER)
        t.wait_for("color (optional):")
        t.wait_for("blue")
        t.send(DOWN + ENTER)  # the cursor starts on the default (green): one down is blue
        t.wait_for("subscribe (optional):")
        t.wait_for("Y/n")  # default yes
        t.send(ENTER)
        t.wait_for("tags (optional):")
        t.wait_for("c")
        t.send(SPACE + ENTER)  # b is selected by default; space on the first adds a
        code = t.finish()
        out = t.plain()
        assert code == 0, "exit %s:\n%s" % (code, out)
        result = last_json_line(out)
        want = {
            "action": "accept",
            "content": {"name": "Ada Lovelace", "age": 30, "ratio": 1.5, "color": "blue", "subscribe": True,
                        "tags": ["a", "b"]},
        }
        assert result == want, "got %s\nwant %s\nterminal:\n%s" % (result, want, out)
        assert '"ratio":1.50' in out, "the number's text is kept: " + out[-500:]
        print("form answered through a pty: %s" % json.dumps(result["content"]))

        t = Term([exe, "call", "fx_ask_form"], d)
        t.wait_for("name:")
        t.send(ESC)
        code = t.finish()
        out = t.plain()
        assert code == 0 and last_json_line(out) == {"action": "decline"}, out
        print("Esc declined the form")

        t = Term([exe, "call", "fx_ask_form"], d)
        t.wait_for("name:")
        t.send("\x03")  # Ctrl-C in the form cancels the question, not the command
        code = t.finish()
        out = t.plain()
        assert code == 0 and last_json_line(out) == {"action": "cancel"}, out
        print("Ctrl-C cancelled the form")

        # progress on the terminal (§7): server-everything reports it for a long operation
        ev = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".cache", "peers", "npm",
                          "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
        with open(os.path.join(d, "ev.json"), "w") as f:
            json.dump({"mcpServers": {"ev": {"command": ["node", os.path.abspath(ev), "stdio"]}}}, f)
        t = Term([exe, "--config", "ev.json", "call", "ev_trigger-long-running-operation",
                  '{"duration":1,"steps":3}'], d)
        for step in ("[1/3]", "[2/3]", "[3/3]"):
            t.wait_for(step)
        code = t.finish()
        out = t.plain()
        assert code == 0 and "Long running operation completed" in out, out
        print("progress drawn on the terminal")

        # `read` of a binary resource is refused on a terminal, a text one printed
        with open(os.path.join(d, "res.json"), "w") as f:
            json.dump({"mcpServers": {"fx": {"command": [fixture, "--resources"]}}}, f)
        t = Term([exe, "--config", "res.json", "read", "fx", "fx://bin/1"], d)
        code = t.finish()
        out = t.plain()
        assert code == 2 and "fx://bin/1 is binary (application/octet-stream, 256 bytes): not written to a terminal" \
            in out and "\x00" not in out, (code, out)
        t = Term([exe, "--config", "res.json", "read", "fx", "fx://doc/1"], d)
        code = t.finish()
        assert code == 0 and "document 1" in t.plain(), t.plain()
        print("a binary resource refused on the terminal, a text one printed")
    print("5 passed, 0 failed")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
