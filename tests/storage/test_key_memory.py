"""SECURITY.md requirement 20: after lock, no copy of a key in the process's memory.

A child process (keymem_child.py) unlocks a real vault through the facade, remembers,
searches from two threads, locks and ``gc.collect()``s; this process then reads every
writable or anonymous region of the child's memory (``/proc/PID/maps`` + ``/proc/PID/mem``)
and looks for the keys that open the vault: the data key (DEK), the SQLCipher key K_db, the
file key and the password-derived KEK, each raw, as hex in both cases and as base64. The keys
are computed here, independently, from the key file and the password; the child never
sends them.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from storage import crypto
from tests.storage.conftest import Template

pytestmark = pytest.mark.skipif(not Path("/proc/self/mem").exists(),
                                reason="needs /proc/PID/mem (Linux)")

CHILD = Path(__file__).with_name("keymem_child.py")
ROOT = Path(__file__).resolve().parents[2]
SKIP_REGIONS = ("[vvar]", "[vsyscall]", "[vdso]", "[vvar_vclock]")


def key_material(folder: Path, password: str) -> dict[str, bytes]:
    """name -> 32 secret bytes, derived here from the key file and the password."""
    kf = crypto.read_key_file(folder)
    kek = crypto.derive_kek(password, kf.kdf)
    dek = crypto.unwrap(kf, password)
    keys = crypto.Keys.from_dek(dek)
    return {"kek": bytes(kek), "dek": bytes(dek), "k_db": bytes(keys.db_key),
            "k_files": bytes(keys.file_key)}


def forms(keys: dict[str, bytes]) -> dict[str, bytes]:
    """Every form a key could take in memory: raw, hex (lower, upper), base64 (std, url)."""
    out: dict[str, bytes] = {}
    for name, raw in keys.items():
        out[f"{name} raw"] = raw
        out[f"{name} hex"] = raw.hex().encode()
        out[f"{name} HEX"] = raw.hex().upper().encode()
        out[f"{name} b64"] = base64.b64encode(raw)[:43]
        out[f"{name} b64url"] = base64.urlsafe_b64encode(raw)[:43]
    return out


def scan_process(pid: int, needles: dict[str, bytes]) -> tuple[dict[str, int], int]:
    """(hits per needle name, bytes scanned) over the process's writable or anonymous
    readable regions (code and read-only file mappings cannot hold a key made at run time)."""
    hits = dict.fromkeys(needles, 0)
    pattern = re.compile(b"|".join(re.escape(n) for n in needles.values()))
    by_value = {v: k for k, v in needles.items()}
    overlap = max(len(n) for n in needles.values()) - 1
    scanned = 0
    maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except PermissionError:
        pytest.skip("this system does not let a parent read its child's memory (ptrace)")
    try:
        for line in maps:
            parts = line.split(maxsplit=5)
            perms = parts[1]
            name = parts[5] if len(parts) > 5 else ""
            if perms[0] != "r" or name in SKIP_REGIONS:
                continue
            if "w" not in perms and name and not name.startswith("[anon"):
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            pos, tail = start, b""
            while pos < end:
                size = min(32 << 20, end - pos)
                try:
                    block = os.pread(fd, size, pos)
                except OSError:
                    break
                if not block:
                    break
                data = tail + block
                for m in pattern.finditer(data):
                    if m.end() > len(tail):  # not already counted in the previous block
                        hits[by_value[m.group()]] += 1
                scanned += len(block)
                tail = data[-overlap:]
                pos += len(block)
    finally:
        os.close(fd)
    return hits, scanned


def run_and_scan(folder: Path, password: str, *extra: str
                 ) -> tuple[dict[str, int], int]:
    keys = key_material(folder, password)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen([sys.executable, str(CHILD), str(folder), *extra], cwd=ROOT,
                             env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(password + "\n")
        child.stdin.flush()
        line = child.stdout.readline()
        assert line.strip() == "LOCKED", f"child did not lock: {line!r}"
        if extra:  # a rotation made new keys: look for both generations
            keys |= {f"new {k}": v for k, v in key_material(folder, password).items()}
        result = scan_process(child.pid, forms(keys))
        child.stdin.write("bye\n")
        child.stdin.flush()
        assert child.wait(timeout=30) == 0
        return result
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _report(hits: dict[str, int], scanned: int) -> list[str]:
    found = [f"{name}: {n}" for name, n in hits.items() if n]
    print(f"scanned {scanned / 2**20:.0f} MiB of the locked child; hits: {found or 'none'}")
    return found


def test_no_key_in_memory_after_lock(clone_vault: Callable[..., Path],
                                     template_vault: Template) -> None:
    hits, scanned = run_and_scan(clone_vault(), template_vault.password)
    assert scanned > 10 * 2**20  # really read the child's heap
    assert _report(hits, scanned) == []


@pytest.mark.slow
def test_no_key_in_memory_after_rotation_and_lock(clone_vault: Callable[..., Path],
                                                  template_vault: Template) -> None:
    """``PRAGMA rekey`` and the new wraps leave neither the old nor the new keys behind."""
    hits, scanned = run_and_scan(clone_vault(), template_vault.password, "rotate")
    assert _report(hits, scanned) == []


def test_scanner_finds_a_key_left_in_memory(clone_vault: Callable[..., Path],
                                            template_vault: Template, tmp_path: Path) -> None:
    """The scan can fail: a child that keeps K_db as hex text is caught."""
    folder = clone_vault()
    keys = key_material(folder, template_vault.password)
    code = ("import sys; k = bytes.fromhex(sys.argv[1]); h = k.hex(); "
            "print('LOCKED', flush=True); sys.stdin.readline()")
    child = subprocess.Popen([sys.executable, "-c", code, keys["k_db"].hex()],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "LOCKED"
        hits, _ = scan_process(child.pid, forms(keys))
        child.stdin.write("\n")
        child.stdin.flush()
    finally:
        child.wait(timeout=30)
    assert hits["k_db raw"] >= 1 and hits["k_db hex"] >= 1
    assert hits["dek raw"] == 0
