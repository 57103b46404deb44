"""SECURITY.md requirement 18, seen from the kernel: a whole session makes no network traffic
and creates no file outside the vault and Kept's own folders, native libraries included.

tests/app/test_network.py patches Python's ``socket``, which native code bypasses: onnxruntime's
wheel carries a telemetry client (C++) that wrote a device id and events to
``~/.cache/Microsoft/DeveloperTools/.onnxruntime/`` and a session file to the temp folder, and
sent DNS queries for Microsoft's collector a few seconds after the model loaded, none of which
that test could see. Here the session runs in a child process under ``strace -f`` (every
thread, every syscall that touches the network or creates a file), with a fresh HOME and
TMPDIR and none of the test suite's environment (no ``ORT_DISABLE_TELEMETRY``, no
``ANONYMIZED_TELEMETRY``): turning telemetry off is the code's job. It fails on any connect or
send to a non-loopback address, any DNS packet (port 53 anywhere, nscd or systemd-resolved
sockets), and any file or folder created outside the vault and Kept's data, config and log
folders. A control run checks that the tracer and the parser see a real DNS query, a
connection and a file in ~/.cache.

strace is needed (``apt-get install strace``; ``.ci/run`` installs it and sets
``KEPT_REQUIRE_STRACE=1``, so there a missing strace fails instead of skipping).
"""

from __future__ import annotations

import ast
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SESSION = ROOT / "tests" / "app" / "network_session.py"
IDLE_S = 20  # onnxruntime's uploader resolved its host 3-10 s after the model loaded
TRACED = ("%network,open,openat,openat2,creat,mkdir,mkdirat,mknod,mknodat,"
          "rename,renameat,renameat2,link,linkat,symlink,symlinkat,execve,execveat")
# The environment of the test run that must not leak into the child: the child shows what
# the code does on a user's machine, where none of these is set.
SCRUBBED = ("ORT_DISABLE_TELEMETRY", "ANONYMIZED_TELEMETRY", "HF_HUB_OFFLINE",
            "HF_HUB_DISABLE_TELEMETRY", "TRANSFORMERS_OFFLINE", "DO_NOT_TRACK")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="strace is Linux")


@dataclass
class Trace:
    connects: list[str] = field(default_factory=list)      # non-loopback connect/send targets
    dns_packets: int = 0                                    # sends to port 53, nscd/resolved
    sockets: int = 0                                        # AF_INET/AF_INET6 sockets opened
    created: list[str] = field(default_factory=list)       # every path created (deduplicated)
    execs: list[str] = field(default_factory=list)         # every program run (execve), in order

    def summary(self) -> dict[str, object]:
        return {"connects": len(self.connects), "dns_packets": self.dns_packets,
                "inet_sockets": self.sockets, "files_created": len(self.created),
                "programs_run": self.execs}


_LINE = re.compile(r"^(\d+)\s+(\w+)\((.*)$")
_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$")
_INET = re.compile(r'sa_family=AF_INET6?, sin6?_port=htons\((\d+)\).*?'
                   r'(?:inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6?, "([^"]+)")')
_SOCK = re.compile(r"^\d+<socket:\[(\d+)\]>")
_PATH = re.compile(r'(?:(AT_FDCWD|\d+)(?:<([^>]*)>)?, )?"((?:[^"\\]|\\.)*)"')
_RESOLVERS = ("nscd", "resolve")
_CREATE_LAST = ("rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat")
_CREATE_FIRST = ("open", "openat", "openat2", "creat", "mkdir", "mkdirat", "mknod", "mknodat")


def _complete_calls(text: str) -> list[tuple[str, str]]:
    """(syscall, arguments-and-result) for every call, joining ``<unfinished ...>`` halves."""
    pending: dict[str, str] = {}
    calls = []
    for line in text.splitlines():
        m = _RESUMED.match(line)
        if m:
            head = pending.pop(m.group(1), None)
            if head is not None:
                calls.append((m.group(2), head + m.group(3)))
            continue
        m = _LINE.match(line)
        if not m:
            continue
        pid, name, rest = m.groups()
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest[: -len("<unfinished ...>")]
        else:
            calls.append((name, rest))
    return calls


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_strace(text: str, cwd: Path) -> Trace:
    out = Trace()
    dns_sockets: set[str] = set()
    created: dict[str, None] = {}
    for name, rest in _complete_calls(text):
        failed = re.search(r"\)\s+= -1 ", rest) is not None
        if name == "socket" and re.match(r"AF_INET6?\b", rest) and not failed:
            out.sockets += 1
        elif name in ("connect", "sendto", "sendmsg", "sendmmsg"):
            sock = _SOCK.match(rest)
            inode = sock.group(1) if sock else None
            addr = _INET.search(rest)
            if addr:
                port, host = int(addr.group(1)), addr.group(2) or addr.group(3)
                if port == 53:
                    if name == "connect" and inode:
                        dns_sockets.add(inode)
                    else:
                        out.dns_packets += 1
                if not _loopback(host):
                    out.connects.append(f"{name} {host}:{port}")
            elif name != "connect" and inode in dns_sockets:
                out.dns_packets += 1                 # a query on a connected resolver socket
            elif name == "connect" and "AF_UNIX" in rest and any(
                    r in rest.split("sun_path=", 1)[-1] for r in _RESOLVERS):
                out.dns_packets += 1                 # a lookup through a local resolver daemon
        elif name in ("execve", "execveat") and not failed:
            paths = _PATH.findall(rest)
            if paths:
                out.execs.append(paths[0][2])
        elif (name in _CREATE_FIRST or name in _CREATE_LAST) and not failed:
            if name in ("open", "openat", "openat2") and not re.search(r"O_CREAT|O_TMPFILE",
                                                                       rest):
                continue
            paths = _PATH.findall(rest)
            if not paths:
                continue
            _fd, folder, raw = paths[-1] if name in _CREATE_LAST else paths[0]
            path = Path(raw)
            if not path.is_absolute():
                path = Path(folder or cwd) / path
            created[os.path.normpath(path)] = None
    out.created = list(created)
    return out


def _strace() -> str:
    tool = shutil.which("strace")
    if tool is None:
        if os.environ.get("KEPT_REQUIRE_STRACE"):
            pytest.fail("strace is required here (apt-get install strace)")
        pytest.skip("strace is not installed (apt-get install strace); .ci/run installs it")
    return tool


def run_traced(tmp_path: Path, args: list[str]) -> tuple[subprocess.CompletedProcess[str],
                                                         Trace, Path]:
    work = tmp_path / "work"
    home, tmp = work / "home", work / "tmp"
    home.mkdir(parents=True)
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in SCRUBBED and not k.startswith(("XDG_", "PYTEST", "KEPT_IDLE"))}
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=str(ROOT))
    if env.get("KEPT_MODEL_DIR"):
        env["KEPT_MODEL_DIR"] = str(Path(env["KEPT_MODEL_DIR"]).resolve())
    log = work / "strace.txt"
    r = subprocess.run([_strace(), "-f", "-y", "--seccomp-bpf", "-qq", "-e", f"trace={TRACED}",
                        "-o", str(log), sys.executable, "-B", *args],
                       cwd=work, env=env, capture_output=True, text=True, timeout=300)
    return r, parse_strace(log.read_text(errors="replace"), work), home


def _outside_kept(trace: Trace, home: Path) -> list[str]:
    """Created paths that are neither under the vault/Kept's documented folders (Linux XDG
    defaults under the fresh HOME) nor one of their parent folders."""
    allowed = [home / ".local" / "share" / "Kept", home / ".config" / "Kept",
               home / ".local" / "state" / "Kept"]
    bad = []
    for raw in trace.created:
        p = Path(raw)
        if any(p == a or a in p.parents or p in a.parents for a in allowed):
            continue
        bad.append(raw)
    return bad


CONTROL = r"""
import os, socket
try:
    socket.getaddrinfo("kept-network-test.example.com", 443)
except OSError:
    pass
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setblocking(False)
try:
    s.connect(("192.0.2.1", 80))
except OSError:
    pass
s.close()
d = os.path.expanduser("~/.cache/somelib")
os.makedirs(d)
open(os.path.join(d, "device.id"), "w").close()
"""


def test_tracer_sees_dns_connections_and_cache_files(tmp_path: Path) -> None:
    r, trace, home = run_traced(tmp_path, ["-c", CONTROL])
    assert r.returncode == 0, r.stderr[-2000:]
    assert trace.dns_packets >= 1, trace
    assert "connect 192.0.2.1:80" in trace.connects
    assert str(home / ".cache" / "somelib" / "device.id") in _outside_kept(trace, home)


def test_parser_joins_unfinished_calls_and_resolves_dir_fds(tmp_path: Path) -> None:
    text = "\n".join([
        '7 connect(5<socket:[99]>, {sa_family=AF_INET, sin_port=htons(53), '
        'sin_addr=inet_addr("127.0.0.53")}, 16 <unfinished ...>',
        "8 futex(0x1, FUTEX_WAIT, 0, NULL <unfinished ...>",
        "7 <... connect resumed>) = 0",
        '7 sendmmsg(5<socket:[99]>, [{msg_hdr={msg_name=NULL}}], 2, MSG_NOSIGNAL) = 2',
        '7 openat(12</h/.cache/x>, "id.tmp", O_WRONLY|O_CREAT|O_EXCL, 0600) = 13</h/.cache/x/i>',
        '7 openat(AT_FDCWD</w>, "rel.txt", O_RDONLY|O_CLOEXEC) = 3</w/rel.txt>',
        '7 mkdir("/w/exists", 0700) = -1 EEXIST (File exists)',
        '7 rename("/v/.k.tmp", "/v/vault.key.json") = 0',
        '7 connect(6<socket:[100]>, {sa_family=AF_INET6, sin6_port=htons(443), '
        'sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), '
        'sin6_scope_id=0}, 28) = -1 EINPROGRESS',
        '7 connect(7<socket:[101]>, {sa_family=AF_INET, sin_port=htons(8080), '
        'sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
    ])
    trace = parse_strace(text, tmp_path)
    assert trace.dns_packets == 1                   # the resolver socket's one send
    assert trace.connects == ["connect 2001:db8::1:443"]   # loopback 8080 is fine
    assert trace.created == ["/h/.cache/x/id.tmp", "/v/vault.key.json"]


@pytest.mark.slow  # ~23 s, 20 of them idle on purpose: the slow group runs it (CI too)
def test_whole_session_makes_no_network_traffic_and_no_stray_files(
        tmp_path: Path, model_dir: Path) -> None:
    """Unlock, import, recall, consolidate, Chroma's index, the scheduler, then 20 s idle."""
    r, trace, home = run_traced(tmp_path, [str(SESSION), str(IDLE_S)])
    assert r.returncode == 0, r.stderr[-4000:]
    session = json.loads(r.stdout.strip().splitlines()[-1])
    assert session["semantic"] is True and session["chroma"] is True
    assert session["added"] == 4
    assert session["top"] == "We booked the train to Porto for the summer"
    assert Path(session["folder"]).is_relative_to(home / ".local" / "share" / "Kept")
    # Chroma imports OpenTelemetry's exporter, but no provider is ever installed (the no-op
    # proxy stays), and neither PostHog nor huggingface_hub is loaded at all.
    assert session["otel_provider"] == "ProxyTracerProvider"
    assert session["telemetry_modules"] == []
    stray = _outside_kept(trace, home)
    measured = {**trace.summary(), "targets": sorted(set(trace.connects)),
                "files_outside_kept": stray}
    if trace.connects or trace.dns_packets or stray or (home / ".cache").exists():
        pytest.fail("requirement 18: " + json.dumps(measured, indent=1))
    # The only program run is Kept's own Python: no ldconfig or gcc from keyring's probing of
    # its macOS backend (issue 22 item 8), no helper of any native library.
    assert session["keychain_probed"] is True
    assert trace.execs == [sys.executable], trace.execs


def test_the_tracer_sees_programs_run(tmp_path: Path) -> None:
    """The control for the execve check: ``keyring``'s own detection (what Kept used to call)
    runs ldconfig and a compiler on Linux; Kept's choice of backend runs nothing."""
    r, trace, _home = run_traced(tmp_path, ["-c", "import keyring; keyring.get_keyring()"])
    assert r.returncode == 0, r.stderr[-2000:]
    assert len(trace.execs) > 1 and trace.execs[0] == sys.executable, trace.execs
    r, trace, _home = run_traced(tmp_path / "kept", [
        "-c", "from storage.crypto import keyring_available; keyring_available()"])
    assert r.returncode == 0, r.stderr[-2000:]
    assert trace.execs == [sys.executable], trace.execs


# --- every path to onnxruntime goes through ``storage`` (whose import sets the variable) ----

_ORT_MODULES = ("onnxruntime", "chromadb.utils.embedding_functions")


def _imports(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_onnxruntime_is_loaded_only_where_storage_is_imported_first() -> None:
    """onnxruntime reads ``ORT_DISABLE_TELEMETRY`` when it initialises: a module outside
    ``storage/`` that can load it (directly or through Chroma's embedding functions) must
    import ``storage`` at module level, before any function of it runs."""
    offenders = []
    for folder in ("app", "ui", "storage", "bench", "packaging", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if rel.parts[0] == "storage":
                continue
            tree = ast.parse(path.read_text("utf-8"))
            if not any(n.startswith(_ORT_MODULES) for n in _imports(tree)):
                continue
            top = _imports(ast.Module(body=[n for n in tree.body
                                            if isinstance(n, (ast.Import, ast.ImportFrom))],
                                      type_ignores=[]))
            if not any(n == "storage" or n.startswith("storage.") for n in top):
                offenders.append(str(rel))
    assert offenders == []


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "bench").glob("*.py")))
def test_bench_script_turns_onnx_telemetry_off(script: str) -> None:
    """Benchmarks load the model, Chroma's own embedding function (scale.py's "Chroma alone")
    and external scorers in child processes: their module header imports ``storage``, so the
    variable is set in them and inherited by every child."""
    code = ("import os, runpy, sys; runpy.run_path(sys.argv[1], run_name='guard'); "
            "print(os.environ.get('ORT_DISABLE_TELEMETRY'))")
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    r = subprocess.run([sys.executable, "-c", code, str(ROOT / "bench" / script)], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "1"
