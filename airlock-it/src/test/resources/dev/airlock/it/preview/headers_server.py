# Echoes the request it got (headers, path, body) and plants a cookie: what PreviewPortsTest checks the proxy forwards and drops.
import http.server
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, body):
        if self.path.startswith("/slow"):
            time.sleep(15)
        text = "".join(f"{k}: {v}\n" for k, v in self.headers.items()) + "path=" + self.path + "\nbody=" + body + "\n"
        data = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Set-Cookie", "planted=1; Path=/")
        self.send_header("Clear-Site-Data", '"cookies", "storage"')
        self.send_header("Service-Worker-Allowed", "/")
        self.send_header("X-From-Sandbox", "yes")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.answer("")

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.answer(self.rfile.read(n).decode())

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 64


Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
