"""Changes said in passing, found by pairing turns rather than facts (issue 15).

The rules extractor reads a fact out of a turn only when the turn has a shape it knows; a
conversation mostly has not ("We had to postpone the wedding to next spring", "Finished
Pachinko and started Tomorrow, and Tomorrow, and Tomorrow"). Such a turn still says that
something the same person said earlier has changed or was wrong. Here a later turn of the same
speaker is paired with an earlier one when

- the later turn carries a change cue (postponed, moved to, finished, quit, no longer, down
  to, ...) or a correction cue (misspoke, "X, not Y", did I say ...);
- both are about the same thing: the embedding model finds them close (cosine at least
  ``MIN_SIMILARITY``) and they share a content word (a name, a noun: "wedding", "Biscuit");
- or, for a correction, the wrong value it names ("not Berlin") is in the earlier turn.

The verdict is ``update`` for a change and ``contradiction`` for a correction. Consolidation
never settles these on its own: they go to the Inbox for the person to decide, because the
pairing knows the topic but not which value is right. Measured on the natural development
set (``bench/natural_pairs.py``): see the note of issue 15.

Layer: app (pure functions, no I/O).
"""

from __future__ import annotations

import re

# The cosine of two turns' embeddings (all-MiniLM-L6-v2) at or above which they can be about
# the same thing. Natural dev set: .35 gave 3 false alarms of 63, .40 two, .45 one, with
# recall .82, .82, .78 (the cue and the shared word do most of the work).
MIN_SIMILARITY = 0.40

# "I misspoke", "I mixed that up", "did I say", "I said 32 earlier", "scratch that".
CORRECTION = re.compile(
    r"\b(misspoke|mixed (?:that|it|them|those) up|told you wrong|got (?:that|it) wrong|"
    r"that'?s not right|that was wrong|did i say|i said [^.,;!?]{1,30} (?:earlier|before)|"
    r"scratch that|i meant to say)\b", re.I)
# "Actually my birthday's July 14th, not the 4th": the wrong value is what follows "not".
_NOT_Y = re.compile(r"\b(?:actually|sorry|wait|oops|correction)\b[^.!?]*?,\s*not\s+(?:the\s+|a\s+"
                    r"|an\s+|my\s+)?([\w']+)", re.I)
# A change of something already said: the verbs people use for it, with the person or the
# thing as subject ("I quit the temp job", "the offsite got cancelled", "we're down to two").
CHANGE = re.compile(
    r"\b(pushed (?:back|to)|got pushed|(?:got|been|was|were|is) moved (?:\w+ ){0,2}to|"
    r"moved (?:my|our|the|it|\w+) (?:\w+ ){0,2}to|postponed?|(?:got|been|was|were|is) "
    r"cancell?ed|rescheduled|no longer|(?:\w+n't|not|no) [\w' ]{0,30}any ?more|switched to|"
    r"finished [^.!?]{1,40}\b(?:and|now) (?:started|i'?m)|(?:i|we|she|he) stopped|"
    r"(?:i|we|she|he) quit|(?:i|we|she|he) left|(?:i|we|she|he) closed|"
    r"lost (?:my|our) (?:\w+ )?job|passed away|"
    r"down to (?:just|only|one|two|three|four|five|\d)|"
    r"(?:is|'s|are|'re) (?:done|over|finished)|(?:got |been |was )?(?:traded|sold|"
    r"rehomed|adopted|hired|fired|laid off)|broke up|split up|moved (?:out|back|in|away)|"
    r"(?:i|we) moved to|got (?:married|engaged|divorced|promoted)|"
    r"(?:we'?re|i'?m) (?:engaged|divorced|married)|retired|graduated)\b",
    re.I)
_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
# Not a change of the speaker's own: a wish, a promise, advice ("I won't quit", "don't quit").
# Nor background to something else: "since I lost my job, things have been tough".
_NOT_SAID = re.compile(r"\b(?:won'?t|don'?t|never|not going to|gonna|will|would|should|"
                       r"if|hope|wish|might|may)\b[\w' ]{0,20}$|\b(?:since|after|when|"
                       r"because|'?cause|ever since)\s+(?:i|we|he|she|they|my|our)?\s*$",
                       re.I)

# Words too common to say two turns are about the same thing.
_COMMON = frozenset("""
about actually after again also always amazing anyway awesome back because been before being
both came come could days does doing done down earlier even every feel felt finally first from
getting going gonna good great have here honestly into just kinda know last life like little
look lots love lovely made make many more most much need never next only other over pretty
really right same should since some sorry still such sure take than thanks that their them
then there these they thing things think this those time today told totally very wait want
week weeks well were what when where which while will with would yeah year years your
tough hard wild happy glad excited sad fun cool nice crazy positive stay talk talked chat
chatting chatted hear heard news appreciate help helped lately recently hope hoping trying
passed away pushed moved cancelled canceled postponed rescheduled finished started stopped
quit left closed lost rehomed traded adopted sold hired fired laid over broke split switched
longer anymore home misspoke mixed wrong said meant scratch
the and you was are but for not can get got had has her him his its let our out she too who
why yes how all any day new now one two way see say off own old did put use try big lot bit
yet ago far few man guy hey wow aww ugh huh lol omg also i'm i've i'd i'll it's that's we're
we've you're they're don't can't won't didn't isn't there's here's what's let's she's he's
""".split())
_CONTENT = re.compile(r"[a-z][a-z']{2,}")
# Where a clause ends: the thing that changed is named in the clause of the cue.
_CLAUSE = re.compile(r",|;|:| - | (?:but|so|because|though) ", re.I)


def _cued(text: str) -> list[tuple[str, str]]:
    """(kind, sentence) of each statement (not a question) that says something changed
    (``update``) or was wrong (``contradiction``)."""
    out = []
    sentences = _SENTENCE.findall(text)
    for n, sentence in enumerate(sentences):
        if CORRECTION.search(sentence) or _NOT_Y.search(sentence):
            # "Wait, did I say third grade? She's in fourth grade": the remark, then the fix
            out.append(("contradiction", " ".join(sentences[n:n + 2])))
            continue
        if sentence.rstrip().endswith("?"):
            continue
        m = CHANGE.search(sentence)
        if m and not _NOT_SAID.search(sentence[:m.start()]):
            out.append(("update", sentence))
    return out


def cue(text: str) -> str | None:
    """``update`` or ``contradiction`` if the turn says something changed or was wrong."""
    kinds = [k for k, _ in _cued(text)]
    return "contradiction" if "contradiction" in kinds else kinds[0] if kinds else None


def content_words(text: str) -> set[str]:
    """Lower-case words of four letters or more, without common ones, plural "s" cut."""
    words = {re.sub(r"'s$", "", w).strip("'") for w in _CONTENT.findall(text.lower())}
    return {w[:-1] if w.endswith("s") and not w.endswith("ss") else w for w in words
            if len(w) > 2 and w not in _COMMON}


def verdict(earlier: str, later: str, similarity: float) -> str | None:
    """What the later turn of the same speaker does to the earlier one: ``update``,
    ``contradiction`` or None (nothing found). The sentence with the cue must share a content
    word with the earlier turn, and the earlier turn must not say the same change already
    ("since I lost my job" after "I lost my job")."""
    wrong = _NOT_Y.search(later)
    if wrong and re.search(rf"\b{re.escape(wrong.group(1))}\b", earlier, re.I):
        return "contradiction"
    if similarity < MIN_SIMILARITY:
        return None
    before = content_words(earlier)
    said_before = {m.group(0).lower() for rx in (CHANGE, CORRECTION)
                   for m in rx.finditer(earlier)}
    for kind, sentence in _cued(later):
        found = [m for rx in (CHANGE, CORRECTION, _NOT_Y) for m in rx.finditer(sentence)]
        if {m.group(0).lower() for m in found} & said_before:
            continue
        if kind == "contradiction":  # the fix follows the remark, anywhere in it
            if before & content_words(sentence):
                return kind
            continue
        for m in found:  # the thing that changed is named in the cue's own clause
            starts = [c.end() for c in _CLAUSE.finditer(sentence, 0, m.start())]
            stop = _CLAUSE.search(sentence, m.end())
            near = sentence[starts[-1] if starts else 0:stop.start() if stop else None]
            if before & content_words(near):
                return kind
    return None
