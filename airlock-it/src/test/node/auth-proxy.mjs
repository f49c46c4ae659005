// A reverse proxy that adds Airlock's bearer token, for MCP tools that cannot send headers (the
// conformance suite). Usage: node auth-proxy.mjs <target base URL> <token>; prints "PORT <n>".
// A Host header naming the proxy (localhost or 127.0.0.1 with the proxy's port) is rewritten to
// name the target, as a reverse proxy in front of a local server would; any other Host (a DNS
// rebinding attempt) and any Origin pass through untouched, for the server to judge.
import http from "node:http";

const [target, token] = process.argv.slice(2);
const upstream = new URL(target);

const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const own = new RegExp(`^(localhost|127\\.0\\.0\\.1|\\[::1\\]):${server.address().port}$`, "i");
  const match = own.exec(req.headers.host ?? "");
  if (match) headers.host = `${match[1]}:${upstream.port}`;
  const forward = http.request({ hostname: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers },
    (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
  forward.on("error", (e) => {
    res.writeHead(502, { "content-type": "text/plain" });
    res.end(String(e));
  });
  req.pipe(forward);
});
server.listen(0, "127.0.0.1", () => console.log(`PORT ${server.address().port}`));
