"""Open slots, named by a small lexicon of everyday life (issue 23 item 2). Layer: app. Pure.

A slot is one thing about a holder that has a value at a time: where they work, who manages
them, where they live, how they get to work, their gym, their milk, their vet, what they are
reading. People name a slot in many words ("first day at", "my boss", "report to", "the
office" are all about work), so each slot is a set of words and short phrases, the vocabulary
of the concept, not sentences: a turn is about a slot when it uses that vocabulary, and a
question asks about a slot the same way. Tags go into the full-text keys of a memory
(``slot_tag``), so "where do I work" meets "First day at Kitewood today!" through the tag of
the job slot, whatever the words.

Written from everyday vocabulary, not from any development sentence; the stories and the
natural pairs measure it (``bench/stories.py``, ``bench/natural_pairs.py``).
"""

from __future__ import annotations

import re
from functools import lru_cache

# slot -> vocabulary (words match whole words; "x y" is a phrase). Kept short and concrete:
# a word that belongs to many slots ("new", "now", "usual") belongs to none.
SLOTS: dict[str, tuple[str, ...]] = {
    "job": ("job", "jobs", "employer", "company", "office", "offices", "workplace",
                 "hired", "hiring", "job offer", "the offer", "accepted the offer",
                 "onboarding", "first day", "first week", "last day", "notice period",
                 "handed in my notice", "resigned", "resign", "laid off", "fired", "contract",
                 "colleague", "colleagues", "coworker", "coworkers", "co-worker", "team",
                 "interview", "interviews", "at work", "for work", "to work", "from work",
                 "where i work", "work at", "works at", "working at", "work for",
                 "works for", "working for", "joined", "startup", "studio", "firm", "agency",
                 "role", "title", "job title", "position", "promoted", "promotion", "senior",
                 "junior", "intern", "internship", "for a living", "career", "profession",
                 "occupation", "designer", "engineer", "analyst", "developer", "nurse",
                 "teacher", "researcher", "consultant", "freelance", "freelancer"),
    "manager": ("manager", "boss", "line manager", "report to", "reports to", "reporting to",
                "my lead", "team lead", "supervisor", "1:1", "one-on-one", "one to one",
                "skip level", "direct report"),
    "home": ("live", "lives", "living", "moved", "move", "moving", "flat", "apartment",
             "apartments", "house", "home", "place", "neighbourhood", "neighborhood", "area",
             "city", "town", "rent", "lease", "landlord", "address", "unpacked", "unpacking",
             "boxes", "new place", "settled in", "relocate", "relocated", "based in"),
    "commute": ("commute", "commuting", "train", "bus", "tram", "subway", "metro", "tube",
                "line", "bike", "cycle", "cycling", "drive", "driving", "ride",
                "get to work", "to the office", "station", "stop"),
    "gym": ("gym", "gyms", "membership", "class", "classes", "workout", "workouts",
            "work out", "working out", "yoga", "pilates", "crossfit", "boxing", "spin",
            "weights", "lifting", "swim", "swimming", "pool", "climbing", "studio"),
    "running": ("run", "runs", "running", "ran", "jog", "jogging", "route", "loop", "trail",
                "path", "park", "track", "tempo", "long run", "miles", "km", "5k", "10k"),
    "training": ("training for", "train for", "race", "marathon", "half marathon",
                 "triathlon", "10k", "5k", "signed up", "sign up", "event", "plan",
                 "physio", "injury", "injured", "knee", "calves"),
    "cafe": ("cafe", "café", "coffee shop", "coffee place", "barista", "regular", "latte", "flat white", "espresso"),
    "milk": ("milk", "oat", "soy", "almond", "dairy", "lactose", "creamer", "cream"),
    "drink": ("drink", "drinking", "coffee", "tea", "matcha", "decaf", "caffeine", "juice",
              "smoothie", "morning drink", "cup"),
    "diet": ("diet", "vegan", "vegetarian", "pescatarian", "keto", "paleo", "gluten",
             "fasting", "mediterranean", "carbs", "sugar",
             "calories", "meat", "dairy-free", "allergic", "allergy", "intolerance", "intolerances"),
    "reading": ("reading", "read", "book", "books", "novel", "chapter", "finished",
                "author", "audiobook", "kindle", "library", "series"),
    "watching": ("watching", "watch", "show", "series", "season", "episode", "netflix",
                 "film", "movie", "binge"),
    "listening": ("listening", "podcast", "album", "playlist", "band", "song"),
    "language": ("language", "learning", "duolingo", "lesson", "lessons", "spanish",
                 "french", "german", "italian", "portuguese", "japanese", "mandarin",
                 "fluent", "practice", "practise"),
    "pet": ("dog", "cat", "puppy", "kitten", "pet", "pets", "walker", "walks", "walk",
            "breed", "kibble", "food", "treats", "vet"),
    "vet": ("vet", "vets", "veterinarian", "veterinary", "clinic", "booster", "vaccine",
            "jabs", "check-up", "checkup"),
    "doctor": ("doctor", "gp", "dr", "physician", "clinic", "dentist", "dental", "surgery",
               "therapist", "physio", "appointment", "prescription", "specialist"),
    "appointment": ("appointment", "appointments", "booked", "booking", "rescheduled",
                    "moved to", "pushed", "postponed", "cancelled", "canceled",
                    "o'clock", "tomorrow", "monday", "tuesday", "wednesday",
                    "thursday", "friday", "saturday", "sunday", "exam", "meeting",
                    "check-up"),
    "birthday": ("birthday", "bday", "born", "turns", "turning", "party", "cake"),
    "date": ("date", "dates", "wedding", "anniversary", "party",
             "the 1st", "the 2nd", "the 3rd", "th"),
    "partner": ("partner", "girlfriend", "boyfriend", "wife", "husband", "fiance", "fiancé",
                "fiancee", "fiancée", "other half", "dating", "married", "engaged",
                "moving in together", "together"),
    "family": ("mum", "mom", "mother", "dad", "father", "sister", "brother", "parents",
               "grandma", "grandpa", "nan", "aunt", "uncle", "cousin",
               "son", "daughter", "kids"),
    "school": ("school", "university", "uni", "college", "course", "degree", "class",
               "semester", "study", "studying", "exam", "exams", "thesis"),
    "project": ("project", "projects", "working on", "launch", "release", "deadline",
                "ship", "game", "app", "client", "pitch", "feature", "deck"),
    "meetings": ("meetings", "meeting", "mornings", "afternoons", "calendar", "schedule",
                 "standup", "stand-up", "1:1", "sync"),
    "seat": ("seat", "aisle", "window seat", "flight", "flights", "plane", "legroom"),
    "car": ("car", "cars", "drive", "driving", "lease", "ev", "electric", "hybrid"),
    "phone": ("phone", "iphone", "android", "pixel", "samsung"),
    "hobby": ("hobby", "hobbies", "painting", "pottery", "guitar", "piano", "knitting",
              "gardening", "photography", "chess", "baking", "choir"),
    "health": ("sick", "ill", "flu", "cold", "covid", "injury", "injured", "pain", "hurt",
               "sprained", "broken", "recovering", "recovered", "better", "medication",
               "meds", "diagnosed", "allergy"),
}
TAG_PREFIX = "kslot"  # a word no text uses: one full-text token per slot


def slot_tag(slot: str) -> str:
    return TAG_PREFIX + slot.replace("_", "")


@lru_cache(maxsize=1)
def _patterns() -> dict[str, re.Pattern[str]]:
    out = {}
    for slot, words in SLOTS.items():
        alts = sorted({re.escape(w) for w in words}, key=len, reverse=True)
        out[slot] = re.compile(r"(?<![\w'])(?:" + "|".join(alts) + r")(?![\w'])", re.I)
    return out


def slots_of(text: str) -> tuple[str, ...]:
    """The slots a text uses the vocabulary of, each once, in the order of SLOTS."""
    if text.isascii():  # the same answer, from the few slots its words can start (_leads)
        words = set(_TOKEN.findall(text.lower()))
        leads = _leads()
        maybe = {s for w in words for s in leads.get(w, ())} | leads[""]
        return tuple(s for s, rx in _patterns().items() if s in maybe and rx.search(text))
    return tuple(s for s, rx in _patterns().items() if rx.search(text))


# A slot's pattern matches a phrase standing alone (no word character or apostrophe on either
# side), so the text's own [\w']+ run where the match starts is the phrase's first run ("get"
# for "get to work"): a slot none of whose first runs is among the text's runs cannot match.
# Recall asks this of up to 60 texts a query; trying every slot's pattern on each was 7.5 ms
# of a 29 ms recall (10k memories, bench/scale.py, dev). ASCII only: re.I folds a few
# non-ASCII letters ("K" Kelvin, long s) that str.lower() does not.
_TOKEN = re.compile(r"[\w']+")


@lru_cache(maxsize=1)
def _leads() -> dict[str, frozenset[str]]:
    r"""First [\w']+ run of each phrase (lower case) -> the slots it belongs to; "" -> the
    slots with a phrase that does not start with one (always tried)."""
    out: dict[str, set[str]] = {"": set()}
    for slot, words in SLOTS.items():
        for w in words:
            m = _TOKEN.match(w.lower())
            out.setdefault(m.group(0) if m else "", set()).add(slot)
    return {k: frozenset(v) for k, v in out.items()}


def tags(text: str) -> str:
    """Full-text keys for the slots of ``text`` ("kslotjob kslotcommute")."""
    return " ".join(slot_tag(s) for s in slots_of(text))


# How questions name a slot with a bare verb ("where do I work", "where does she live").
_ASKED = (
    (re.compile(r"\bget(?:s|ting)? to work\b|\bcommute\b", re.I), "commute"),
    (re.compile(r"\bwork(?:s|ing)?\b(?!\s*(?:out|outs)\b)", re.I), "job"),
    (re.compile(r"\b(?:work(?:s|ing)? out|exercise)\b", re.I), "gym"),
    (re.compile(r"\b(?:live|lives|living|stay(?:s|ing)?)\b(?<!for a living)", re.I), "home"),
    (re.compile(r"\bread(?:s|ing)?\b", re.I), "reading"),
    (re.compile(r"\bwatch(?:es|ing)?\b", re.I), "watching"),
    (re.compile(r"\b(?:eat|eats|eating|food)\b", re.I), "diet"),
    (re.compile(r"\bdrink(?:s|ing)?\b", re.I), "drink"),
    (re.compile(r"\brun(?:s|ning)?\b", re.I), "running"),
    (re.compile(r"\bdo for a living|\bdo for work\b", re.I), "job"),
)


def question_slots(question: str) -> tuple[str, ...]:
    """The slots a question asks about: its vocabulary, and the bare verbs questions use."""
    found = list(slots_of(question))
    for rx, slot in _ASKED:
        if rx.search(question) and slot not in found:
            found.append(slot)
    return tuple(found)


# The names slots are given ("works at", "employer", "job"...) meet: an assistant's attribute and
# an LLM's predicate are read as one of these (lower case, spaces and dashes as "_").
PREDICATE_SYNONYMS: dict[str, str] = {
    **dict.fromkeys(("employer", "company", "workplace", "works_for", "work_at", "work_for",
                     "working_at", "working_for", "work", "place_of_work", "employed_at",
                     "employed_by", "office"), "works_at"),
    **dict.fromkeys(("role", "title", "job_title", "position", "occupation", "profession",
                     "works_as", "work_as", "career"), "job"),
    **dict.fromkeys(("home", "city", "address", "lives", "live_in", "living_in", "residence",
                     "location", "home_city", "based_in", "neighbourhood", "neighborhood"),
                    "lives_in"),
    **dict.fromkeys(("spouse", "husband", "wife", "girlfriend", "boyfriend", "significant_other",
                     "other_half"), "partner"),
    **dict.fromkeys(("boss", "manager", "line_manager", "reports_to", "supervisor"), "manager"),
    **dict.fromkeys(("milk", "milk_in_coffee", "coffee_milk", "milk_choice", "milk_preference"),
                    "milk"),
    **dict.fromkeys(("vet", "veterinarian", "veterinary", "vet_clinic"), "vet"),
    **dict.fromkeys(("gym", "gym_membership", "fitness_club"), "gym"),
    **dict.fromkeys(("current_book", "reading_now", "book"), "current_book"),
    **dict.fromkeys(("dob", "date_of_birth", "born_on", "bday"), "birthday"),
    **dict.fromkeys(("diet_type", "eating", "eats"), "diet"),
}


def canonical_predicate(name: str) -> str:
    """One name per slot: "Works at" -> "works_at", "employer" -> "works_at", "milk in
    coffee" -> "milk"; an unknown name stays itself, in snake case."""
    key = "_".join(name.strip().lower().replace("-", " ").split())
    return PREDICATE_SYNONYMS.get(key, key)
