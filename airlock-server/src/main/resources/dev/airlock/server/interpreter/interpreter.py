# The interpreter bridge: one long-lived process per interpreter context, started by the Airlock
# server inside the sandbox (InterpreterContext.java). It starts an IPython kernel with
# jupyter_client's KernelManager (ipc sockets under its state directory: the sandbox needs no
# network), then reads one JSON request per line on stdin and writes JSON lines on stdout:
#
#   in:  {"id": N, "code": "...", "timeoutSeconds": T}   run a cell
#        {"interrupt": N}                                 interrupt cell N (KeyboardInterrupt)
#   out: {"type": "ready", "pid": P, "python": "3.11.2"}  the kernel answers
#        {"type": "failed", "message": "..."}             it could not start; the bridge exits
#        {"id": N, "type": "stream", "name": "stdout"|"stderr", "text": "..."}
#        {"id": N, "type": "result"|"display", "data": {MIME: value}}
#        {"id": N, "type": "error", "ename": "...", "evalue": "...", "traceback": ["..."]}
#        {"id": N, "type": "done", "status": "ok"|"error"|"interrupted"|"timeout"|"dead",
#         "executionCount": C, "truncated": bool, "message": "..."}
#
# The server's first line on stdin is a nonce; every line out carries it as "n", and the server drops
# a line without it. The bridge makes itself non-dumpable before anything else, so that the cell's
# code (the same user) can neither open its descriptors through /proc (its stdout above all) nor
# read its memory: it cannot learn the nonce nor write the bridge's lines.
#
# After "done" with status "dead" (the kernel died, or did not stop when interrupted and was killed)
# the bridge exits; the server restarts it on request. Every cell's outputs are bounded by argv[2]
# bytes in all (streams, MIME values and tracebacks); what is over is dropped and the cell is marked
# truncated. The server bounds what it reads again: nothing here is trusted, the code of the cell
# runs as the same user.
import ctypes
import json
import os
import queue
import re
import signal
import sys
import threading
import time

PR_SET_DUMPABLE = 4
UNDUMPABLE = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
NONCE = sys.stdin.readline().strip()
if not UNDUMPABLE:
    sys.stdout.write(json.dumps({"type": "failed", "message": "the bridge cannot make itself non-dumpable (prctl errno %d)"
                                 % ctypes.get_errno(), "n": NONCE}) + "\n")
    sys.exit(1)
STATE = sys.argv[1]
CELL_BUDGET = int(sys.argv[2])
GRACE_SECONDS = 10.0
KEPT_MIME = ("text/plain", "text/html", "text/markdown", "text/latex", "image/png", "image/jpeg", "image/svg+xml",
             "application/json")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

for name, sub in (("IPYTHONDIR", "ipython"), ("MPLCONFIGDIR", "matplotlib"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                  ("JUPYTER_DATA_DIR", "data"), ("JUPYTER_CONFIG_DIR", "config")):
    os.environ[name] = os.path.join(STATE, sub)
    os.makedirs(os.environ[name], exist_ok=True)
os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
# Every execution gets MPLBACKEND=Agg (no display); a kernel draws inline instead, which ipykernel
# chooses only where MPLBACKEND is unset.
os.environ.pop("MPLBACKEND", None)
# Debian's matplotlib reads /etc/matplotlibrc, which the system image (the host's /usr) lacks; the
# same file ships under /usr/share.
DEBIAN_RC = "/usr/share/matplotlib/mpl-data/matplotlibrc"
if not os.path.exists("/etc/matplotlibrc") and os.path.exists(DEBIAN_RC) and "MATPLOTLIBRC" not in os.environ:
    os.environ["MATPLOTLIBRC"] = DEBIAN_RC
# Nor has it /etc/fonts: a minimal fontconfig setup, so that font lookups neither fail nor complain.
if not os.path.exists("/etc/fonts/fonts.conf") and "FONTCONFIG_FILE" not in os.environ:
    fonts = os.path.join(STATE, "fonts.conf")
    with open(fonts, "w") as f:
        f.write("<?xml version=\"1.0\"?>\n<fontconfig><dir>/usr/share/fonts</dir><cachedir>%s</cachedir></fontconfig>\n"
                % os.path.join(STATE, "fontconfig"))
    os.environ["FONTCONFIG_FILE"] = fonts
# Figures come back at figsize x dpi pixels (Jupyter's default crops them to their content).
profile = os.path.join(os.environ["IPYTHONDIR"], "profile_default")
os.makedirs(profile, exist_ok=True)
with open(os.path.join(profile, "ipython_kernel_config.py"), "w") as f:
    f.write("c.InlineBackend.print_figure_kwargs = {'bbox_inches': None}\n")

# ipykernel forwards the output of forked children through a zmq pipe on tcp://127.0.0.1, and libzmq
# aborts when it resolves a TCP address in the sandbox (glibc asks a netlink socket, which the
# seccomp filter refuses). The kernel is started through this launcher, which moves that pipe onto
# an ipc socket beside the kernel's; nothing else of the kernel uses TCP with the ipc transport.
LAUNCHER = """
import os, zmq
from ipykernel import iostream
from zmq.eventloop.zmqstream import ZMQStream
PIPE = "ipc://" + os.environ["AIRLOCK_IOPUB_PIPE"]
def _setup_pipe_in(self):
    self._pipe_uuid = os.urandom(16)
    pipe_in = self.socket.context.socket(zmq.PULL)
    pipe_in.linger = 0
    pipe_in.bind(PIPE)
    self._pipe_in = ZMQStream(pipe_in, self.io_loop)
    self._pipe_in.on_recv(self._handle_pipe_msg)
def _setup_pipe_out(self):
    ctx = zmq.Context()
    pipe_out = ctx.socket(zmq.PUSH)
    pipe_out.linger = 3000
    pipe_out.connect(PIPE)
    return ctx, pipe_out
iostream.IOPubThread._setup_pipe_in = _setup_pipe_in
iostream.IOPubThread._setup_pipe_out = _setup_pipe_out
from ipykernel import kernelapp
kernelapp.launch_new_instance()
"""
os.environ["AIRLOCK_IOPUB_PIPE"] = os.path.join(STATE, "iopub-pipe")
spec = os.path.join(os.environ["JUPYTER_DATA_DIR"], "kernels", "airlock-python")
os.makedirs(spec, exist_ok=True)
with open(os.path.join(spec, "kernel.json"), "w") as f:
    json.dump({"argv": [sys.executable, "-c", LAUNCHER, "-f", "{connection_file}"], "display_name": "Python 3 (Airlock)",
               "language": "python"}, f)

_out = threading.Lock()


def emit(message):
    message["n"] = NONCE
    line = json.dumps(message, separators=(",", ":")) + "\n"
    with _out:
        sys.stdout.write(line)
        sys.stdout.flush()


class Cell:
    """One cell's outputs, kept within the budget."""

    def __init__(self, request):
        self.id = request["id"]
        self.code = request["code"]
        self.timeout = float(request.get("timeoutSeconds") or 30)
        self.left = CELL_BUDGET
        self.truncated = False
        self.interrupted = threading.Event()

    def send(self, message):
        message["id"] = self.id
        size = len(json.dumps(message))
        if size > self.left:
            self.truncated = True
            return
        self.left -= size
        emit(message)

    def stream(self, name, text):
        if self.left < 256 and text:
            self.truncated = True
            return
        if len(text) > self.left - 256:
            text = text[: self.left - 256]
            self.truncated = True
        self.send({"type": "stream", "name": name, "text": text})

    def data(self, kind, data):
        kept = {}
        for mime in KEPT_MIME:
            if mime in data:
                kept[mime] = data[mime]
        size = len(json.dumps(kept))
        if size > self.left and "text/plain" in kept:
            # a value too large to return whole: keep only its text, cut to what is left
            self.truncated = True
            kept = {"text/plain": str(kept["text/plain"])[: max(0, self.left - 256)]}
        if kept:
            self.send({"type": kind, "data": kept})

    def done(self, status, count=None, message=None):
        emit({"id": self.id, "type": "done", "status": status, "executionCount": count, "truncated": self.truncated,
              "message": message})


def kill_kernel(km):
    """Ends a kernel that ignores interrupts: its whole process group (jupyter_client starts it in a
    session of its own), so that nothing of it keeps a CPU once it is declared dead."""
    process = km.provisioner.process if km.provisioner else None
    if process is None:
        return
    for kill in (lambda: os.killpg(process.pid, signal.SIGKILL), process.kill):
        try:
            kill()
        except OSError:
            pass
    try:
        process.wait(timeout=5)
    except Exception:  # noqa: BLE001 - it is killed either way; the bridge exits next
        pass


def run(km, kc, cell):
    msg_id = kc.execute(cell.code, store_history=True, allow_stdin=False, stop_on_error=False)
    deadline = time.monotonic() + cell.timeout
    status, count, timed_out, interrupt_sent = "ok", None, False, False
    while True:
        now = time.monotonic()
        if not interrupt_sent and (cell.interrupted.is_set() or now > deadline):
            timed_out = not cell.interrupted.is_set()
            km.interrupt_kernel()
            interrupt_sent = True
            deadline = now + GRACE_SECONDS
        elif interrupt_sent and now > deadline:
            kill_kernel(km)
            cell.done("dead", count, "the kernel did not stop within %d s of an interrupt and was killed: restart the context;"
                      " its variables are lost" % GRACE_SECONDS)
            return False
        try:
            msg = kc.get_iopub_msg(timeout=0.2)
        except queue.Empty:
            if not km.is_alive():
                process = km.provisioner.process if km.provisioner else None
                code = process.poll() if process else None
                cell.done("dead", count, "the kernel died (exit status %s): restart the context; its variables are lost" % code)
                return False
            continue
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            cell.stream(content.get("name", "stdout"), content.get("text", ""))
        elif kind == "execute_result":
            count = content.get("execution_count")
            cell.data("result", content.get("data", {}))
        elif kind in ("display_data", "update_display_data"):
            cell.data("display", content.get("data", {}))
        elif kind == "execute_input":
            count = content.get("execution_count")
        elif kind == "error":
            if content.get("ename") == "KeyboardInterrupt" and interrupt_sent:
                status = "timeout" if timed_out else "interrupted"
            else:
                status = "error"
            cell.send({"type": "error", "ename": content.get("ename", ""), "evalue": content.get("evalue", ""),
                       "traceback": [ANSI.sub("", line) for line in content.get("traceback", [])]})
        elif kind == "status" and content.get("execution_state") == "idle":
            if interrupt_sent and status == "ok":
                status = "timeout" if timed_out else "interrupted"
            cell.done(status, count)
            return True


def main():
    from jupyter_client.manager import KernelManager
    try:
        km = KernelManager(kernel_name="airlock-python", transport="ipc", ip=os.path.join(STATE, "kernel"))
        log = open(os.path.join(STATE, "kernel.log"), "ab")
        km.start_kernel(cwd="/workspace", stdout=log, stderr=log)
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
    except Exception as e:  # noqa: BLE001 - any failure to start is reported the same way
        said = ""
        try:
            with open(os.path.join(STATE, "kernel.log"), "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 1500))
                said = f.read().decode("utf-8", "replace").strip()
        except OSError:
            pass
        emit({"type": "failed", "message": "%s: %s%s" % (type(e).__name__, e, "; the kernel said: " + said if said else "")})
        return 1
    emit({"type": "ready", "pid": km.provisioner.pid if km.provisioner else None, "python": sys.version.split()[0]})
    cells = queue.Queue()
    current = [None]

    def work():
        while True:
            cell = cells.get()
            if cell is None:
                return
            current[0] = cell
            alive = run(km, kc, cell)
            current[0] = None
            if not alive:
                os._exit(3)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    for line in sys.stdin:
        try:
            request = json.loads(line)
            if "interrupt" in request:
                cell = current[0]
                if cell is not None and cell.id == request["interrupt"]:
                    cell.interrupted.set()
            else:
                cells.put(Cell(request))
        except (ValueError, KeyError, TypeError) as e:
            emit({"type": "invalid", "message": str(e)})
    # stdin closed: the server deletes the context, or is gone
    cells.put(None)
    km.shutdown_kernel(now=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
