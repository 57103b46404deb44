"""Guard: the facade's contract (app/api.py) is plain typed data. No public method or property
of ``Vault`` or ``VaultAPI`` has ``Any`` or a ``dict`` in its annotations, and nothing they
return or take (followed through dataclasses, tuples, lists, unions) holds an ``Any``: an IPC
client has to be able to serialise every value from its type alone."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Iterator
from pathlib import Path

from app.api import RunOutcome, VaultAPI
from app.facade import Vault
from app.ports import KdfParams
from tests.inside import inside


def _public(cls: type) -> Iterator[tuple[str, Callable[..., object]]]:
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        raw = inspect.getattr_static(cls, name)
        if isinstance(raw, property):
            if raw.fget is not None:
                yield name, raw.fget
        elif isinstance(raw, classmethod | staticmethod):
            yield name, raw.__func__
        elif inspect.isfunction(raw):
            yield name, raw


def _walk(tp: object, where: str, seen: set[object]) -> Iterator[str]:
    """Every ``Any`` and ``dict`` inside ``tp`` (``where`` names the spot)."""
    if tp is typing.Any:
        yield f"{where}: Any"
        return
    origin = typing.get_origin(tp)
    if tp is dict or origin is dict:
        yield f"{where}: dict"
    for arg in typing.get_args(tp):
        if arg is not Ellipsis and not isinstance(arg, list | str | int):
            yield from _walk(arg, where, seen)
        elif isinstance(arg, list):  # Callable[[A, B], R]
            for a in arg:
                yield from _walk(a, where, seen)


def _any_inside(tp: object, where: str, seen: set[object]) -> Iterator[str]:
    """``Any`` anywhere in the values reachable from ``tp`` (dataclass fields included)."""
    if tp is typing.Any:
        yield f"{where}: Any"
        return
    for arg in typing.get_args(tp):
        if isinstance(arg, list):
            for a in arg:
                yield from _any_inside(a, where, seen)
        elif arg is not Ellipsis and not isinstance(arg, str | int):
            yield from _any_inside(arg, where, seen)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp) and tp not in seen:
        seen.add(tp)
        for fname, ftype in typing.get_type_hints(tp).items():
            yield from _any_inside(ftype, f"{where}: {tp.__name__}.{fname}", seen)


@functools.cache
def _type_checking_names(module: str) -> dict[str, object]:
    """The names a module imports under ``if TYPE_CHECKING:`` (its annotations may use them)."""
    import ast
    import sys
    mod = sys.modules[module]
    try:
        tree = ast.parse(inspect.getsource(mod))
    except (OSError, TypeError):
        return {}
    ns: dict[str, object] = {}
    for node in tree.body:
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            exec(compile(ast.Module(node.body, []), mod.__name__, "exec"), ns)  # noqa: S102
    return ns


def _offences(cls: type) -> list[str]:
    out: list[str] = []
    for name, fn in _public(cls):
        hints = typing.get_type_hints(fn, localns=_type_checking_names(fn.__module__))
        for arg, tp in hints.items():
            where = f"{cls.__name__}.{name}({arg})"
            out += _walk(tp, where, set())
            out += [o for o in _any_inside(tp, where, set()) if o not in out]
    return out


def test_vault_api_has_no_any_and_no_dict_in_its_signatures() -> None:
    assert _offences(VaultAPI) == []


def test_vault_public_surface_has_no_any_and_no_dict() -> None:
    assert _offences(Vault) == []


def test_vault_implements_every_member_of_the_protocol() -> None:
    members = {n for n, _ in _public(VaultAPI)}
    assert len(members) > 40
    assert members <= {n for n, _ in _public(Vault)}


class _Bad:
    def a(self, x: typing.Any) -> None: ...
    def b(self) -> list[dict[str, int]]: ...
    @property
    def c(self) -> tuple[int, typing.Any] | None: ...
    @classmethod
    def d(cls, cb: Callable[[typing.Any], None]) -> int: ...
    def e(self) -> RunOutcome: ...  # its fields hold typed maps of numbers, no Any: allowed
    def _private(self) -> typing.Any: ...


@dataclasses.dataclass(frozen=True)
class _Row:
    payload: typing.Any


class _Worse:
    def f(self) -> tuple[_Row, ...]: ...


def test_the_guard_sees_any_and_dict_where_they_hide() -> None:
    assert sorted(_offences(_Bad)) == ["_Bad.a(x): Any", "_Bad.b(return): dict",
                                       "_Bad.c(return): Any", "_Bad.d(cb): Any"]
    assert _offences(_Worse) == ["_Worse.f(return): _Row.payload: Any"]


# --- the JSON form of the contract (what `kept ... --json` prints) stays as it was -------------

def test_json_form_keeps_the_keys_the_cli_printed_before_the_types() -> None:
    import json

    from app.api import (
        ContradictionItem,
        KdfInfo,
        LinkView,
        MemoryId,
        MemoryView,
        RunId,
        SourceView,
    )

    side = MemoryView(MemoryId(3), "Sam lives in Porto", "active", 1.5, 0.7, ("c:1",),
                      (MemoryId(1),))
    item = ContradictionItem(9, side, side, "lives_in", "open", None, 2.0, RunId(4))
    out = json.loads(json.dumps(dataclasses.asdict(item)))
    # Once dicts built in storage/inbox.py (issue 12): same keys, same order, lists for tuples.
    assert list(out["a"]) == ["id", "text", "status", "occurred_at", "confidence", "refs",
                              "sources"]
    assert out["a"]["refs"] == ["c:1"] and out["a"]["sources"] == [1]
    assert list(out) == ["id", "a", "b", "reason", "status", "resolution", "created_at",
                         "run_id", "kind"]
    assert dataclasses.asdict(KdfInfo("argon2id", 0x13, 65536, 3, 4)) == {
        "alg": "argon2id", "version": 0x13, "m_kib": 65536, "t": 3, "p": 4}
    assert list(dataclasses.asdict(SourceView(MemoryId(1), "episodic", "x", "r", None, None))
                ) == ["id", "store", "text", "ref", "speaker", "occurred_at"]
    assert list(dataclasses.asdict(LinkView(MemoryId(1), MemoryId(2), "SUPERSEDES", 1.0))
                ) == ["src", "dst", "kind", "weight"]


def test_run_outcome_reads_reports_of_every_version() -> None:
    from app.api import BatchFailure
    full = RunOutcome.from_json(
        '{"counts": {"facts_created": 2}, "ids": {"facts": [5, 6]}, "failed_batches": 1, '
        '"failures": [{"step": "extract", "error": "ValueError", "items": 1}], '
        '"llm_fallbacks": {"LlmUnavailable": 1}, "seconds": 0.25}')
    assert full == RunOutcome({"facts_created": 2}, {"facts": [5, 6]}, 1,
                              (BatchFailure("extract", "ValueError", 1),),
                              {"LlmUnavailable": 1}, 0.25)
    # Written before failures, fallbacks and seconds were recorded: defaults, no KeyError.
    old = RunOutcome.from_json('{"counts": {"archived": 3}, "ids": {}, "failed_batches": 0}')
    assert old == RunOutcome({"archived": 3}, {}, 0)
    assert RunOutcome.from_json("null") == RunOutcome({}, {}, 0)


def test_services_are_built_once_per_unlock(vault_dir: Path, fast_kdf: KdfParams) -> None:
    # They were properties that built a new service (and its caches) on every access.
    v = Vault.create(vault_dir, "pw-contract", kdf=fast_kdf, load_model=False, threaded=False,
                     use_chroma=False).vault
    try:
        assert isinstance(v, Vault)
        assert inside(v).recall is inside(v).recall
        assert inside(v).consolidation is inside(v).consolidation
    finally:
        v.lock()
