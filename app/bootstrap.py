"""Composition root of the app layer: the ONE app module that imports ``storage``.
Layer: app (composition). Runs on: the caller's thread (blocks: Argon2id, disk, the model).

``create_parts`` / ``open_parts`` unlock a vault (``storage.unlock``), build its storage
objects (vector index, full-text mirror, embedder) and the services, once per unlock, as
:class:`app.parts.Parts` for ``Vault.create`` / ``Vault.open`` (the one way to open a vault;
this module never imports the facade). Front ends call those and the few pre-unlock helpers
below (does a vault exist, where it lives by default, the self-check); nothing else in
``app/`` imports ``storage`` (tests/guards/test_layers.py checks it). ``storage`` is imported
inside the functions: importing this module loads no native library, so ``kept self-check`` can
still report a broken one by name.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.clock import Clock, SystemClock
from app.errors import VaultLocked

if TYPE_CHECKING:  # app.ports imports numpy: not on ``kept mcp``'s path (issue 14)
    import numpy as np

    from app import ports
    from app.api import BackupCheck
    from app.parts import Parts
    from app.ports import Embedder, KeySession
    from app.services.ingest import IngestService
    from app.sync.apply import ApplyRows
    from app.sync.devices import KeyRows
    from app.sync.epochs import EpochRows
    from app.sync.journal import JournalRows
    from storage.crypto import KdfParams

log = logging.getLogger(__name__)

# After unlock, background work (the page self-test, the RAM lexicon build) waits this long so
# the window's first paint and a first search do not share the CPU (and the GIL) with it.
BACKGROUND_GRACE_S = 1.0


# --- before unlock ---------------------------------------------------------------------------

def vault_exists(folder: Path) -> bool:
    from storage.unlock import vault_exists as exists
    return exists(folder)


def default_vault_dir() -> Path:
    from storage.paths import default_vault_dir as default
    return default()


def config_dir() -> Path:
    """The user's config folder for Kept (the window's preferences: ``app.prefs``)."""
    from storage.paths import config_dir as config
    return config()


def check_new_vault_folder(folder: Path) -> None:
    """``ValidationError`` unless ``folder`` is new or empty (a vault is made nowhere else)."""
    from storage.paths import check_new_vault_folder as check
    check(folder)


def check_recovery_code(folder: Path, code: str) -> None:
    """``ValidationError``/``WrongKey`` unless ``code`` opens this vault; writes nothing."""
    from storage.unlock import check_recovery_code as check
    check(folder, code)


def keyring_available() -> bool:
    """A real OS keychain is there to remember this device
    (docs/security.md#remember-on-this-device)."""
    from storage.crypto import keyring_available as available
    return available()


def assistant_unlock_allowed(folder: Path) -> bool:
    """This device's keychain allows an assistant's call to unlock the vault in ``folder``
    (its half of the opt-in; the vault's setting is the other: storage/device_unlock.py).
    Reads the key file and the keychain only; never raises."""
    from storage import crypto, device_unlock
    try:
        return device_unlock.allowed(crypto.read_key_file(folder))
    except Exception:  # no key file, unreadable: not allowed
        return False


def private_umask() -> None:
    from storage.paths import private_umask as umask
    umask()


def log_dir() -> Path:
    from storage.paths import log_dir as folder
    return folder()


def make_private_dir(path: Path) -> None:
    from storage.paths import make_private_dir as make
    make(path)


def kdf_limits() -> tuple[tuple[int, int], tuple[int, int]]:
    """What unlock accepts: (memory MiB min, max), (time cost min, max)."""
    from storage.crypto import FLOOR_M_KIB, FLOOR_T, MAX_M_KIB, MAX_T
    return (FLOOR_M_KIB // 1024, MAX_M_KIB // 1024), (FLOOR_T, MAX_T)


def kdf_params(m_kib: int, t: int = 3) -> KdfParams:
    """Argon2id parameters for a new vault (``kept init --kdf-memory-mib``, the demo)."""
    from storage.crypto import KdfParams
    return KdfParams(m=m_kib, t=t)


def backup_store(opened: KeySession) -> ports.Backups:
    """The backups of one unlocked vault (issue 16; ``storage/backup.py``)."""
    from storage.backup import VaultBackups
    return VaultBackups(opened)


def sync_journal_rows() -> JournalRows:
    """The sync journal's rows (issue 29; ``storage/sync_journal.py``, migration 0030)."""
    from storage.sync_journal import SyncJournalRows as Rows
    return Rows()


def sync_key_rows() -> KeyRows:
    """This device's sync keys and devices (issue 29; ``storage/sync_keys.py``, migration
    0029): the module is the port."""
    import storage.sync_keys as rows
    return rows


def sync_epoch_rows() -> EpochRows:
    """The sync epochs' rows (issue 29 item 4; ``storage/sync_epochs.py``, migration 0034)."""
    from storage.sync_epochs import SyncEpochRows
    return SyncEpochRows()
def sync_apply_rows() -> ApplyRows:
    """Rows for applying other devices' ops (issue 29; ``storage/sync_apply.py``, 0033)."""
    from storage.sync_apply import SyncApplyRows
    return SyncApplyRows()


def verify_backup(path: Path, password: str) -> BackupCheck:
    """Decrypt and check a backup file whole; writes no vault (``storage.backup.verify``)."""
    from storage.backup import verify
    return _backup_check(path, verify(path, password))


def restore_backup(path: Path, password: str, folder: Path) -> BackupCheck:
    """A new vault in ``folder`` (new or empty) from a backup file; it opens with the
    backup's password (``storage.backup.restore``)."""
    from storage.backup import restore
    return _backup_check(path, restore(path, password, folder))


def _backup_check(path: Path, m: object) -> BackupCheck:
    from app.api import BackupCheck
    from storage.backup import Manifest
    assert isinstance(m, Manifest)
    return BackupCheck(path=str(path), vault_id=m.vault_id, created_at=m.created_at,
                       schema_version=m.schema_version, bytes=path.stat().st_size,
                       memories=m.memories, links=m.links, history=m.history,
                       vectors=m.vectors, settings=m.settings)


@dataclass(frozen=True, slots=True)
class SelfCheck:
    ok: bool
    lines: tuple[str, ...]
    checks: tuple[dict[str, object], ...]


def self_check(extra: tuple[tuple[str, Callable[[], str], bool], ...] = ()) -> SelfCheck:
    """Do the native parts work here (storage/selfcheck.py)? ``extra``: a front end's own
    checks, (name, fn, required)."""
    from storage.selfcheck import passed, report_lines, run_checks
    checks = run_checks(extra)
    return SelfCheck(passed(checks), tuple(report_lines(checks)),
                     tuple(asdict(c) for c in checks))


# --- unlock ----------------------------------------------------------------------------------

def load_embedder(load_model: bool) -> tuple[Embedder | None, Path | None]:
    """The ONNX model and its folder, or (None, None): semantic search is then off."""
    if not load_model:
        return None, None
    from storage.embedder import Embedder as OnnxEmbedder
    from storage.embedder import find_model
    choice = find_model().choice  # a damaged pinned file is refused there (one log line)
    if choice is None:
        log.warning("embedding model not found: semantic search is off")
        return None, None
    model_dir = choice.model_dir
    try:
        return OnnxEmbedder(model_dir), model_dir
    except Exception as exc:  # a damaged model file must not stop the vault opening
        log.error("embedding model failed to load (%s): semantic search is off",
                  type(exc).__name__)
        return None, None


def model_problem() -> str | None:
    """Why semantic search is off when a model was there but refused (``"the model file is
    damaged"``: its sha256 is not the pinned one), else None."""
    from storage.embedder import find_model
    return find_model().problem


def model_source(model_dir: Path | None) -> str | None:
    """Where the model in ``model_dir`` came from, in words, or None."""
    from storage.embedder import package_model_file
    if model_dir is None:
        return None
    pkg = package_model_file()
    if pkg is not None and pkg.parent.resolve() == Path(model_dir).resolve():
        return "installed with Kept"
    if os.environ.get("KEPT_MODEL_DIR") and Path(
            os.environ["KEPT_MODEL_DIR"]).expanduser().resolve() == Path(model_dir).resolve():
        return "from KEPT_MODEL_DIR"
    return "found on this computer"


def create_parts(folder: Path, password: str, *, kdf: ports.KdfParams | None = None,
                 recovery: bool = False, clock: Clock | None = None, load_model: bool = True,
                 threaded: bool = True, use_chroma: bool = True
                 ) -> tuple[Parts, str | None, float]:
    """A new vault in ``folder``: its parts, its recovery code (``recovery``), and how long
    the key derivation took. ``Vault.create`` calls it."""
    from storage.crypto import KdfParams
    from storage.unlock import OpenVault
    if kdf is not None and not isinstance(kdf, KdfParams):
        kdf = KdfParams(m=kdf.m, t=kdf.t, p=kdf.p)
    start = time.perf_counter()
    opened = OpenVault.create(folder, password, kdf=kdf, threaded=threaded)
    seconds = time.perf_counter() - start
    try:
        code = opened.add_recovery_code() if recovery else None
        embedder, model_dir = load_embedder(load_model)
        parts = compose(opened, clock=clock, embedder=embedder, model_dir=model_dir,
                        use_chroma=use_chroma)
        _seed_settings(opened)
    except BaseException:
        opened.lock()
        raise
    return parts, code, seconds


def open_parts(folder: Path, password: str | None = None, *, recovery_code: str | None = None,
               use_device: bool = False, clock: Clock | None = None, load_model: bool = True,
               threaded: bool = True, use_chroma: bool = True, verify: str = "background",
               new_password: str | None = None) -> Parts:
    """``verify="background"`` (threaded only): the page self-test of
    docs/security.md#2-the-database-is-encrypted runs while the index loads and the first searches
    run; no write happens before it has passed, and if it fails every write raises ``VaultCorrupt``
    and ``watch_integrity`` callbacks run. ``"sync"`` checks before returning (the CLI's
    single-threaded mode always does). ``recovery_code`` with ``new_password``: a forgotten password
    is replaced (the code keeps working; ``OpenVault.recover``)."""
    from storage import repo
    from storage.embedder import MODEL_NAME, SAME_SPACE
    from storage.unlock import OpenVault
    if recovery_code is not None and new_password is not None:
        opened, info = OpenVault.recover(folder, recovery_code, new_password,
                                         threaded=threaded, verify=verify)
    else:
        opened, info = OpenVault.unlock(folder, password, recovery_code=recovery_code,
                                        use_device=use_device, threaded=threaded,
                                        verify=verify)
    log.info("unlocked in %.3f s", info.seconds)
    try:
        # One after the other: loading the model on a second thread while the vectors
        # are read made both slower (they take turns on the GIL: 1.28 s against 0.46 +
        # 0.25 s at 100k).
        vectors = None
        if load_model:
            # Both model ids of one space: an fp32 vault opened with the int8 model (or the
            # reverse) keeps its vectors (docs/architecture.md#the-embedding-model).
            vectors = (MODEL_NAME, opened.db.read(lambda c: repo.load_vectors(c, SAME_SPACE)))
        embedder, model_dir = load_embedder(load_model)
        parts = compose(opened, clock=clock, embedder=embedder, model_dir=model_dir,
                        use_chroma=use_chroma, vectors=vectors)
        # Now that the index is in RAM; a write cuts the grace short (storage/db.py).
        opened.db.start_verification(delay=BACKGROUND_GRACE_S if threaded else 0.0)
        return parts
    except BaseException:
        opened.lock()
        raise


def compose(opened: KeySession, *, clock: Clock | None = None, embedder: Embedder | None,
            model_dir: Path | None, use_chroma: bool = True,
            vectors: tuple[str, tuple[np.ndarray, np.ndarray]] | None = None) -> Parts:
    """The storage objects and services of one unlocked vault, built once, for the Vault
    that will own them. Starts the index load and, on a big vault, the RAM lexicon build."""
    from app.parts import Parts
    from app.services.agents import AgentService
    from app.services.browse import BrowseService
    from app.services.consolidation import ConsolidationService
    from app.services.context import ContextService
    from app.services.forget import ForgetService
    from app.services.ingest import IngestService
    from app.services.recall import RecallService
    from storage import agents, browse, consolidation_rows, inbox, lifecycle, repo, runlog
    from storage.lexicon import Lexicon
    from storage.migrations import schema_version
    from storage.recall_cache import RecallRows
    from storage.vector import VectorIndex
    clock = clock or SystemClock()
    db = opened.db
    index = VectorIndex(use_chroma=use_chroma)
    lexicon = Lexicon(repo.FTS_WEIGHTS)
    db.after_write.append(lexicon.on_write)
    ingest = IngestService(db, index, embedder, clock, repo, lifecycle)
    # What recall reads per memory, in RAM, dropped by the writer's own triggers as rows change.
    recall_rows = RecallRows()
    db.after_write.append(recall_rows.on_write)
    db.on_writer(recall_rows.install)
    recall = RecallService(db, index, embedder, lexicon=lexicon, rows=recall_rows)
    consolidation = ConsolidationService(db, clock, index, ingest, rows=consolidation_rows,
                                         runlog=runlog, inbox=inbox)
    parts = Parts(
        session=opened, clock=clock, index=index, lexicon=lexicon, embedder=embedder,
        model_dir=model_dir, rows=repo, lifecycle=lifecycle, schema_version=schema_version,
        ingest=ingest, recall=recall, consolidation=consolidation,
        context=ContextService(db, recall, rows=repo),
        forget=ForgetService(db, index, rows=lifecycle),
        browse=BrowseService(db, clock, rows=browse),
        agents=AgentService(db, clock, agents, locked=lambda: opened.locked),
        drop_on_lock=(recall_rows.clear, recall.forget_texts))
    _load_index(opened, index, embedder, vectors)
    _start_follower(opened, index, ingest, embedder)
    _start_lexicon(opened, index, lexicon, embedder,
                   preload=lambda: recall_rows.preload(db.read, stop=lambda: opened.locked),
                   warm=lambda: recall.warm_texts(recall_rows.said(),
                                                  stop=lambda: opened.locked))
    return parts


def _start_follower(opened: KeySession, index: ports.VectorIndex, ingest: IngestService,
                    embedder: Embedder | None) -> None:
    """With a model, remember's vectors follow the acknowledgement (issue 28); started once
    the index is loaded, with what an earlier session left pending."""
    from app.services.vector_follow import VectorFollower
    from storage import vector_pending
    if embedder is not None:
        ingest.follower = VectorFollower(opened.db, index, embedder, vector_pending)
        ingest.follower.start()


def _seed_settings(opened: KeySession) -> None:
    from app.settings import SETTINGS
    from storage import repo

    def run(conn: ports.Connection) -> None:
        for s in SETTINGS:
            if repo.get_setting(conn, s.key) is None:
                repo.put_setting(conn, s.key, s.default)
    opened.db.write_sync(run)


def _load_index(opened: KeySession, index: ports.VectorIndex, embedder: Embedder | None,
                vectors: tuple[str, tuple[np.ndarray, np.ndarray]] | None) -> None:
    from storage import repo
    from storage.embedder import SAME_SPACE
    if embedder is None:
        return
    model = embedder.model_name
    space = SAME_SPACE if model in SAME_SPACE else (model,)
    if vectors is not None and vectors[0] in space:
        ids, mat = vectors[1]
    else:
        ids, mat = opened.db.read(lambda c: repo.load_vectors(c, space))
    index.load(ids, mat)


def _start_lexicon(opened: KeySession, index: ports.VectorIndex, lex: ports.Lexicon,
                   embedder: Embedder | None, preload: Callable[[], object] | None = None,
                   warm: Callable[[], object] | None = None) -> None:
    """Big vaults: mirror the full-text index in RAM (storage/lexicon.py), built in the
    background; FTS5 answers until it is ready and on small vaults. On the same thread,
    ``preload`` (recall's per-memory fields, storage/recall_cache.py): before the mirror's
    scan when there is no saved mirror to load, else after it; after the mirror, ``warm``
    (recall's per-text results, ``RecallService.warm_texts``); then Chroma.

    Preload first (issue 28, the first minute): while the mirror was scanned, each recall
    read its candidates' fields, texts and refs with ~7 more SQL statements (795 against 254
    for 79 recalls, 42 of its 130 ms in them, 10k memories, load 13, dev), and the preload
    is the shorter of the two. The per-text results wait for the mirror: they save little
    per recall and cost seconds at 100k, which the mirror should not wait for."""
    from storage import lexicon, repo
    db = opened.db
    rows = db.read(repo.memory_count)
    chroma = index.start_chroma_build if embedder is not None else None
    if rows >= lexicon.MIN_ROWS and db.threaded:  # not for one-shot CLI commands
        # The lexicon first: it turns 300 ms of FTS5 into 2; Chroma is no faster than
        # exact search at this size, so its build waits rather than compete for the CPU.
        preloaded: list[bool] = []

        def preload_once() -> None:
            if preload is None or preloaded:
                return
            preloaded.append(True)
            try:
                preload()
            except VaultLocked:
                pass  # locked meanwhile: nothing to fill
            except Exception:  # an accelerator: recall reads the rows itself
                log.exception("recall's fields were not preloaded")

        def then() -> None:
            preload_once()
            if warm is not None:
                try:
                    warm()
                except VaultLocked:
                    pass  # locked meanwhile: nothing to fill
                except Exception:  # an accelerator: recall works the texts out itself
                    log.exception("recall's per-text results were not worked out ahead")
            if chroma is not None:
                chroma()
        lex.build_in_background(db.read, then=then, delay=BACKGROUND_GRACE_S,
                                before_scan=preload_once)
    elif chroma is not None:
        chroma()
