"""One entity per thing (issue 27 item 3; reference 000's PARA entities, one note per thing).
Layer: app (pure functions, no SQL). Used by consolidation's entities step
(``pipeline.Pipeline._merge_entities``).

Two entities of one scope are the same thing when:

- **kind**: they have the same name under two kinds ("Spanish" a person, because it is
  capitalised, and a resource, because "I'm learning Spanish"). The kind a cue gave wins over
  'person', which is only the fallback for a capitalised word (``extract.mentions``);
- **name**: their names are the same once titles ("Dr.", "Mrs."), possessives and family
  words ("Mum", "Mom", "Mother") are folded;
- **embedding**: one name is the other with words that do not change what it names: a
  leading modifier ("online", "Grandma's"), a trailing generic head ("project", "app",
  "lessons") or company suffix ("Traders"), or a tail that says where or how ("on Duolingo")
  *and* the two names' MiniLM embeddings are at least ``policy.ENTITY_MERGE_COSINE`` close.
  "Half marathon" / "Marathon" and "Anna's bakery" / "Anna" differ by a word that changes
  the thing, so they never reach the embedding test.

Names that only look alike ("Java" / "JavaScript", "Sam" / "Samantha") are never merged:
precision first (a wrong merge hides a thing; a missed one only shows it twice).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from app.ports import Scope

PERSON = "person"
# Kinds that may name one thing under two readings (besides 'person', the fallback).
_COMPATIBLE = {frozenset(("resource", "work")), frozenset(("area", "resource"))}
_TITLES = frozenset("dr dr. doctor mr mr. mrs mrs. ms ms. miss prof prof. professor "
                    "aunt auntie uncle".split())
_FAMILY = {w: "mother" for w in "mum mom mommy mummy mother mama ma mam".split()}
_FAMILY |= {w: "father" for w in "dad daddy father papa pa pop".split()}
_FAMILY |= {w: "grandmother" for w in "grandma granny grandmother nana nan gran".split()}
_FAMILY |= {w: "grandfather" for w in "grandpa granddad grandad grandfather".split()}
# Words before a name that do not change what it names ("online photography course").
_MODIFIERS = frozenset("online evening night weekly daily free new my our the a an".split())
# Words after a name that do not change it ("garden project", "Notion app").
_HEADS = frozenset("project projects app application lessons lesson practice training "
                   "programming plan traders inc inc. ltd ltd. llc co co. corp group "
                   "company studio studios hospital clinic".split())
_TAIL_PREPOSITIONS = frozenset("on at with via in using through".split())


@dataclass(frozen=True, slots=True)
class Named:
    name: str
    kind: str


@dataclass(frozen=True, slots=True)
class EntityItem:
    id: int
    scope: Scope
    name: str
    kind: str
    mentions: int


def _words(name: str) -> list[str]:
    out = []
    for w in name.casefold().replace("’", "'").split():
        w = w.removesuffix("'s").strip(",.'\"")
        if w:
            out.append(_FAMILY.get(w, w))
    while len(out) > 1 and out[0] in _TITLES:
        out.pop(0)
    return out


def _extra_is_neutral(short: list[str], long: list[str]) -> bool:
    """Whether ``long`` is ``short`` with words that do not change the thing."""
    n = len(short)
    for i in range(len(long) - n + 1):
        if long[i:i + n] != short:
            continue
        before, after = long[:i], long[i + n:]
        raw_before_ok = all(w in _MODIFIERS or w in _FAMILY.values() for w in before)
        after_ok = (not after or all(w in _HEADS for w in after)
                    or after[0] in _TAIL_PREPOSITIONS)
        if raw_before_ok and after_ok:
            return True
    return False


def _possessive_lead(name: str) -> bool:
    """Whether a name is someone's thing ("Anna's bakery"): the possessor is not the thing."""
    first = name.split()[0] if name.split() else ""
    return first.casefold().replace("’", "'").endswith("'s") and len(name.split()) > 1


def name_variant(a: Named, b: Named) -> str | None:
    """'kind' or 'name' when the names alone prove one thing; 'variant' when one name is the
    other with neutral words (an embedding must then agree); None otherwise."""
    wa, wb = _words(a.name), _words(b.name)
    if not wa or not wb:
        return None
    same_kind = a.kind == b.kind or frozenset((a.kind, b.kind)) in _COMPATIBLE
    if wa == wb:
        if a.name.casefold() == b.name.casefold() and a.kind != b.kind:
            return "kind"
        if same_kind and _possessive_lead(a.name) == _possessive_lead(b.name):
            return "name"
        return None
    if not same_kind:
        return None
    (short, short_name), (long, long_name) = sorted(((wa, a.name), (wb, b.name)),
                                                    key=lambda p: len(p[0]))
    if len(short) == len(long):
        return None
    if _possessive_lead(long_name) and not _possessive_lead(short_name) \
            and long[0] == short[0]:
        return None  # "Anna" / "Anna's bakery": the owner and her thing
    if _head_only(short, long):
        return "name"  # "Kitewood" / "Kitewood Studio", "Notion" / "Notion app"
    return "variant" if _extra_is_neutral(short, long) else None


def _head_only(short: list[str], long: list[str]) -> bool:
    """Whether ``long`` is ``short`` followed only by generic heads (``_HEADS``: "Studio",
    "app", "project", "Ltd"): the same name with the word that says what sort of thing it is,
    which no embedding needs to confirm (issue 27 row 8: "Kitewood" / "Kitewood Studio" sat at
    cosine .80, the threshold)."""
    n = len(short)
    return long[:n] == short and len(long) > n and all(w in _HEADS for w in long[n:])


def same_thing(a: Named, b: Named, cosine: float, threshold: float) -> str | None:
    """Why ``a`` and ``b`` are one thing ('kind', 'name' or 'embedding'), or None."""
    why = name_variant(a, b)
    if why == "variant":
        return "embedding" if cosine >= threshold else None
    return why


def _keeps(a: EntityItem, b: EntityItem) -> tuple[EntityItem, EntityItem]:
    """(kept, merged): a cue's kind over 'person'; then more mentions; then the older."""
    if (a.kind == PERSON) != (b.kind == PERSON):
        return (b, a) if a.kind == PERSON else (a, b)
    if a.mentions != b.mentions:
        return (a, b) if a.mentions > b.mentions else (b, a)
    return (a, b) if a.id < b.id else (b, a)


def plan(entities: Sequence[EntityItem], embed: Callable[[list[str]], np.ndarray | None],
         threshold: float, distinct: Iterable[tuple[int, int]]
         ) -> list[tuple[int, int, str]]:
    """The merges to make, in order: (kept id, merged id, reason). An entity merged away
    takes no further part in this run (the next run merges what remains); pairs in ``distinct`` (the person said
    they are different things) never merge. ``embed`` is called once, only for the names of
    variant pairs; without a model (None) variant pairs stay apart."""
    apart = {frozenset(p) for p in distinct}
    by_scope: dict[Scope, list[EntityItem]] = {}
    for e in entities:
        by_scope.setdefault(e.scope, []).append(e)
    pairs: list[tuple[EntityItem, EntityItem, str]] = []
    for items in by_scope.values():
        for i, a in enumerate(items):
            for b in items[i + 1:]:
                if frozenset((a.id, b.id)) in apart:
                    continue
                why = name_variant(Named(a.name, a.kind), Named(b.name, b.kind))
                if why is not None:
                    pairs.append((a, b, why))
    names = sorted({e.name for a, b, why in pairs if why == "variant" for e in (a, b)})
    vecs = embed(names) if names else None
    vec = {} if vecs is None else dict(zip(names, vecs, strict=True))
    out: list[tuple[int, int, str]] = []
    gone: set[int] = set()  # merged this run: neither kept nor merged again until the next
    order = {"kind": 0, "name": 1, "variant": 2}
    for a, b, why in sorted(pairs, key=lambda p: (order[p[2]], p[0].id, p[1].id)):
        if a.id in gone or b.id in gone:
            continue
        if why == "variant":
            if a.name not in vec or b.name not in vec:
                continue
            va, vb = vec[a.name], vec[b.name]
            cos = float(va @ vb / ((np.linalg.norm(va) * np.linalg.norm(vb)) or 1.0))
            if cos < threshold:
                continue
            why = "embedding"
        kept, merged = _keeps(a, b)
        out.append((kept.id, merged.id, why))
        gone.add(merged.id)
    return out

