"""A scripted MCP streamable-HTTP server for the transport's edge cases (contract §5, §9).

Run: python scripted_http.py  → prints the port on stdout, serves until killed.
Each scenario lives under its own path prefix, http://127.0.0.1:PORT/<scenario>/mcp:
  json      plain JSON replies, sessions, echo + elicit (elicit needs SSE: here it is refused)
  sse       SSE replies; `elicit` sends elicitation/create on the call's stream and waits for
            the client's answer POST before sending the result on the same stream
  expire    like json, but the first session expires after its first tools/call (404 after)
  expireonce  the first session expires after its first call; later ones do not
  resume    tools/call answers SSE with only a priming event (id, retry: 100) and closes; the
            result is served on GET with Last-Event-ID
  legacy    POST → 405; GET → legacy SSE stream with an `endpoint` event
  legacyevil  like legacy, but the endpoint is on another origin (must be refused)
  stall     tools/call answers SSE headers and then nothing
  error500  tools/call → HTTP 500 "boom"
  notjson   tools/call → 200 application/json "this is not json"
  reset     tools/call answers SSE headers and half an event, then resets the connection (RST)
  resetjson tools/call answers a JSON reply (Content-Length set) with half its body, then resets
  drip      tools/call answers a JSON reply (Content-Length set) one byte every 200 ms
  error503  tools/call → HTTP 503 with a text body and Retry-After
  badsse    tools/call answers text/event-stream with binary garbage, then closes
  huge      tools/call answers a 100 MiB application/json body, streamed in 1 MiB writes
  hugesse   tools/call answers SSE with one 100 MiB event, streamed in 1 MiB writes
  redirect  tools/call (POST) → 302 to the same URL; GET there → 302 to itself again
  resumeempty  like resume (retry: 100), but the first two resumed GETs close without any event
  getclose  like json, but the standalone GET stream is closed cleanly right after opening
  getclose0 the same, with `retry: 0` in the stream
  xredirect every POST → 307 to the same path on another origin (localhost instead of 127.0.0.1)
  samehop   every POST → 307 to /json/mcp on the same origin
  echo401   every POST → 401 whose body echoes the request's headers
  modern400 initialize → 400 with a JSON-RPC -32022 body (a 2026-07-28-only server); GET → 405
  floodask  `elicit` as in sse, but 3000 notifications follow the question before the answer
  call401   like json, but tools/call → 401 "denied" (initialize and tools/list are served)
  dropidle  like json, but every tools/call reply (Content-Length, no `Connection: close`) is
            followed by closing the connection: a kept-alive connection the client reuses is dead
GET /_log returns every request seen (method, path, headers, body) as JSON; POST /_reset clears it.
"""
import io
import json
import queue
import socket
import struct
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = []
LOG_LOCK = threading.Lock()
SESSIONS = {}  # session id -> {"scenario":…, "expired": bool}
ANSWERS = {}  # (session, server request id) -> queue of the client's answer
LEGACY = {}  # legacy session id -> queue of outbound messages
TOOLS = [
    {"name": "echo", "description": "echo", "inputSchema": {"type": "object"}},
    {"name": "elicit", "description": "asks a question", "inputSchema": {"type": "object"}},
]


def result(rid, res):
    return {"jsonrpc": "2.0", "id": rid, "result": res}


def text(t):
    return {"content": [{"type": "text", "text": t}]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def record(self, body):
        with LOG_LOCK:
            LOG.append({"method": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body,
                        "peer": self.client_address[1]})

    def send(self, code, body=b"", ctype="application/json", headers=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def sse_start(self, headers=None):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.close_connection = True

    def sse_event(self, data, eid=None, event=None):
        out = ""
        if event:
            out += f"event: {event}\n"
        if eid:
            out += f"id: {eid}\n"
        out += f"data: {json.dumps(data) if not isinstance(data, str) else data}\n\n"
        self.wfile.write(out.encode())
        self.wfile.flush()

    def abort(self):
        """Reset the connection (SO_LINGER 0: RST instead of FIN) and end the handler quietly."""
        try:
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass
        self.wfile = io.BytesIO()  # finish() flushes this instead of the dead socket
        self.close_connection = True

    def stream_body(self, head, tail, total, ctype):
        """`head`, filler `x` bytes, `tail`: `total` bytes in all, written 1 MiB at a time until
        the client goes away."""
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(total))
        self.end_headers()
        self.close_connection = True
        chunk = b"x" * (1 << 20)
        left = total - len(head) - len(tail)
        try:
            self.wfile.write(head)
            while left > 0:
                n = min(left, len(chunk))
                self.wfile.write(chunk[:n])
                left -= n
            self.wfile.write(tail)
            self.wfile.flush()
        except OSError:
            self.wfile = io.BytesIO()

    def scenario(self):
        parts = self.path.split("/")
        return parts[1] if len(parts) > 1 else ""

    # ------------------------------------------------------------------ GET
    def do_GET(self):
        self.record(None)
        if self.path == "/_log":
            with LOG_LOCK:
                body = json.dumps(LOG).encode()
            return self.send(200, body)
        sc = self.scenario()
        if sc == "legacyevil":  # an endpoint on another origin: headers must not follow it
            self.sse_start()
            self.sse_event("http://elsewhere.invalid/steal", event="endpoint")
            threading.Event().wait(5)
            return
        if sc == "resume":
            last = self.headers.get("Last-Event-ID")
            pending = RESUME.get(last)
            if not pending:
                return self.send(405)
            self.sse_start()
            self.sse_event(pending, eid="ev-2")
            return
        if sc == "redirect":
            return self.send(302, headers={"Location": self.path})
        if sc in ("getclose", "getclose0"):
            self.sse_start()
            self.wfile.write(b"id: g\n" + (b"retry: 0\n" if sc == "getclose0" else b"") + b"data: \n\n")
            self.wfile.flush()
            return
        if sc == "resumeempty":
            last = self.headers.get("Last-Event-ID")
            pending = RESUME.get(last)
            if not pending:
                return self.send(405)
            EMPTY_GETS[last] = EMPTY_GETS.get(last, 0) + 1
            self.sse_start()
            if EMPTY_GETS[last] > 2:
                self.sse_event(pending, eid="r-2")
            return
        if sc == "legacy":
            sid = uuid.uuid4().hex
            q = queue.Queue()
            LEGACY[sid] = q
            self.sse_start()
            self.sse_event(f"/legacy/messages?sid={sid}", event="endpoint")
            while True:
                msg = q.get()
                if msg is None:
                    return
                self.sse_event(msg, event="message")
        return self.send(405)

    def do_DELETE(self):
        self.record(None)
        sid = self.headers.get("Mcp-Session-Id")
        SESSIONS.pop(sid, None)
        self.send(200)

    # ------------------------------------------------------------------ POST
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n).decode()
        self.record(raw)
        if self.path == "/_reset":
            with LOG_LOCK:
                LOG.clear()
            return self.send(200)
        sc = self.scenario()
        if sc == "legacy":
            return self.legacy_post(raw)
        if sc == "legacyevil":
            return self.send(405)
        if sc == "xredirect":
            port = self.server.server_address[1]
            return self.send(307, headers={"Location": "http://localhost:%d/xredirect-target/mcp" % port})
        if sc == "samehop":
            return self.send(307, headers={"Location": "/json/mcp"})
        if sc == "echo401":
            echoed = json.dumps({k.lower(): v for k, v in self.headers.items()}).encode()
            return self.send(401, echoed)
        msg = json.loads(raw)
        method, rid = msg.get("method"), msg.get("id")
        if method == "initialize":
            if sc == "legacy":
                return self.send(405)
            if sc == "modern400":
                err = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32022, "message": "Unsupported protocol version: 2025-11-25", "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"}}}
                return self.send(400, json.dumps(err).encode())
            sid = uuid.uuid4().hex
            SESSIONS[sid] = {"scenario": sc, "expired": False}
            res = result(rid, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "scripted", "version": "1"}})
            return self.send(200, json.dumps(res).encode(), headers={"Mcp-Session-Id": sid})
        sid = self.headers.get("Mcp-Session-Id")
        if sid not in SESSIONS or SESSIONS[sid]["expired"]:
            return self.send(404, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}')
        if method is None:  # a response (elicitation answer) or junk
            q = ANSWERS.get((sid, rid))
            if q:
                q.put(msg)
            return self.send(202)
        if rid is None:  # notification
            return self.send(202)
        if method == "tools/list":
            return self.send(200, json.dumps(result(rid, {"tools": TOOLS})).encode())
        if method != "tools/call":
            return self.send(200, json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}).encode())
        name = msg["params"]["name"]
        args = msg["params"].get("arguments") or {}
        if sc == "expire":
            SESSIONS[sid]["expired"] = True  # the next request with this session gets 404
            return self.send(200, json.dumps(result(rid, text(f"echo: {args.get('text')}"))).encode())
        if sc == "expireonce":
            # the first session expires after its first call (slowly, so that calls made at the
            # same time all meet the 404); later sessions live on
            if not EXPIRED_ONCE:
                EXPIRED_ONCE.append(sid)
                threading.Event().wait(0.3)
                SESSIONS[sid]["expired"] = True
            return self.send(200, json.dumps(result(rid, text(f"echo: {args.get('text')}"))).encode())
        if sc == "call401":
            return self.send(401, b"denied", ctype="text/plain")
        if sc == "dropidle":
            self.send(200, json.dumps(result(rid, text(f"echo: {args.get('text')}"))).encode())
            self.wfile.flush()
            self.close_connection = True
            return
        if sc == "error500":
            return self.send(500, b"boom", ctype="text/plain")
        if sc == "notjson":
            return self.send(200, b"this is not json")
        if sc == "error503":
            return self.send(503, b"overloaded, try again later", ctype="text/plain", headers={"Retry-After": "1"})
        if sc == "redirect":
            return self.send(302, headers={"Location": self.path})
        if sc == "reset":
            self.sse_start()
            self.wfile.write(b'data: {"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"te' % rid)
            self.wfile.flush()
            time.sleep(0.1)
            return self.abort()
        if sc == "resetjson":
            body = json.dumps(result(rid, text("never whole"))).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            time.sleep(0.1)
            return self.abort()
        if sc == "drip":
            body = json.dumps(result(rid, text("dripped"))).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.close_connection = True
            try:
                for i in range(len(body)):
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                self.wfile = io.BytesIO()
            return
        if sc == "badsse":
            self.sse_start()
            self.wfile.write(b"\xff\xfe\x00garbage\x89PNG\r\n\x1a\n" + bytes(range(256)) * 16 + b"\n\ndata: \xc3\x28\xa0\xa1\n\n")
            self.wfile.flush()
            return
        if sc == "huge":
            head = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' % rid
            return self.stream_body(head, b'"}]}}', 100 << 20, "application/json")
        if sc == "hugesse":
            head = b'data: {"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' % rid
            return self.stream_body(head, b'"}]}}\n\n', 100 << 20, "text/event-stream")
        if sc == "stall":
            self.sse_start()
            self.wfile.write(b": waiting\n\n")
            self.wfile.flush()
            threading.Event().wait(30)
            return
        if sc == "resumeempty":
            RESUME["r-1"] = result(rid, text(f"resumed: {args.get('text')}"))
            self.sse_start()
            self.wfile.write(b"id: r-1\nretry: 100\ndata: \n\n")
            self.wfile.flush()
            return
        if sc == "resume":
            RESUME["ev-1"] = result(rid, text(f"resumed: {args.get('text')}"))
            self.sse_start()
            self.wfile.write(b"id: ev-1\nretry: 100\ndata: \n\n")
            self.wfile.flush()
            return
        if name == "echo":
            if args.get("delay_ms"):  # an echo that stays in flight a while
                threading.Event().wait(args["delay_ms"] / 1000.0)
            body = result(rid, text(f"echo: {args.get('text')}"))
            if sc == "sse":
                self.sse_start()
                return self.sse_event(body, eid="e1")
            return self.send(200, json.dumps(body).encode())
        if name == "elicit":
            if sc not in ("sse", "floodask"):
                return self.send(200, json.dumps(result(rid, {"content": [{"type": "text", "text": "no back-channel"}], "isError": True})).encode())
            self.sse_start()
            q = queue.Queue()
            ANSWERS[(sid, 0)] = q
            self.sse_event({"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer", "default": 7}}, "required": ["name"]}}})
            if sc == "floodask":
                note = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood"}}\n\n'
                self.wfile.write(note * 3000)
                self.wfile.flush()
            try:
                answer = q.get(timeout=20)
            except queue.Empty:
                answer = {"error": "no answer"}
            ANSWERS.pop((sid, 0), None)
            self.sse_event(result(rid, text(json.dumps(answer.get("result", answer)))))
            return
        return self.send(200, json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Unknown tool"}}).encode())

    def legacy_post(self, raw):
        if not self.path.startswith("/legacy/messages"):
            return self.send(405)
        sid = self.path.split("sid=")[-1]
        q = LEGACY.get(sid)
        if q is None:
            return self.send(404)
        msg = json.loads(raw)
        self.send(202, b"Accepted", ctype="text/plain")
        method, rid = msg.get("method"), msg.get("id")
        if rid is None or method is None:
            return
        if method == "initialize":
            q.put(result(rid, {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}}, "serverInfo": {"name": "legacy", "version": "1"}}))
        elif method == "tools/list":
            q.put(result(rid, {"tools": TOOLS[:1]}))
        elif method == "tools/call":
            q.put(result(rid, text(f"legacy echo: {msg['params'].get('arguments', {}).get('text')}")))


RESUME = {}
EMPTY_GETS = {}  # Last-Event-ID -> resumed GETs seen (resumeempty)
EXPIRED_ONCE = []

class TLSServer(ThreadingHTTPServer):
    """HTTPS: the TLS handshake runs on the request's thread, so a client that fails it (an
    untrusted certificate, no client certificate) does not hold up the others."""
    ssl_context = None

    def finish_request(self, request, client_address):
        try:
            request = self.ssl_context.wrap_socket(request, server_side=True)
        except (OSError, ValueError):
            return
        super().finish_request(request, client_address)


if __name__ == "__main__":
    # Options: --tls CERT KEY (serve HTTPS), --client-ca CA (require a client certificate).
    argv = sys.argv[1:]
    cls = ThreadingHTTPServer
    if "--tls" in argv:
        import ssl
        i = argv.index("--tls")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(argv[i + 1], argv[i + 2])
        if "--client-ca" in argv:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(argv[argv.index("--client-ca") + 1])
        cls = TLSServer
        cls.ssl_context = ctx
    srv = cls(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()
