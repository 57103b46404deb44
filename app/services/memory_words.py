"""What the person says about their memory, in conversation (issue 23 item 5). Layer: app.
Pure.

"Please forget what I told you about my brother" is not one more thing about the brother: it
is a request to forget, which consolidation files for the person to confirm (never carried out
on its own, and never a source of facts). General words of asking to forget, not sentences;
reminders ("don't forget to call Mum") and memories ("I'll never forget that trip") are not
requests.
"""

from __future__ import annotations

import re

_ASK = re.compile(
    r"(?<![\w'])(?<!never )(?<!not )(?<!n't )(?<!won't )(?<!'ll )(?<!will )(?<!to )"
    r"(?:forget|delete|erase|wipe|unlearn|stop remembering|(?:don't|do not) (?:remember|keep|"
    r"store|save))\b"
    r"(?:\s+(?:what|everything|anything|all(?: of)?(?: what)?|the (?:things?|stuff|bits?|part)"
    r"(?: that)?)\s+(?:i(?:'ve| have)?\s+)?(?:told|said(?: to)?|shared(?: with)?|mentioned"
    r"(?: to)?|wrote)(?:\s+you)?)?"
    r"(?:\s+(?:about|regarding|on|re|concerning|of))?\s+(?P<topic>[^.!?\n;]{2,80})", re.I)
_CUT = re.compile(r"\s+(?:because|since|as|he|she|they|it's|its|that's|please|pls|thanks|"
                  r"thank you|ok|okay|if|so|but)\b.*$|\s*[,-].*$", re.I)
_PRONOUN = re.compile(r"^(?:it|that|this|them|those|these|him|her|me|everything|anything|"
                      r"all|about it|about that|that one)$", re.I)
_LEAD = re.compile(r"^(?:about|the|that|my|our)\s+", re.I)


def forget_request(text: str) -> str | None:
    """The topic the person asks to forget ("luis's divorce", "Owen's dad and his drinking"),
    or None when the turn asks nothing of the kind."""
    for m in _ASK.finditer(text):
        head = text[max(0, m.start() - 12):m.start()].lower()
        if re.search(r"\b(?:don't|do not|never|not|won't)\s*$", head):
            continue  # "don't forget to ...", "never forget ..."
        topic = _CUT.sub("", m.group("topic")).strip(" '\"")
        topic = _LEAD.sub("", topic).strip()
        if not topic or _PRONOUN.match(topic) or topic.lower().startswith("to "):
            continue
        return topic
    return None
