"""Recall's second hop (issue 27 item 7): what is linked to the best hits counts a little for
questions whose answer is spread over several memories (LoCoMo's multi-hop questions). Layer:
app. Pure apart from the reads it is given.

After the first ranking, the ``seeds`` best candidates lend a share (``weight``) of their
score to the candidates connected to them: through a link (PRECEDED_BY either way, the turn
before or after on the same topic, even in another conversation; RELATES_TO, facts about the
same person; REINFORCES, a turn that said a fact again; SIMILAR_TO) and through a person or
topic both mention (``sharing_entities``, narrow entities only). A candidate keeps the largest
share it is offered, recorded as ``hop`` in its score parts (explain shows it). Only memories
already among the candidates move: a hop never brings in one the question did not match at
all.

Off by default: on LoCoMo dev it did not raise multi-hop R@10 without lowering overall
R@10/R@5 (the figures are in ``RecallTuning.hop_weight``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

# The link kinds a hop follows: sequence, shared people, corroboration, near duplicates.
HOP_KINDS = ("PRECEDED_BY", "RELATES_TO", "REINFORCES", "SIMILAR_TO")


@dataclass(frozen=True, slots=True)
class Hops:
    weight: float          # share of a seed's score lent to what it is connected to; 0: off
    seeds: int             # how many of the best candidates lend
    entities: bool         # also through people and topics both mention
    broad: int             # an entity more memories than this mention joins nothing


Neighbours = Callable[[Sequence[int]], Mapping[int, set[int]]]


def lend(scored: dict[int, dict[str, float]], hops: Hops, neighbours: Sequence[Neighbours]
         ) -> int:
    """Raise the candidates connected to the ``hops.seeds`` best (by ``final``) by
    ``hops.weight`` times the seed's query-dependent score (``relevance`` parts, not
    strength). Returns how many candidates moved."""
    if hops.weight <= 0 or not scored:
        return 0
    seeds = sorted(scored, key=lambda i: -scored[i]["final"])[:hops.seeds]
    offer: dict[int, float] = {}
    for read in neighbours:
        for seed, near in read(seeds).items():
            share = hops.weight * scored[seed]["relevance"]
            for n in near:
                if n in scored and n not in seeds and share > offer.get(n, 0.0):
                    offer[n] = share
    for n, share in offer.items():
        scored[n]["hop"] = round(share, 4)
        scored[n]["final"] += share
    return len(offer)
