// A real MCP client (the official TypeScript SDK) driving Airlock's MCP server through scenarios.
// Transport from the environment:
//   MCP_TRANSPORT=stdio  MCP_COMMAND='["java", "-cp", "...", "dev.airlock.cli.AirlockCli", "mcp", ...]'
//   MCP_TRANSPORT=http   MCP_URL=http://127.0.0.1:PORT/mcp  MCP_TOKEN=alk_...
// MCP_ELICIT=accept|decline|refuse|silent declares the elicitation capability and answers each
// elicitation request: accept with approve=true, decline, accept with approve=false, or never.
// Arguments: the scenarios to run. Prints one JSON object {scenario: result | {error}} on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ElicitRequestSchema, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { execFileSync } from "node:child_process";

const transportKind = process.env.MCP_TRANSPORT;

async function connect({ token = process.env.MCP_TOKEN } = {}) {
  const elicit = process.env.MCP_ELICIT;
  const client = new Client({ name: "airlock-test-client", version: "1.0.0" }, elicit ? { capabilities: { elicitation: {} } } : {});
  const logs = [];
  const elicitations = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicitations.push({ message: request.params.message, schema: request.params.requestedSchema });
      switch (elicit) {
        case "accept": return { action: "accept", content: { approve: true } };
        case "refuse": return { action: "accept", content: { approve: false } };
        case "decline": return { action: "decline" };
        default: return new Promise(() => {}); // silent: the person never answers
      }
    });
  }
  let transport;
  if (transportKind === "stdio") {
    const [command, ...args] = JSON.parse(process.env.MCP_COMMAND);
    transport = new StdioClientTransport({ command, args, stderr: "inherit" });
  } else {
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), { requestInit: { headers } });
  }
  await client.connect(transport);
  await client.listTools(); // the client then checks structuredContent against each tool's outputSchema
  return { client, transport, logs, elicitations };
}

async function call(client, name, args, options = {}) {
  return client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 120000, ...options });
}

function summary(r) {
  return { isError: r.isError === true, structured: r.structuredContent ?? null, content: r.content.map(contentSummary) };
}

function contentSummary(c) {
  switch (c.type) {
    case "text": return { type: "text", text: c.text };
    case "image": {
      const bytes = Buffer.from(c.data, "base64");
      // a PNG's IHDR chunk holds its width and height at bytes 16 and 20
      return { type: "image", mimeType: c.mimeType, bytes: bytes.length, pngSignature: bytes.subarray(0, 8).toString("hex"),
        width: bytes.length >= 24 ? bytes.readUInt32BE(16) : null, height: bytes.length >= 24 ? bytes.readUInt32BE(20) : null };
    }
    case "resource": return { type: "resource", uri: c.resource.uri, mimeType: c.resource.mimeType, text: c.resource.text };
    default: return { type: c.type };
  }
}

function processRunning(pattern) {
  try {
    execFileSync("pgrep", ["-f", pattern], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

async function waitFor(condition, millis) {
  const deadline = Date.now() + millis;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return condition();
}

const PROGRAMS = {
  python: "print(6 * 7)",
  javascript: "console.log(6 * 7)",
  bash: "echo $((6 * 7))",
  sh: "echo $((6 * 7))",
  java: "public class Main { public static void main(String[] args) { System.out.println(6 * 7); } }",
};

// A 1x1 red PNG made by hand (no libraries in the sandbox needed).
const PNG_PROGRAM = `
import struct, zlib, os
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
png = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) \\
    + chunk(b"IDAT", zlib.compress(b"\\x00\\xff\\x00\\x00")) + chunk(b"IEND", b"")
os.makedirs("/workspace/output", exist_ok=True)
open("/workspace/output/dot.png", "wb").write(png)
open("/workspace/output/notes.txt", "w").write("a red dot\\n")
print("wrote", len(png), "bytes")
`;

const scenarios = {
  async listTools({ client }) {
    const { tools } = await client.listTools();
    return tools.map((t) => ({ name: t.name, description: t.description, hasOutputSchema: !!t.outputSchema,
      required: t.inputSchema.required ?? [] }));
  },

  async languages({ client }) {
    const out = {};
    for (const [language, code] of Object.entries(PROGRAMS)) {
      out[language] = summary(await call(client, "run_code", { language, code }));
    }
    return out;
  },

  async runWithInput({ client }) {
    return summary(await call(client, "run_code", {
      language: "python",
      code: "import sys; data = open('data/in.txt').read(); print(data.strip().upper(), sys.stdin.read().strip())",
      stdin: "from stdin", files: { "data/in.txt": "from a file" },
    }));
  },

  async interpreter({ client }) {
    const id = (await call(client, "sandbox_create", {})).structuredContent.sandboxId;
    const run = async (code, extra = {}) => summary(await call(client, "interpreter_run", { sandboxId: id, code, ...extra }));
    const steps = {};
    steps.set = await run("x = 41");
    steps.sum = await run("x + 1");
    steps.chart = await run("import matplotlib.pyplot as plt\nplt.figure(figsize=(3, 2), dpi=100)\nplt.plot([1, 2, 3])\nNone");
    steps.table = await run("import pandas as pd\npd.DataFrame({'city': ['Oslo', 'Lima'], 'temp': [4, 19]})");
    steps.loop = await run("while True: pass", { timeoutSeconds: 2 });
    steps.after = await run("x");
    steps.contexts = summary(await call(client, "interpreter_context", { sandboxId: id, action: "list" }));
    await call(client, "sandbox_destroy", { sandboxId: id });
    return steps;
  },

  async snapshotFork({ client }) {
    const steps = {};
    const id = (await call(client, "sandbox_create", {})).structuredContent.sandboxId;
    await call(client, "sandbox_write_file", { sandboxId: id, path: "plan.txt", content: "step 1 done\n" });
    steps.snapshot = summary(await call(client, "sandbox_snapshot", { sandboxId: id }));
    const snapshotId = steps.snapshot.structured.snapshotId;
    steps.fork = summary(await call(client, "sandbox_fork", { snapshotId, count: 2 }));
    const [a, b] = steps.fork.structured.sandboxes.map((s) => s.sandboxId);
    steps.readA = summary(await call(client, "sandbox_read_file", { sandboxId: a, path: "plan.txt" }));
    await call(client, "sandbox_write_file", { sandboxId: a, path: "plan.txt", content: "attempt A\n" });
    steps.readB = summary(await call(client, "sandbox_read_file", { sandboxId: b, path: "plan.txt" }));
    steps.readOriginal = summary(await call(client, "sandbox_read_file", { sandboxId: id, path: "plan.txt" }));
    steps.badCount = summary(await call(client, "sandbox_fork", { snapshotId, count: 40 }));
    for (const s of [id, a, b]) {
      await call(client, "sandbox_destroy", { sandboxId: s });
    }
    return steps;
  },

  async session({ client }) {
    const steps = {};
    const created = await call(client, "sandbox_create", { labels: { purpose: "test" } });
    steps.create = summary(created);
    const id = created.structuredContent.sandboxId;
    steps.write = summary(await call(client, "sandbox_write_file", { sandboxId: id, path: "data.txt", content: "hello sandbox\n" }));
    steps.exec = summary(await call(client, "sandbox_exec",
      { sandboxId: id, command: ["bash", "-c", "tr a-z A-Z < data.txt > out.txt && cat out.txt"] }));
    steps.execCode = summary(await call(client, "sandbox_exec", { sandboxId: id, language: "python", code: "print(open('out.txt').read().strip().lower())" }));
    steps.read = summary(await call(client, "sandbox_read_file", { sandboxId: id, path: "/workspace/out.txt" }));
    steps.listFiles = summary(await call(client, "sandbox_list_files", { sandboxId: id }));
    steps.list = summary(await call(client, "sandbox_list", {}));
    steps.destroy = summary(await call(client, "sandbox_destroy", { sandboxId: id }));
    steps.execAfterDestroy = summary(await call(client, "sandbox_exec", { sandboxId: id, command: ["true"] }));
    return steps;
  },

  async image({ client }) {
    return summary(await call(client, "run_code", { language: "python", code: PNG_PROGRAM }));
  },

  // a chart as a program makes one: pyplot on the default image, which has no display
  async chart({ client }) {
    return summary(await call(client, "run_code", { language: "python", code: [
      "import matplotlib.pyplot as plt",
      "plt.plot([1, 2, 3], [2, 4, 1])",
      "plt.savefig('/workspace/output/chart.png')",
      "print(plt.get_backend())"].join("\n") }));
  },

  async timeout({ client }) {
    return summary(await call(client, "run_code", { language: "python", code: "import time\nprint('started', flush=True)\ntime.sleep(60)", timeoutSeconds: 2 }));
  },

  async failure({ client }) {
    return summary(await call(client, "run_code", { language: "python", code: "import sys\nprint('bad input', file=sys.stderr)\nsys.exit(3)" }));
  },

  async badArguments({ client }) {
    return {
      unknownLanguage: summary(await call(client, "run_code", { language: "cobol", code: "DISPLAY 'HI'." })),
      unknownArgument: summary(await call(client, "run_code", { language: "python", code: "print(1)", network: true })),
      missingSandbox: summary(await call(client, "sandbox_exec", { sandboxId: "al-does-not-exist", command: ["true"] })),
      commandAndCode: summary(await call(client, "sandbox_exec", { sandboxId: "al-x", command: ["true"], language: "python", code: "1" })),
      unknownTool: await call(client, "sandbox_frobnicate", {}).then((r) => ({ result: summary(r) }), (e) => ({ rejected: String(e) })),
    };
  },

  async streaming({ client, logs }) {
    const progress = [];
    logs.length = 0;
    const r = await call(client, "run_code", {
      language: "python",
      code: "import sys, time\nfor i in range(3):\n    print('line', i, flush=True)\n    time.sleep(0.7)\nprint('oops', file=sys.stderr, flush=True)",
    }, { onprogress: (p) => progress.push(p) });
    return { result: summary(r), logs: [...logs], progress };
  },

  async abort({ client }) {
    const created = await call(client, "sandbox_create", {});
    const id = created.structuredContent.sandboxId;
    const marker = `sleep ${(600 + Math.random() * 100).toFixed(6)}`;
    const controller = new AbortController();
    const started = Date.now();
    const pending = call(client, "sandbox_exec", { sandboxId: id, command: marker.split(" "), timeoutSeconds: 600 },
      { signal: controller.signal }).then((r) => ({ resolved: summary(r) }), (e) => ({ rejected: String(e) }));
    const seenRunning = await waitFor(() => processRunning(marker), 30000);
    controller.abort("the test aborts it");
    const outcome = await pending;
    const gone = await waitFor(() => !processRunning(marker), 20000);
    const afterwards = summary(await call(client, "sandbox_exec", { sandboxId: id, command: ["echo", "still alive"] }));
    await call(client, "sandbox_destroy", { sandboxId: id });
    return { marker, seenRunning, outcome, goneAfterAbort: gone, millis: Date.now() - started, afterwards };
  },

  // HTTP only: the session's sandboxes end with the session, unless made with an explicit ttlSeconds.
  async sessionEnd({ client, transport }) {
    const bound = (await call(client, "sandbox_create", {})).structuredContent;
    const kept = (await call(client, "sandbox_create", { ttlSeconds: 600 })).structuredContent;
    await transport.terminateSession();
    await client.close();
    const other = await connect();
    const live = (await call(other.client, "sandbox_list", {})).structuredContent.sandboxes.map((s) => s.sandboxId);
    await call(other.client, "sandbox_destroy", { sandboxId: kept.sandboxId });
    await other.client.close();
    return { bound: bound.sandboxId, boundEndsWithSession: bound.endsWithSession, kept: kept.sandboxId,
      keptEndsWithSession: kept.endsWithSession, liveAfterSessionEnd: live };
  },

  // The tools this client is shown, by name.
  async toolNames({ client }) {
    return (await client.listTools()).tools.map((t) => t.name).sort();
  },

  // A tool this client may not be shown: what calling it anyway gives.
  async forbiddenRunCode({ client }) {
    try {
      return { result: summary(await call(client, "run_code", { language: "python", code: "print(1)" })) };
    } catch (e) {
      return { rejected: String(e) };
    }
  },

  // sandbox_create under a profile that needs approval: what the person was asked, and the outcome.
  async approvedCreate({ client, elicitations }) {
    const created = await call(client, "sandbox_create", {});
    const id = created.structuredContent?.sandboxId ?? null;
    if (id) await call(client, "sandbox_destroy", { sandboxId: id });
    return { result: summary(created), sandboxId: id, elicitations: [...elicitations] };
  },

  // HTTP only: no token, no service.
  async unauthenticated() {
    const response = await fetch(process.env.MCP_URL, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } } }),
    });
    let clientError = null;
    try {
      await connect({ token: "" });
    } catch (e) {
      clientError = String(e);
    }
    return { status: response.status, wwwAuthenticate: response.headers.get("www-authenticate"), body: await response.json(), clientError };
  },
};

const results = {};
let connection = null;
for (const name of process.argv.slice(2)) {
  try {
    if (name !== "unauthenticated" && connection === null) connection = await connect();
    results[name] = await scenarios[name](connection ?? {});
    if (name === "sessionEnd") connection = null;
  } catch (e) {
    results[name] = { error: String(e && e.stack ? e.stack : e) };
  }
}
if (connection) await connection.client.close();
process.stdout.write(JSON.stringify(results) + "\n");
