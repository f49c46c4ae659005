// E2B's own SDK (the `e2b` package from npm, unchanged) driving Airlock's E2B door through scenarios.
// It reads E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY from the environment, as it does anywhere.
// Arguments: the scenarios to run. Prints one JSON object {scenario: result | {error}} on stdout.
import { Sandbox, CommandExitError, NotFoundError, AuthenticationError, SandboxError } from "e2b";
import { Sandbox as CodeInterpreter } from "@e2b/code-interpreter";

const OPTS = { timeoutMs: 300_000, requestTimeoutMs: 120_000 };

// What an error is, by the SDK's classes: what E2B code catches.
function kind(e) {
  for (const [name, cls] of Object.entries({ CommandExitError, NotFoundError, AuthenticationError, SandboxError })) {
    if (e instanceof cls) return name;
  }
  return e?.constructor?.name ?? typeof e;
}

async function failure(promise) {
  try {
    return { resolved: await promise };
  } catch (e) {
    return { kind: kind(e), message: String(e?.message ?? e), stderr: e?.stderr, exitCode: e?.exitCode };
  }
}

const scenarios = {
  // create with metadata, read it back, find it by its metadata, set its timeout, kill it
  async lifecycle() {
    const sbx = await Sandbox.create({ ...OPTS, metadata: { suite: "e2b-door", run: String(process.pid) } });
    const info = await sbx.getInfo();
    const listed = await Sandbox.list({ query: { metadata: { suite: "e2b-door", run: String(process.pid) } } }).nextItems();
    const before = (await sbx.getInfo()).endAt.getTime();
    await sbx.setTimeout(600_000);
    const after = (await sbx.getInfo()).endAt.getTime();
    const running = await sbx.isRunning();
    await sbx.commands.run("python3 -c 'sum(range(3_000_000))'");
    const metrics = (await sbx.getMetrics()).map((m) => ({ ...m, timestamp: m.timestamp.getTime() }));
    const killed = await sbx.kill();
    const listedAfter = await Sandbox.list({ query: { metadata: { suite: "e2b-door", run: String(process.pid) } } }).nextItems();
    return {
      sandboxId: sbx.sandboxId, templateId: info.templateId, metadata: info.metadata, state: info.state,
      listed: listed.map((s) => s.sandboxId), extendedBySeconds: Math.round((after - before) / 1000), running, metrics, killed,
      listedAfter: listedAfter.map((s) => s.sandboxId),
    };
  },

  // commands: streamed stdout, envs, cwd, a failing command, a background one listed and killed
  async commands() {
    const sbx = await Sandbox.create(OPTS);
    try {
      const chunks = [];
      const streamed = await sbx.commands.run("for i in 1 2 3; do echo line $i; sleep 0.3; done", { onStdout: (d) => chunks.push(d) });
      const env = await sbx.commands.run("echo $GREETING from $(pwd) as $HOME", { envs: { GREETING: "hello" }, cwd: "/tmp" });
      const home = await sbx.commands.run("pwd");
      // /home/user is writable and is /workspace under E2B's name, for the shell and for the file API alike
      const viaHome = await sbx.commands.run("echo written-at-home > /home/user/h.txt && cat /workspace/h.txt && echo $HOME");
      const homeFile = await sbx.files.read("/home/user/h.txt");
      const failed = await failure(sbx.commands.run("echo oops >&2; exit 3"));
      const later = await sbx.commands.run("sleep 1; echo later", { background: true });
      await later.disconnect();
      const reconnected = await (await sbx.commands.connect(later.pid)).wait();
      const background = await sbx.commands.run("sleep 600", { background: true });
      const listed = (await sbx.commands.list()).map((p) => p.pid);
      const killed = await sbx.commands.kill(background.pid);
      const listedAfter = (await sbx.commands.list()).map((p) => p.pid);
      return {
        chunks, stdout: streamed.stdout, exitCode: streamed.exitCode, env: env.stdout, home: home.stdout, viaHome: viaHome.stdout, homeFile, failed,
        backgroundPid: background.pid, listed, killed, listedAfter, reconnected: reconnected.stdout,
      };
    } finally {
      await sbx.kill();
    }
  },

  // a PTY: output streamed, input sent, resized; a command's stdin fed, then closed; one without stdin refuses input
  async terminal() {
    const sbx = await Sandbox.create(OPTS);
    try {
      let out = "";
      const decoder = new TextDecoder();
      const pty = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += decoder.decode(d, { stream: true }); } });
      await sbx.pty.resize(pty.pid, { cols: 100, rows: 30 });
      await sbx.pty.sendInput(pty.pid, new TextEncoder().encode("stty size; echo typed-$((6*7)); exit 5\n"));
      const ended = await failure(pty.wait());
      const cat = await sbx.commands.run("cat", { background: true, stdin: true });
      await sbx.commands.sendStdin(cat.pid, "fed through stdin\n");
      await sbx.commands.closeStdin(cat.pid);
      const fed = await cat.wait();
      const sleeper = await sbx.commands.run("sleep 60", { background: true });
      const refused = await failure(sbx.commands.sendStdin(sleeper.pid, "x"));
      await sbx.commands.kill(sleeper.pid);
      return { out, ptyExit: ended.exitCode, fed: fed.stdout, fedExit: fed.exitCode, refused };
    } finally {
      await sbx.kill();
    }
  },

  // files: text and binary, list, exists, makeDir, rename, remove, a missing file
  async files() {
    const sbx = await Sandbox.create(OPTS);
    try {
      const bytes = new Uint8Array(256).map((_, i) => i);
      const written = await sbx.files.write("notes/hello.txt", "hello from e2b\n");
      await sbx.files.write("/tmp/bytes.bin", bytes);
      const text = await sbx.files.read("notes/hello.txt");
      const back = await sbx.files.read("/tmp/bytes.bin", { format: "bytes" });
      const made = await sbx.files.makeDir("notes/sub");
      const madeAgain = await sbx.files.makeDir("notes/sub");
      const listing = (await sbx.files.list("notes")).map((e) => ({ name: e.name, type: e.type, size: e.size }));
      const moved = await sbx.files.rename("notes/hello.txt", "notes/sub/renamed.txt");
      const existsOld = await sbx.files.exists("notes/hello.txt");
      const existsNew = await sbx.files.exists("notes/sub/renamed.txt");
      const seenByShell = (await sbx.commands.run("cat notes/sub/renamed.txt")).stdout;
      await sbx.files.remove("notes/sub");
      const existsAfterRemove = await sbx.files.exists("notes/sub");
      const missing = await failure(sbx.files.read("no/such/file.txt"));
      const several = (await sbx.files.write([{ path: "many/a.txt", data: "A" }, { path: "/tmp/b.txt", data: "B" }])).map((e) => e.path);
      const both = (await sbx.commands.run("cat many/a.txt /tmp/b.txt")).stdout;
      return {
        writtenPath: written.path, text, bytesEqual: back.length === 256 && back.every((b, i) => b === i), made, madeAgain,
        listing, movedPath: moved.path, existsOld, existsNew, seenByShell, existsAfterRemove, missing, several, both,
      };
    } finally {
      await sbx.kill();
    }
  },

  // no network unless the profile allows it
  async network() {
    const sbx = await Sandbox.create(OPTS);
    try {
      const r = await failure(sbx.commands.run("python3 -c \"import urllib.request; urllib.request.urlopen('http://example.com', timeout=5)\""));
      return r;
    } finally {
      await sbx.kill();
    }
  },

  // pause, then connect: the same sandbox, its files kept
  async pauseAndConnect() {
    const sbx = await Sandbox.create(OPTS);
    try {
      await sbx.files.write("kept.txt", "still here");
      const endBefore = (await sbx.getInfo()).endAt.getTime();
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const paused = await sbx.pause();
      const stateWhilePaused = (await Sandbox.getInfo(sbx.sandboxId)).state;
      const again = await Sandbox.connect(sbx.sandboxId, OPTS);
      const endAfter = (await again.getInfo()).endAt.getTime();
      const state = (await again.getInfo()).state;
      const kept = await again.files.read("kept.txt");
      const echo = (await again.commands.run("echo resumed")).stdout;
      return { paused, stateWhilePaused, sameId: again.sandboxId === sbx.sandboxId, state, kept, echo, lengthenedBy: endAfter - endBefore };
    } finally {
      await sbx.kill();
    }
  },

  // pause on gVisor (template 'strong', a gVisor profile): to disk, then connect: a process counting before goes on counting;
  // paused again while a background command runs: frozen in memory instead, and connect resumes it
  async pauseToDiskAndConnect() {
    const sbx = await Sandbox.create("strong", OPTS);
    try {
      await sbx.commands.run("nohup sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/n.new; mv /tmp/n.new /tmp/n; sleep 0.1; done' >/dev/null 2>&1 &");
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const before = Number((await sbx.files.read("/tmp/n")).trim());
      const paused = await sbx.pause();
      const stateWhilePaused = (await Sandbox.getInfo(sbx.sandboxId)).state;
      const again = await Sandbox.connect(sbx.sandboxId, OPTS);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const after = Number((await again.files.read("/tmp/n")).trim());
      await again.commands.run("sleep 600", { background: true });
      const pausedWithACommand = await again.pause();
      const resumed = await Sandbox.connect(sbx.sandboxId, OPTS);
      const echo = (await resumed.commands.run("echo resumed")).stdout;
      return { sandboxId: sbx.sandboxId, paused, stateWhilePaused, before, after, pausedWithACommand, echo };
    } finally {
      await sbx.kill();
    }
  },

  // fork: two sandboxes from the files of a running one, each its own
  async fork() {
    const sbx = await Sandbox.create({ ...OPTS, metadata: { role: "parent" } });
    const forks = [];
    try {
      await sbx.files.write("state.txt", "before the fork");
      const results = [];
      for (const f of await sbx.fork({ count: 2, timeoutMs: 120_000 })) {
        if (f instanceof Error) {
          results.push({ error: String(f) });
          continue;
        }
        forks.push(f);
        const seen = await f.files.read("state.txt");
        await f.files.write("state.txt", "changed in " + f.sandboxId);
        results.push({ id: f.sandboxId, seen, metadata: (await f.getInfo()).metadata, echo: (await f.commands.run("echo forked")).stdout });
      }
      return { parent: sbx.sandboxId, results, parentAfter: await sbx.files.read("state.txt") };
    } finally {
      for (const f of forks) await f.kill();
      await sbx.kill();
    }
  },

  // the code interpreter SDK: state kept across cells, stdout, an exception, a chart, a table, contexts
  async interpreter() {
    const sbx = await CodeInterpreter.create(OPTS);
    try {
      await sbx.runCode("x = 41");
      const sum = await sbx.runCode("x + 1");
      const printed = await sbx.runCode("print('hello', flush=True)");
      const failed = await sbx.runCode("1 / 0");
      const chart = await sbx.runCode("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [4, 1, 9])\nplt.show()");
      const table = await sbx.runCode("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]})");
      const home = await sbx.runCode("import os\nopen(os.path.expanduser('~/from-cell.txt'), 'w').write('cell')\nos.path.expanduser('~')");
      const homeFile = await sbx.files.read("from-cell.txt");
      const context = await sbx.createCodeContext();
      const inContext = await sbx.runCode("y = 5\ny * 2", { context });
      const defaultHasY = await sbx.runCode("'y' in dir()");
      const contexts = (await sbx.listCodeContexts()).map((c) => c.id);
      await sbx.removeCodeContext(context);
      const contextsAfter = (await sbx.listCodeContexts()).map((c) => c.id);
      return {
        sum: sum.text, sumCount: sum.executionCount, printed: printed.logs.stdout, failed: failed.error && { name: failed.error.name,
          value: failed.error.value, traceback: failed.error.traceback },
        chartFormats: chart.results.map((r) => r.formats()), pngBytes: chart.results[0]?.png ? Buffer.from(chart.results[0].png, "base64").length : 0,
        pngMagic: chart.results[0]?.png ? Buffer.from(chart.results[0].png, "base64").subarray(1, 4).toString() : null,
        tableHtml: table.results[0]?.html ?? null, inContext: inContext.text, defaultHasY: defaultHasY.text,
        contextId: context.id, contexts, contextsAfter, home: home.text, homeFile, contextCwd: context.cwd,
      };
    } finally {
      await sbx.kill();
    }
  },

  // a wrong key is the SDK's AuthenticationError
  async wrongKey() {
    return failure(Sandbox.create({ ...OPTS, apiKey: "e2b_" + "0".repeat(40) }));
  },

  // a sandbox another node of a cluster holds (E2B_CLUSTER_SANDBOX), through this node's door: connected to, a command
  // streamed, a file written and read, found in the listing, killed
  async elsewhere() {
    const id = process.env.E2B_CLUSTER_SANDBOX;
    const sbx = await Sandbox.connect(id, OPTS);
    const chunks = [];
    const run = await sbx.commands.run("echo first; sleep 1; echo second", { onStdout: (d) => chunks.push(d) });
    await sbx.files.write("/home/user/through.txt", "written through another node\n");
    const read = await sbx.files.read("/home/user/through.txt");
    const seen = await sbx.commands.run("cat /workspace/through.txt");
    const listed = (await Sandbox.list().nextItems()).map((s) => s.sandboxId);
    const killed = await sbx.kill();
    const listedAfter = (await Sandbox.list().nextItems()).map((s) => s.sandboxId);
    return { stdout: run.stdout, chunks, read, seen: seen.stdout, listed, killed, listedAfter };
  },

  // a template that is none of the client's profiles: a clear error
  async unknownTemplate() {
    return failure(Sandbox.create("no-such-template", OPTS));
  },
};

const results = {};
for (const name of process.argv.slice(2)) {
  try {
    results[name] = await scenarios[name]();
  } catch (e) {
    results[name] = { error: String(e && e.stack ? e.stack : e) };
  }
}
process.stdout.write(JSON.stringify(results) + "\n");
