"""A minimal HTTP CONNECT proxy for the TLS/proxy tests: tunnels bytes to the requested
127.0.0.1 port and records each CONNECT target. Prints its port on stdout; GET /_log (sent to
the proxy directly) returns the targets as a JSON array."""
import json
import select
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TARGETS = []


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        body = json.dumps(TARGETS).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_CONNECT(self):
        host, _, port = self.path.rpartition(":")
        TARGETS.append(self.path)
        if host not in ("127.0.0.1", "localhost"):
            self.send_response(403)  # loopback only
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", int(port)), timeout=5)
        except OSError:
            self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        a, b = self.connection, upstream
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 30)
                if not ready:
                    break
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    (b if s is a else a).sendall(data)
        except OSError:
            pass
        finally:
            upstream.close()
            self.close_connection = True


if __name__ == "__main__":
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()
