"""Features of a learned judge tried for issue 23 item 7 (not used by Kept; see
train_pair_judge.py for what it measured): did the later of two things one person said
change or correct the earlier one, or can both hold?

Rules over phrasings do not carry over: the rules written for the natural development set
found .82 of its conflicts and .13 of the same pairs said in other words
(``tests/data/natural_pairs_reworded.jsonl``). This judge reads what carries over instead:
how close the two turns are in meaning (the embedding model), whether they are about the same
slot of life (``app.services.slots``) and share content words, whether the later one names a
value the earlier did not (a name, a number, a word of the slot's vocabulary) and drops one it
named, general words of change and of correction, negation on one side only, a plan or a
question on either side, and the time between them. Its weights are a logistic regression
fitted on the three development sets together (the natural pairs, their rewordings and real
LoCoMo pairs) by ``bench/train_pair_judge.py``, which also reports its cross-validated
precision and recall (grouped, so a pair and its rewordings never fall on both sides).

No registry package ships a licensed NLI model (searched: 67 candidates on PyPI, npm and
Debian; the one that ships weights has no licence): see the closing note of issue 23.
"""

from __future__ import annotations

import math
import re

from app.services import slots
from app.services.text import content_tokens

# General words of change and of correction (English), not phrasings of any sentence.
_CHANGE = re.compile(
    r"\b(?:now|nowadays|these days|any ?more|no longer|no more|instead|switch(?:ed|ing)?|"
    r"mov(?:ed|ing)|start(?:ed|ing)|stopp?(?:ed|ing)|quit|left|finish(?:ed|ing)|new|"
    r"chang(?:ed|ing|e)|became|become|got|since|as of|from now on|finally|recently|lately|"
    r"gave up|took up|join(?:ed|ing)|signed up|retir(?:ed|ing)|graduat(?:ed|ing)|promot(?:ed|ion)|"
    r"hired|fired|laid off|broke up|split|married|engaged|divorced|adopted|lost|passed away|"
    r"sold|bought|upgraded|replaced|back to|returned|over|done with|used to|anymore|cancel+ed|"
    r"postponed|pushed|resched\w*|moved to|turned|grew|down to|up to)\b", re.I)
_CORRECTION = re.compile(
    r"\b(?:actually|wait|sorry|correction|i meant|meant to say|misspoke|wrong|mistake|"
    r"my bad|oops|scratch that|i mean|to be clear|mixed (?:it|that|them) up|typo|rather|"
    r"not (?:the )?\w+,|, not)\b", re.I)
_NEG = re.compile(r"\b(?:not|no|never|none|nothing|n't|without)\b|n't\b", re.I)
_PLAN = re.compile(r"\b(?:plan(?:ning)?|going to|gonna|will|want to|hope|hoping|thinking "
                   r"(?:about|of)|might|maybe|considering|soon|next (?:week|month|year)|"
                   r"would like|wish)\b", re.I)
_VALUE = re.compile(r"\d+(?:[:.,]\d+)?(?:st|nd|rd|th)?|(?<![.!?]\s)(?<!^)\b(?!I\b)"
                    r"[A-Z][\w'-]+|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|"
                    r"first|second|third|fourth|fifth)\b")

FEATURES = ("bias", "cos", "topic", "shared", "new_value", "lost_value", "change_b",
            "change_a", "correction_b", "neg_b_only", "neg_a_only", "plan_a", "plan_b",
            "question", "gap", "len_ratio", "cos_x_new_value", "topic_x_change")


def _values(text: str, topics: tuple[str, ...]) -> set[str]:
    found = {m.group(0).casefold().strip(",.") for m in _VALUE.finditer(text)}
    for t in topics:
        rx = slots._patterns().get(t)  # the slot's vocabulary words it uses ("soy", "yoga")
        if rx is not None:
            found |= {m.group(0).casefold() for m in rx.finditer(text)}
    return found


def features(a: str, b: str, days: float, cos: float) -> list[float]:
    """The judge's inputs for "a", said first, and "b", said ``days`` later by the same
    person; ``cos`` is their embeddings' cosine (0 without the model)."""
    ta, tb = slots.slots_of(a), slots.slots_of(b)
    topic = len(set(ta) & set(tb)) / max(1, len(set(ta) | set(tb)))
    ca, cb = set(content_tokens(a)), set(content_tokens(b))
    shared = len(ca & cb) / max(1, min(len(ca), len(cb)))
    va, vb = _values(a, ta), _values(b, tb)
    new_value = float(bool(vb - va))
    lost_value = float(bool(va - vb))
    change_b = float(bool(_CHANGE.search(b)))
    na, nb = bool(_NEG.search(a)), bool(_NEG.search(b))
    return [1.0, cos, topic, shared, new_value, lost_value, change_b,
            float(bool(_CHANGE.search(a))), float(bool(_CORRECTION.search(b))),
            float(nb and not na), float(na and not nb), float(bool(_PLAN.search(a))),
            float(bool(_PLAN.search(b))), float(a.rstrip().endswith("?") or
                                                b.rstrip().endswith("?")),
            math.log1p(max(0.0, days)) / 5.0, min(len(a), len(b)) / max(1, len(a), len(b)),
            cos * new_value, topic * change_b]
