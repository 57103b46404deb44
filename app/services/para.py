"""PARA entities from what people say (issue 15 item 4; docs/memory-model.md#people-and-projects;
reference 000 and 001): projects, areas and resources, besides the people and companies that
``extract.mentions`` finds. Layer: app (pure functions, no SQL). Used by consolidation's entities
step (``pipeline._step_entities``); the markdown export files entities by kind (``export.FOLDERS``),
so this module is the one place that decides a thing's kind.

- **Projects**: efforts with a goal or a deadline that someone is engaged in: "I'm writing a
  children's book", "we're renovating the kitchen", "my garden project", "the grant deadline
  is Friday", "project Apollo".
- **Areas**: ongoing responsibilities with no end date. The life areas (health, finances,
  family, home, career) are named by fixed cue phrases ("my doctor", "our mortgage", "my
  kids"); a hobby practised over time is named by the activity once someone says they do it
  ("I play the violin", "my pottery class", "I took up running").
- **Resources**: what someone reads or studies: books ("reading 'Atomic Habits'"), courses
  ("a photography course"), tools ("I use Notion for ..."), recipes ("grandma's lasagna
  recipe"), topics ("I'm learning Spanish", "I've been reading about astronomy").

Two passes, per scope (an agent and a context; nothing crosses scopes, docs/memory-model.md#scope):

1. ``introduced``: the statements that introduce a project, resource or hobby and say what
   kind it is. Only first-person statements ("I", "we", "my", "our") introduce anything: a
   person's projects are their own, not ones they heard of.
2. ``Matcher``: every memory of the scope that names an introduced thing (or says a life
   area's cue phrase) mentions it. An entity is made when at least ``ENTITY_MIN_MENTIONS``
   memories mention it (000), exactly as for people.

Names are noun phrases without their article ("a children's book" -> "Children's book");
generic heads ("a lot", "a difference", "a break") introduce nothing.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from app.ports import MentionSource, Scope

PROJECT, AREA, RESOURCE = "project", "area", "resource"
_NOT_PEOPLE = frozenset(("assistant", "system"))  # speakers whose "I" is no person
Key = tuple[str, str]  # (name casefolded, kind)

# --- life areas: ongoing responsibilities named by fixed cue phrases --------------------------
# Each cue is a phrase about the person's own responsibility ("my doctor", not "doctor"), so a
# passing word ("the money was good") does not count.
_MY = r"(?:my|our)(?: own| new| old| little| two| three)?"
LIFE_AREAS: dict[str, re.Pattern[str]] = {name: re.compile(pattern, re.I) for name, pattern in {
    "Health": r"\b(?:my|our) (?:health|doctor|doctors|physio|physiotherapist|therapist|therapy|"
              r"diet|medication|meds|blood pressure|check-?up|injury|recovery|surgery|sleep|"
              r"fitness|workouts?|mental health)\b|\b(?:i|we)(?:'ve| have)? (?:\w+ )?(?:been )?"
              r"(?:working out|going to the gym|eating healthier|seeing a therapist)\b|"
              r"\bi(?:'m| am) allergic\b|\b(?:is|are) allergic to\b|\bcheck-?ups?\b|"
              r"\b(?:my|our) (?:knee|back|ankle|shoulder|wrist|hip|neck|foot|leg|arm|"
              r"elbow)s? (?:hurts?|aches?|pain|injury|is (?:better|worse|healing|sore))\b|"
              # care that is the person's own whoever names it (issue 27 item 3)
              r"\b(?:physio|physiotherapy|physiotherapist|rehab|dentist|prescriptions?|"
              r"blood tests?|x-rays?|mri scan)\b",
    "Finances": r"\b(?:my|our) (?:finances|budget|savings|mortgage|debt|loan|loans|rent|bills|"
                r"taxes|retirement|investments?|salary|paycheck|credit card)\b|\b(?:i|we)(?:'re|"
                r"'m| am| are)? (?:\w+ )?(?:saving (?:up|money)|paying off|budgeting)\b|"
                r"\b(?:the|pay|paying|paid|our|my) rent\b|\brent (?:is|was|went|goes|"
                r"increase|rise)\b",
    "Family": r"\b" + _MY + r" (?:family|kids|children|son|daughter|husband|wife|parents|mom|"
              r"mum|dad|mother|father|grandkids|grandchildren|little ones)\b|\bbeing a "
              r"(?:mom|mum|dad|parent|mother|father)\b|\bparenting\b",
    "Home": r"\b(?:my|our) (?:house|home|apartment|flat|garden|yard|backyard|kitchen|"
            r"landlord|roof|lawn)\b|\b(?:renovating|remodel+ing|redecorating|cleaning|fixing "
            r"up) (?:my|our) \w+|\b(?:housework|chores|decluttering)\b",
    "Career": r"\b(?:my|our) (?:career|job|boss|manager|colleagues?|coworkers?|co-workers?|"
              r"clients?|promotion|workplace|office|shift|shifts)\b|\bjob (?:search|hunt|"
              r"hunting|interview|offer)\b|\b(?:my|a) (?:resume|cv)\b|"
              r"\b(?:at|after|before|from) work\b",
}.items()}

# --- hobbies: areas named by the activity once someone says they practise it -----------------
# activity -> the word forms that mention it later
_HOBBY_FORMS: dict[str, str] = {
    "painting": r"paint(?:s|ed|ing|ings|er)?", "drawing": r"draw(?:s|ing|ings)?|sketch\w*",
    "pottery": r"pottery|ceramics", "photography": r"photograph\w*|camera",
    "running": r"running|jogging|marathons?|\d+k runs?", "hiking": r"hik(?:e|es|ed|ing)",
    "cycling": r"cycling|biking|bike rides?", "swimming": r"swim(?:s|ming)?",
    "climbing": r"climb(?:s|ed|ing)", "yoga": r"yoga", "dancing": r"danc(?:e|es|ed|ing)",
    "gardening": r"garden(?:s|ed|ing)?", "cooking": r"cook(?:s|ed|ing)", "baking": r"bak(?:e|es|ed|ing)",
    "knitting": r"knit(?:s|ted|ting)?", "sewing": r"sew(?:s|ed|ing)?", "writing": r"writing|poems?|poetry",
    "poetry": r"poems?|poetry", "reading": r"reading|books?", "singing": r"sing(?:s|ing)?|choir",
    "surfing": r"surf(?:s|ed|ing)?", "skateboarding": r"skat(?:e|es|ed|ing)\w*",
    "skiing": r"ski(?:s|ed|ing)?", "fishing": r"fishing", "camping": r"camp(?:s|ed|ing)",
    "chess": r"chess", "gaming": r"gam(?:e|es|ing)", "woodworking": r"woodwork\w*",
    "meditation": r"meditat\w+", "calligraphy": r"calligraphy", "sculpting": r"sculpt\w*",
    "piano": r"piano", "guitar": r"guitars?", "violin": r"violin", "clarinet": r"clarinet",
    "drums": r"drums?", "flute": r"flute", "cello": r"cello", "saxophone": r"sax(?:ophone)?",
    "ukulele": r"ukulele", "trumpet": r"trumpet", "bass": r"bass guitar|bass",
    "tennis": r"tennis", "soccer": r"soccer", "football": r"football", "basketball": r"basketball",
    "volleyball": r"volleyball", "baseball": r"baseball", "golf": r"golf", "hockey": r"hockey",
    "boxing": r"boxing", "martial arts": r"martial arts|karate|judo|taekwondo|jiu-?jitsu",
    "pilates": r"pilates", "kayaking": r"kayak\w*", "rowing": r"rowing",
    "horse riding": r"horse ?riding|horses?", "archery": r"archery",
}
_HOBBY = ("(?:" + "|".join(sorted((re.escape(h) for h in _HOBBY_FORMS), key=len, reverse=True))
          + r")(?! (?:my|our|a|an|the|his|her|their|out|late|around|errands|into|away|low|"
          r"short|over|up)\b)")  # "running my own studio" is no hobby
_HOBBY_INTRO = [
    # "I play the violin", "I've been practising piano", "I do yoga every morning"
    re.compile(r"\b(?:i|we)(?:'ve| have)?(?: \w+)?(?: been)? (?:play|plays|playing|practi[cs]e|"
               r"practi[cs]ing|do|doing|love|enjoy|started|start|took up|taken up|picked up|"
               r"got into|gotten into|learning|learned|learnt|teach|teaching|am into|'m into)"
               r"(?: playing| doing)?(?: the| some| a bit of)? (?P<x>" + _HOBBY + r")\b", re.I),
    # "my pottery class", "our running club", "I'm taking a yoga class"
    re.compile(r"\b(?:my|our|(?:taking|take|took|signed up for|joined|joining|go to|going to|"
               r"went to) (?:a|an|some|the))(?: \w+)? (?P<x>" + _HOBBY + r") (?:class|classes|lessons?|"
               r"practice|club|group|team|teacher|coach|studio|hobby|sessions?)\b", re.I),
    # "painting is my hobby", "running keeps me sane"
    re.compile(r"\b(?P<x>" + _HOBBY + r") (?:is|has been|was) my (?:hobby|passion|outlet|"
               r"escape|therapy)\b", re.I),
]

# --- projects ---------------------------------------------------------------------------------
_W = r"(?:[A-Za-z]|\d+[A-Za-z])[\w'\-]*"  # "Bristol 10K", "a 5k": a word may start with digits
_NP = r"(?P<x>(?:" + _W + r" ){0,3}" + _W + r")"
_DET = r"(?:a|an|my|our|the|this|that|some|a new|a little|a small|a big|my own|our own)"
_I = (r"\b(?:i|we)(?:'m|'re| am| are|'ve been| have been|'ll be| will be)?(?: (?:currently|"
      r"still|now|finally|really|actually|also|just|busy|slowly))*")
_PROJECT_INTRO = [
    re.compile(_I + r" (?:working on|building|writing|developing|designing|planning|"
               r"organi[sz]ing|putting together|renovating|remodel+ing|launching|starting|"
               r"creating|training for|saving up for|saving for|fixing up|restoring|"
               r"recording|producing|directing|editing|finishing|preparing for) " + _DET + " "
               + _NP, re.I),
    # "my garden project", "the Apollo project", "an art project": named with "project"
    re.compile(r"\b(?:my|our|the|a|an|this|that) (?P<x>(?:" + _W + r" ){0,2}" + _W
               + r" project)\b", re.I),
    # "project Apollo", "the launch of Nimbus", "working on the Atlas" (capitalised names)
    re.compile(r"\b(?:[Pp]roject (?:called |named )?|launch of |working on the )"
               r"(?P<x>[A-Z][\w\-]+(?: [A-Z][\w\-]+)?)"),
    # a named effort with a deadline: "the grant proposal deadline", "deadline for the report"
    re.compile(r"\b(?:my|our|the) (?P<x>(?:" + _W + r" ){0,2}" + _W + r") deadline\b", re.I),
    re.compile(r"\bdeadline (?:for|on) (?:my|our|the) " + _NP, re.I),
]

# --- resources --------------------------------------------------------------------------------
_TITLE = r"(?P<x>[A-Z][\w'\-]*(?: (?:[A-Z][\w'\-]*|of|the|and|a|an|in|to|on|for|with|&))*)"
_RESOURCE_INTRO = [
    # a quoted title near reading words: 'I loved reading "Charlotte's Web" as a kid'
    re.compile(r"\b(?:read|reading|reread|re-reading|rereading|finished|book|novel|memoir)"
               r"\b[^\"“”.!?]{0,25}?[\"“](?P<x>[^\"“”]{2,60}?)[\"”]", re.I),
    # a capitalised title: "I'm reading Atomic Habits"
    re.compile(r"\b(?i:i(?:'m| am|'ve been| have been)?|we(?:'re| are)?)(?i: (?:currently|"
               r"still|now|just|finally|also))* (?i:reading|rereading|re-reading|listening to"
               r"|studying|learning) " + _TITLE),
    # courses: "a photography course", "an online Python bootcamp"
    re.compile(r"\b(?:taking|took|enrolled in|signed up for|doing|started|starting|completed|"
               r"finished|attending)(?: " + _DET + r")?(?: online| free| evening| night)? "
               r"(?!doing|giving|hosting|teaching|leading|running|organi[sz]ing)(?P<x>(?:" + _W + r" ){0,2}" + _W + r") (?P<t>course|workshop|bootcamp|"
               r"certification|certificate|seminar|webinar|tutorial|degree|masterclass)s?\b",
               re.I),
    # tools: "I use Notion for my notes", "the Duolingo app"
    re.compile(r"\b(?i:i|we)(?i:'ve| have)?(?: \w+)? (?i:use|using|used|switched to|started "
               r"using|tried|downloaded|installed) (?P<x>[A-Z][\w\-]+(?: [A-Z][\w\-]+)?) "
               r"(?i:app|tool|software|program|for|to)\b"),
    re.compile(r"\bthe (?P<x>[A-Z][\w\-]+) app\b"),
    # recipes: "grandma's lasagna recipe", "a recipe for banana bread"
    re.compile(r"\b(?:my|our|a|the|this|that|her|his|[A-Z][a-z]+'s|grandma's|mom's|mum's|dad's)"
               r" (?P<x>(?:" + _W + r" ){0,2}" + _W + r") recipe\b", re.I),
    re.compile(r"\brecipes? for " + _NP, re.I),
    # topics being studied: "I'm learning Spanish", "I've been reading about black holes"
    re.compile(_I + r" (?:learning about|reading about|reading up on|studying|researching|"
               r"learning|interested in|fascinated by|curious about) (?:the |some |more about )?"
               + _NP, re.I),
]

# --- issue 27 row 5: more ways people name their projects and resources ------------------
# Events people prepare for: a noun phrase ending in one of these, said with a date or a
# preparation cue, is a project ("my half marathon is in May", "signed up for the Cardiff
# Half"). One word alone names a project only when it is specific (not "my interview").
_EVENTS = ("marathon|half marathon|half|ultra|triathlon|race|10k|5k|exam|exams|finals|thesis|"
           "dissertation|wedding|launch|presentation|recital|concert|gig|audition|competition|"
           "tournament|exhibition|conference|pitch|renovation|hen do|stag do|move|proposal|"
           "application|portfolio|report|trip|holiday|party")
_EVENT_ALONE = frozenset("marathon triathlon thesis dissertation wedding renovation recital "
                         "audition exhibition".split())
_PROJECT_MORE = [
    # an effort with a deadline: "help me plan the garden shed? I want it done by Thursday"
    re.compile(r"\b(?:plan|planning|finish|finishing|organi[sz]e|organi[sz]ing|prepare|"
               r"preparing|write|writing|build|building|sort out|sorting out|put together|"
               r"get through) (?:the|my|our) " + _NP + r"[^\n]{0,40}?\b(?:want|need|needs|"
               r"has|have|got) (?:it |them |this |that )?(?:to be )?(?:done|finished|ready|"
               r"submitted|sorted|in) by\b", re.I),
    # an event with a date: "my half marathon is in May", "our wedding's on the 12th"
    re.compile(r"\b(?:my|our) (?P<x>(?:" + _W + r" ){0,2}(?:" + _EVENTS + r"))(?: is|'s| was "
               r"moved to| got moved to| got pushed to) (?:on|in|next|this|coming up|due|"
               r"tomorrow|today|only|just|in \w+ (?:days|weeks|months))\b", re.I),
    # preparing for a named or event-headed thing: "signed up for the Cardiff Half"
    re.compile(r"\b(?:signed up for|registered for|entered|qualified for|training for|"
               r"preparing for|studying for|revising for) (?:the|a|an|my|our) "
               r"(?P<x>(?:" + _W + r" ){0,2}(?:" + _EVENTS + r"))\b", re.I),
]
_LANGS = ("Spanish|French|German|Italian|Portuguese|Welsh|Irish|Gaelic|Japanese|Mandarin|"
          "Cantonese|Chinese|Korean|Arabic|Russian|Dutch|Greek|Turkish|Hindi|Polish|Swedish|"
          "Norwegian|Danish|Finnish|Hebrew|Catalan|Basque|Vietnamese|Thai|Latin|Czech|"
          "Ukrainian|Swahili|Icelandic|Hungarian|Romanian|Persian|Farsi|Urdu|Tagalog|"
          "Indonesian|Esperanto|Sign Language|BSL|ASL")
_RESOURCE_MORE = [
    # a language being learned: "daily Spanish done", "I've started Welsh on Duolingo",
    # "my French homework", "brushing up on my Italian"
    re.compile(r"\b(?:learning|learn|studying|practi[cs]ing|started|starting|took up|"
               r"taking|improving|brushing up on|brushing up|practi[cs]e|revising)(?: my| "
               r"some| a bit of| more)? (?P<x>" + _LANGS + r")\b"),
    re.compile(r"\b(?:[Mm]y|[Dd]aily|[Oo]ur|[Mm]orning|[Ee]vening|[Ww]eekly)(?: daily| "
               r"morning| evening| weekly)? (?P<x>" + _LANGS + r") (?:practice|lessons?|"
               r"class|classes|course|homework|streak|tutor|teacher|exam|session|done)\b"),
    re.compile(r"\b(?P<x>" + _LANGS + r") (?:practice |lessons? |class |session )?(?:again |"
               r"today |done |)on [A-Z]\w+"),
    # a tool: "20 minutes on Duolingo", "my Notion workspace", "my Strava streak"
    re.compile(r"\b(?i:practi[cs]e|practi[cs]ing|lessons?|streak|exercises?|workouts?|"
               r"sessions?|minutes|hours|notes|(?:tracking|tracked|logged|logging)(?: my \w+)?)"
               r"(?: again| today| done)? (?i:on|using) (?P<x>[A-Z][\w\-]+)\b"),
    re.compile(r"\b(?i:my|our) (?P<x>[A-Z][\w\-]+) (?i:streak|account|subscription|premium|"
               r"workspace|notebook|board|playlist|library|feed|league)\b"),
    # a book by its capitalised title: "halfway through Project Hail Mary", "200 pages
    # behind on Middlemarch", "telling me to read Piranesi", "next month's pick is Dune"
    re.compile(r"\b(?i:halfway through|partway through|(?:\d+|a few|some) (?:pages|chapters)"
               r" (?:into|behind on|through|of|left (?:of|in))|started reading|finished "
               r"reading|to read|to reread|re-?reading|rereading) " + _TITLE),
    re.compile(r"\b(?i:pick|book|novel|audiobook|read)(?i: this month| for (?:next|this) "
               r"month)? (?i:is|was) " + _TITLE),
]
_TOOL_NOT = frozenset("""Monday Tuesday Wednesday Thursday Friday Saturday Sunday January
February March April May June July August September October November December Today Tomorrow
It This That The My Our A An I We""".split())


def _title_words(raw: str) -> str:
    """A title up to the first word that starts a clause ("Project Hail Mary and I'm ..." ->
    "Project Hail Mary and", whose small words ``_title`` then cuts)."""
    words = raw.split()
    for i, w in enumerate(words[1:], 1):
        if w in _NOT_TITLE or w.casefold().startswith(("i'", "i’")):
            return " ".join(words[:i])
    return raw


def _introduce_more(text: str, add: Callable[[str | None, str, re.Match[str]], None],
                    hobby_words: set[str]) -> None:
    """Issue 27 row 5's project and resource cues (``_PROJECT_MORE``, ``_RESOURCE_MORE``)."""
    for n, rx in enumerate(_PROJECT_MORE):
        for m in rx.finditer(text):
            name = _noun_phrase(m.group("x"))
            last = m.group("x").split()[-1].casefold()
            if name is None and n > 0 and last in _EVENT_ALONE:
                name = last  # "our wedding's in May": one specific word is enough
            if name is None or name.casefold() in hobby_words:
                continue
            if n > 0 and " " not in name and name.casefold() not in _EVENT_ALONE:
                continue  # "my interview is on Monday": no one project
            add(name, PROJECT, m)
    for n, rx in enumerate(_RESOURCE_MORE):
        for m in rx.finditer(text):
            raw = m.group("x")
            name = raw if n < 3 else _title(_title_words(raw))
            if name is None or name.split()[0] in _TOOL_NOT or name.endswith(("'s", "’s")):
                continue
            if n >= 3 and re.fullmatch(_HOBBY, name, re.I):
                continue
            add(name, RESOURCE, m)


# A noun phrase ends at the first of these (prepositions, conjunctions, time words), so
# "a children's book about dragons for my niece" is "children's book".
_STOP = frozenset("""
about above after again all already also and around as at because before but by during
every for from here how if in into just lately like more next now of off on once or out
over right since so soon still than that the then there these this those though through
till to today tomorrow tonight too under until up very was week weekend weekends when where which
while who whose why will with within without year years yet month months day days recently
lot is are be been being it its it's i i'm we me you your his her their them they he she
really which what some any one ones together instead anyway again finally even two three
four five later soon earlier regarding called named by near
""".split())
# Heads that name no thing: "a lot", "a difference", "a break", "the time"
_GENERIC = frozenset("""
thing things stuff lot bit few way ways time times difference mess living break decision
decisions point change changes plan plans something anything everything nothing one ones it
myself yourself ourselves themselves best most rest part end start beginning day night
week month year moment lately life future world list idea ideas dream dreams goal goals
step steps effort progress career job work home family kids health money fun
weekend morning evening afternoon meal dinner lunch breakfast road new
other same next last first second few couple many much more less own little big small
hard good great nice bad deal sense way difference call move mind head heart self people
person guy girl friend friends kid child children mom dad books new ton tons bunch load
loads topic subject language tool deadline meeting passion cool
""".split())
# Words before a name that say nothing about which thing it is: "a cool new project".
_LEADING = frozenset("""
a an the my our your his her their this that these those some any new newest latest another
other big bigger small little cool fun great awesome amazing exciting interesting huge
important personal creative current next last first second special favorite favourite own
side secret whole entire same old recent different main major real good nice dream passion
super very really tiny long short quick simple whole few couple several two three
""".split())
# Heads a name may end in, but not consist of ("garden project", not "project").
_HEADS = frozenset("""project course class book app recipe workshop presentation party trip
vacation holiday wedding show event""".split())
_TITLE_SMALL = frozenset("of the and a an in to on for with &".split())
_NOT_TITLE = frozenset("""
I It This That The My Our A An We You He She They His Her Their Yes No Oh Wow Hey Hi So But
And Also Well Really Just Thanks Monday Tuesday Wednesday Thursday Friday Saturday Sunday
January February March April May June July August September October November December
Today Tomorrow Yesterday Anyway Plus Haha Lol
""".split())


def _noun_phrase(raw: str) -> str | None:
    """The phrase up to its first stop word, without its article and leading adjectives
    ("my newest dairy-free recipe" -> "dairy-free recipe"); None when it names nothing (a
    pronoun, a generic head, an adjective alone)."""
    words: list[str] = []
    for w in raw.split():
        if w.casefold() in _STOP or w.casefold().endswith(("n't", "n’t")):
            break  # "that isn't a whole project": a negated verb is no part of a name
        words.append(w)
    while words and words[0].casefold() in _LEADING:
        words.pop(0)
    if not words or words[-1].casefold() in _GENERIC:
        return None
    if words[-1].casefold() in _HEADS and len(words) == 1:  # "a project", "a recipe"
        return None
    name = " ".join(words).strip("'\"-,")
    return name if len(name) >= 3 else None


def _title(raw: str) -> str | None:
    """A capitalised title, its trailing small words cut ("Atomic Habits and" -> "Atomic
    Habits"); None for a pronoun or a day."""
    words = raw.split()
    while words and words[-1] in _TITLE_SMALL:
        words.pop()
    if not words or words[0] in _NOT_TITLE or len(" ".join(words)) < 3:
        return None
    return " ".join(words)


def display(name: str) -> str:
    """A name as the window and the export show it: the first letter capitalised."""
    return name[:1].upper() + name[1:]


_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|im|ive|we|we're|we've|my|our|us|me)\b",
                           re.I)
_SENTENCE_END = re.compile(r"[.!?]\s")


def _stated(text: str, start: int, end: int) -> bool:
    """Whether the sentence, up to the end of a match, speaks in the first person ("I've
    been reading ...", "my pottery class"), so the thing is the speaker's own."""
    begin = 0
    for m in _SENTENCE_END.finditer(text, 0, start):
        begin = m.end()
    return _FIRST_PERSON.search(text, begin, end) is not None


def introduced(text: str) -> dict[Key, tuple[str, bool]]:
    """The projects, resources and hobby areas a text names with a cue saying what kind they
    are: (name key, kind) -> (the name as shown, stated). Stated: said in the first person,
    so the thing is made at once (as a person is on a stated relationship); otherwise it is
    made once mentioned often enough."""
    out: dict[Key, tuple[str, bool]] = {}

    def add(name: str | None, kind: str, m: re.Match[str]) -> None:
        if name:
            name = display(name)
            key = (name.casefold(), kind)
            stated = _stated(text, m.start(), m.end())
            if key not in out or stated and not out[key][1]:
                out[key] = (name, stated)
    for rx in _HOBBY_INTRO:
        for m in rx.finditer(text):
            add(m.group("x").lower(), AREA, m)
    hobby_words = {k for k, kind in out if kind == AREA}
    for n, rx in enumerate(_RESOURCE_INTRO):
        for m in rx.finditer(text):
            raw = m.group("x")
            if n == 0:
                name = raw.strip(" ,.!?") if 2 <= len(raw.split()) <= 10 or raw[:1].isupper() \
                    else None
            elif n in (1, 3, 4):
                name = _title(raw)
            else:
                name = _noun_phrase(raw)
            if name is None:
                continue
            if n == 2:  # a course: "a photography course", a hobby's or not
                add(f"{name} {m.group('t').lower()}", RESOURCE, m)
                continue
            if name.casefold() in hobby_words:
                continue
            if re.fullmatch(_HOBBY, name, re.I):  # "learning the piano": a hobby
                add(name.lower(), AREA, m)
                continue
            if n in (5, 6):
                name = f"{name} recipe"
            add(name, RESOURCE, m)
    for n, rx in enumerate(_PROJECT_INTRO):
        for m in rx.finditer(text):
            name = m.group("x") if n == 2 else _noun_phrase(m.group("x"))
            if name is None or name.casefold() in hobby_words:
                continue
            if n == 0 and re.fullmatch(_HOBBY, name, re.I):
                continue
            add(name, PROJECT, m)
    _introduce_more(text, add, hobby_words)
    # a title one reads is no project: "Project Hail Mary" is a book, not project "Hail Mary"
    titles = [k for k, kind in out if kind == RESOURCE]
    for key in [k for k in out if k[1] == PROJECT]:
        if any(key[0] in t and key[0] != t for t in titles):
            del out[key]
    return out


class Matcher:
    """Which of a scope's things a memory mentions: the life areas by their cue phrases,
    hobbies by their word forms, projects and resources by their name."""

    def __init__(self, things: Iterable[Key]) -> None:
        names: list[str] = []
        self.hobbies: dict[Key, re.Pattern[str]] = {}
        for name, kind in things:
            if kind == AREA and name in _HOBBY_FORMS:
                self.hobbies[(name, kind)] = re.compile(
                    r"\b(?:" + _HOBBY_FORMS[name] + r")\b", re.I)
            elif kind in (PROJECT, RESOURCE):
                names.append(name)
        names.sort(key=len, reverse=True)
        self.names = (re.compile(r"(?<![\w'])(?:" + "|".join(re.escape(n) for n in names)
                                 + r")(?![\w])", re.I) if names else None)
        self.named = {(n, k) for n, k in things if k in (PROJECT, RESOURCE)}

    def find(self, text: str) -> set[Key]:
        found: set[Key] = {(name.casefold(), AREA) for name, rx in LIFE_AREAS.items()
                           if rx.search(text)}
        for key, rx in self.hobbies.items():
            if rx.search(text):
                found.add(key)
        if self.names is not None:
            for m in self.names.finditer(text):
                name = " ".join(m.group(0).split()).casefold()
                for kind in (PROJECT, RESOURCE):
                    if (name, kind) in self.named:
                        found.add((name, kind))
        return found


def life_area_names() -> dict[Key, str]:
    """The life areas, always candidates: (name key, kind) -> the name as shown."""
    return {(name.casefold(), AREA): name for name in LIFE_AREAS}


Found = tuple[Scope, str, str]  # (scope, the name as shown, kind)


def scope_mentions(sources: Sequence[MentionSource]) -> tuple[dict[Found, set[int]], set[Found]]:
    """The projects, areas and resources of each scope with the memories that mention them,
    and those stated in the first person. Two passes over ``sources``: what each scope
    introduces, then what mentions it; a scope only ever sees its own memories' names, so
    one agent's projects never gather mentions from, or become entities of, another."""
    things: dict[Scope, dict[Key, str]] = defaultdict(life_area_names)
    stated: set[Found] = set()
    for s in sources:
        if s.speaker and s.speaker.casefold() in _NOT_PEOPLE:
            continue  # an assistant's "I'm working on your report" is no project of its own
        scope = (s.agent, s.context)
        for key, (name, said) in introduced(s.text).items():
            name = things[scope].setdefault(key, name)
            if said:
                stated.add((scope, name, key[1]))
    matchers = {scope: Matcher(names) for scope, names in things.items()}
    members: dict[Found, set[int]] = defaultdict(set)
    for s in sources:
        scope = (s.agent, s.context)
        matcher = matchers.get(scope)
        if matcher is None:  # nothing introduced: only the life areas
            matcher = matchers[scope] = Matcher(things[scope])
        for key in matcher.find(s.text):
            members[(scope, things[scope][key], key[1])].add(s.id)
    return members, stated
