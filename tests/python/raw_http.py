"""A raw-socket MCP server over HTTP/1.1 for the direct path's edge cases.

In-process (a thread per connection), so a test scripts exactly the bytes a hostile or broken
server sends. The MCP handshake of the legacy era (initialize with a session, notifications,
the standalone GET refused with 405, tools/list) is served as a well-behaved server would;
a test replaces what it needs through hooks:

  on_call(conn, req)          a tools/call (req.first: the body's first bytes already read,
                              req.length: its Content-Length); the hook reads the rest itself
  on_notification(conn, req)  a notification (its body already read)
  on_get(conn, req)           a GET (the standalone stream, or a resume with Last-Event-ID)
  on_request(conn, req)       any other POST (its body not read yet), instead of the MCP defaults

A hook returns True to keep serving the connection, False to stop (the connection is then
closed). Every request is logged in `server.log` as a dict: conn (a number per connection),
http (method), rpc (JSON-RPC method, when the body has one), headers (lower-case names).
"""

import json
import re
import socket
import ssl
import struct
import threading
import time


class Request:
    def __init__(self, method, path, headers, first, length, conn_id):
        self.method = method
        self.path = path
        self.headers = headers
        self.first = first
        self.length = length
        self.conn_id = conn_id
        m = re.search(rb'"method":"([^"]+)"', first)
        self.rpc = m.group(1).decode() if m else None
        m = re.match(rb'\{"jsonrpc":"2.0","id":(\d+)', first)
        self.id = int(m.group(1)) if m else None


class Conn:
    """One accepted connection: buffered reads, raw writes."""

    def __init__(self, sock, conn_id, stopped):
        self.sock = sock
        self.id = conn_id
        self.buf = b""
        self.stopped = stopped

    def hold(self, seconds):
        """Keeps the connection open (and the client waiting) for `seconds`, or until the
        server is closed at the end of its test."""
        self.stopped.wait(seconds)

    def recv_some(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        self.buf += data

    def read_head(self):
        while b"\r\n\r\n" not in self.buf:
            self.recv_some()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        return method, path, headers

    def read_exact(self, n):
        while len(self.buf) < n:
            self.recv_some()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_upto(self, n):
        """At most n bytes: what is buffered, else one recv."""
        if not self.buf:
            self.recv_some()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def reset(self):
        """Closes with RST (SO_LINGER 0) instead of FIN."""
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.sock.close()
        except OSError:
            pass

    def close(self):
        """Closes with FIN (shut down first: another thread may be blocked reading it)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


def response(status, body=b"", ctype="application/json", extra=""):
    if isinstance(body, str):
        body = body.encode()
    return (("HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n" % (status, ctype, len(body), extra))
            .encode() + body)


def rpc_result(rid, result):
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": result})


def text_result(rid, text):
    return rpc_result(rid, {"content": [{"type": "text", "text": text}]})


TOOLS = [{"name": "echo", "description": "echo", "inputSchema": {"type": "object"}}]


class RawServer:
    def __init__(self, on_call=None, on_notification=None, on_get=None, on_request=None, tls=None):
        self.on_request = on_request
        self.on_call = on_call
        self.on_notification = on_notification
        self.on_get = on_get
        self.log = []
        self.lock = threading.Lock()
        self.conns = []
        self.next_conn = 0
        self.accepting = threading.Event()
        self.accepting.set()
        self.ctx = None
        if tls:
            self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.ctx.load_cert_chain(*tls)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        self.stopped = threading.Event()
        self.fill = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def url(self, path="/mcp"):
        return "%s://127.0.0.1:%d%s" % ("https" if self.ctx else "http", self.port, path)

    def _accept(self):
        while not self.closed:
            self.accepting.wait()
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.next_conn += 1
                cid = self.next_conn
            t = threading.Thread(target=self._serve, args=(sock, cid), daemon=True)
            with self.lock:
                self.threads.append(t)
            t.start()

    def calls(self, rpc="tools/call"):
        with self.lock:
            return [e for e in self.log if e["rpc"] == rpc]

    def requests(self, http):
        with self.lock:
            return [e for e in self.log if e["http"] == http]

    def blackhole(self):
        """Stops accepting, closes every connection, and fills the accept queue, so that a new
        connect hangs (its SYN goes unanswered)."""
        self.accepting.clear()
        self.listener.listen(0)
        with self.lock:
            for c in self.conns:
                c.close()
        fill = []
        for _ in range(16):
            s = socket.socket()
            s.settimeout(0.2)
            try:
                s.connect(("127.0.0.1", self.port))
                fill.append(s)
            except OSError:
                s.close()
                break
        self.fill = fill

    def _serve(self, sock, cid):
        if self.ctx:
            try:
                sock = self.ctx.wrap_socket(sock, server_side=True)
            except (OSError, ssl.SSLError):
                sock.close()
                return
        conn = Conn(sock, cid, self.stopped)
        with self.lock:
            self.conns.append(conn)
        try:
            while self._one(conn):
                pass
        except (EOFError, OSError, ssl.SSLError, ValueError):
            pass
        conn.close()

    def _one(self, conn):
        method, path, headers = conn.read_head()
        length = int(headers.get("content-length", "0"))
        first = conn.read_exact(min(length, 4096))
        req = Request(method, path, headers, first, length, conn.id)
        with self.lock:
            self.log.append({"conn": conn.id, "http": method, "rpc": req.rpc, "headers": headers})
        if method == "GET":
            if self.on_get:
                return self.on_get(conn, req)
            conn.send(response("405 Method Not Allowed"))
            return True
        if method == "DELETE":
            conn.send(response("200 OK"))
            return True
        if req.rpc == "tools/call" and self.on_call:
            return self.on_call(conn, req)
        if self.on_request:
            return self.on_request(conn, req)
        body = first + conn.read_exact(length - len(first))
        msg = json.loads(body)
        if "id" not in msg or "method" not in msg:
            if self.on_notification and "method" in msg:
                return self.on_notification(conn, req)
            conn.send(response("202 Accepted"))
            return True
        rid = msg["id"]
        if msg["method"] == "initialize":
            version = msg["params"].get("protocolVersion", "2025-11-25")
            out = rpc_result(rid, {"protocolVersion": version, "capabilities": {"tools": {}},
                                   "serverInfo": {"name": "raw", "version": "1"}})
            conn.send(response("200 OK", out, extra="Mcp-Session-Id: s1\r\n"))
        elif msg["method"] == "tools/list":
            conn.send(response("200 OK", rpc_result(rid, {"tools": TOOLS})))
        elif msg["method"] == "tools/call":
            conn.send(response("200 OK", text_result(rid, "echo")))
        else:
            conn.send(response("200 OK", rpc_result(rid, {})))
        return True

    def close(self):
        self.closed = True
        self.stopped.set()
        self.accepting.set()
        for s in self.fill:
            s.close()
        try:
            # A shutdown wakes the accept thread (a close alone does not).
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.listener.close()
        except OSError:
            pass
        with self.lock:
            for c in self.conns:
                c.close()
            threads = list(self.threads)
        # No thread outlives its test (later tests count the process's threads).
        for t in threads:
            t.join(timeout=10)


def drain_for(conn, req, seconds):
    """Reads (and drops) the rest of a request's body for at most `seconds`."""
    left = req.length - len(req.first)
    end = time.time() + seconds
    conn.sock.settimeout(0.1)
    while left > 0 and time.time() < end and not conn.stopped.is_set():
        try:
            left -= len(conn.read_upto(min(left, 65536)))
        except socket.timeout:
            continue
    conn.sock.settimeout(None)
    return left == 0
