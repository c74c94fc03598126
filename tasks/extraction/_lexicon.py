"""Word lists behind the heuristic extractor; all entries are lower-case tokens.

Tokens are what `text.TOKEN` yields: word characters with inner apostrophes kept
("don't"), so multi-word cues live in the phrase regexes of `episode`, `heuristic` and
`task_card`, not here.
"""

from __future__ import annotations

# English carries the weight; a few of the most frequent German, Spanish, French and
# Russian function words keep "und", "que", "les" or "что" from becoming topics.
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can can't cannot could couldn't did didn't
    do does doesn't doing don't down during each even ever every few for from further get
    gets got had hadn't has hasn't have haven't having he he'd he'll he's her here here's
    hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's
    its itself just let let's like make made many may me might more most much must mustn't
    my myself need needs no nor not now of off ok okay on once one only or other ought our
    ours ourselves out over own please really same say said see shall shan't she she'd
    she'll she's should shouldn't so some still such sure than thank thanks that that's the
    their theirs them themselves then there there's these they they'd they'll they're
    they've thing things think this those though through to too under until up upon us use
    used using very via want wants was wasn't way we we'd we'll we're we've well were
    weren't what what's when when's where where's which while who who's whom why why's will
    with won't would wouldn't yes yet you you'd you'll you're you've your yours yourself
    yourselves also actually maybe perhaps going gonna got know right good new time
    something anything nothing everything someone anyone lot lots hey hello hi sorry yeah
    whether able back first last next today tomorrow yesterday tonight soon welcome sounds
    seem seems check help send take give look find tell call try keep show ask put come
    came goes went done doing
    und der die das den dem des ein eine einen einem einer ist sind war nicht ich du er sie
    wir ihr mit auf für von zu aus bei nach auch noch wie was sich es aber oder wenn dass
    habe hat haben kann können mein meine sehr schon nur mal
    que los las del una uno por para con como pero más este esta estos estas muy sin sobre
    también hay ser está están tengo tiene mis tus sus eso esto cuando donde porque
    les des est une pour pas qui dans avec sur mais vous nous ils elle sont être avoir fait
    cette ces aux par plus tout très
    что это как для или так все его она они был была было мне меня мой моя нас вас уже
    еще ещё только если когда где нет да вот там тут
    """.split()
)

# Speaker names that say nothing about who spoke; never reported as entities.
GENERIC_SPEAKERS: frozenset[str] = frozenset(
    {"user", "assistant", "system", "tool", "bot", "ai", "human", "agent", "model", "me"}
)

# Capitalised words that open clauses or greet rather than name something.
NOT_ENTITIES: frozenset[str] = frozenset(
    {
        "i",
        "i'm",
        "i've",
        "i'll",
        "i'd",
        "ok",
        "okay",
        "yes",
        "no",
        "hi",
        "hey",
        "hello",
        "thanks",
        "please",
        "sorry",
        "the",
        "a",
        "an",
        "but",
        "and",
        "so",
        "if",
        "todo",
    }
)

# Weight per token towards urgency; strong cues alone make a message urgent.
URGENCY: dict[str, float] = {
    "urgent": 0.6,
    "urgently": 0.6,
    "asap": 0.6,
    "immediately": 0.6,
    "emergency": 0.7,
    "deadline": 0.5,
    "critical": 0.5,
    "right-away": 0.5,
    "sofort": 0.6,
    "dringend": 0.6,
    "urgente": 0.6,
    "срочно": 0.6,
    "now": 0.2,
    "today": 0.2,
    "tonight": 0.2,
    "quickly": 0.2,
    "hurry": 0.4,
    "soon": 0.1,
    "overdue": 0.4,
    "blocker": 0.4,
}

# Signed weight per token towards sentiment in [-1, 1].
SENTIMENT: dict[str, float] = {
    "love": 1.0,
    "great": 0.8,
    "awesome": 1.0,
    "amazing": 1.0,
    "wonderful": 1.0,
    "excellent": 0.9,
    "happy": 0.8,
    "glad": 0.6,
    "thanks": 0.3,
    "perfect": 0.8,
    "excited": 0.8,
    "nice": 0.5,
    "fantastic": 1.0,
    "relieved": 0.6,
    "proud": 0.7,
    "hate": -1.0,
    "terrible": -1.0,
    "awful": -1.0,
    "horrible": -1.0,
    "struggling": -0.8,
    "stressed": -0.8,
    "frustrated": -0.8,
    "frustrating": -0.8,
    "angry": -0.9,
    "sad": -0.8,
    "worried": -0.6,
    "anxious": -0.7,
    "scared": -0.8,
    "afraid": -0.7,
    "upset": -0.8,
    "annoyed": -0.6,
    "annoying": -0.6,
    "overwhelmed": -0.8,
    "exhausted": -0.7,
    "broken": -0.5,
    "disaster": -1.0,
    "worst": -1.0,
    "bad": -0.5,
    "fail": -0.5,
    "failed": -0.5,
    "panic": -0.9,
    "depressed": -1.0,
    "lonely": -0.7,
    "ugh": -0.6,
}

# Tokens that flip the sign of the sentiment word that follows them.
NEGATIONS: frozenset[str] = frozenset(
    {
        "not",
        "no",
        "never",
        "don't",
        "doesn't",
        "didn't",
        "isn't",
        "wasn't",
        "aren't",
        "can't",
        "cannot",
        "won't",
        "hardly",
        "nicht",
        "kein",
        "nunca",
        "pas",
    }
)

RISK: frozenset[str] = frozenset(
    {
        "security",
        "leak",
        "leaked",
        "leaks",
        "legal",
        "outage",
        "money",
        "health",
        "breach",
        "lawsuit",
        "lawyer",
        "court",
        "password",
        "passwords",
        "credential",
        "credentials",
        "vulnerability",
        "exploit",
        "fraud",
        "privacy",
        "gdpr",
        "compliance",
        "debt",
        "bank",
        "payment",
        "invoice",
        "salary",
        "medical",
        "doctor",
        "hospital",
        "diagnosis",
        "injury",
        "suicide",
        "overdose",
        "danger",
        "dangerous",
        "downtime",
        "incident",
        "hacked",
        "attack",
        "ransomware",
        "fine",
        "penalty",
        "contract",
        "eviction",
        "custody",
    }
)

# Cues that the user flags something as worth keeping.
IMPORTANCE_MARKERS: frozenset[str] = frozenset(
    {
        "important",
        "remember",
        "always",
        "never",
        "deadline",
        "crucial",
        "essential",
        "priority",
        "birthday",
        "anniversary",
        "allergic",
        "allergy",
        "wichtig",
        "importante",
    }
)

# Mood lexicons, checked in this order so ties resolve the same way every time.
MOODS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "stressed",
        frozenset(
            {
                "stressed",
                "stress",
                "overwhelmed",
                "pressure",
                "exhausted",
                "tired",
                "burnout",
                "swamped",
                "deadline",
            }
        ),
    ),
    (
        "frustrated",
        frozenset(
            {
                "frustrated",
                "frustrating",
                "annoyed",
                "annoying",
                "hate",
                "ugh",
                "stuck",
                "broken",
                "angry",
                "useless",
            }
        ),
    ),
    (
        "anxious",
        frozenset({"anxious", "worried", "nervous", "afraid", "scared", "panic", "fear", "uneasy"}),
    ),
    ("excited", frozenset({"excited", "thrilled", "awesome", "amazing", "fantastic", "finally"})),
    (
        "happy",
        frozenset(
            {
                "happy",
                "glad",
                "great",
                "love",
                "thanks",
                "wonderful",
                "nice",
                "perfect",
                "relieved",
                "proud",
            }
        ),
    ),
)

# Words that sharpen the sentiment word right after them.
INTENSIFIERS: frozenset[str] = frozenset(
    {"really", "very", "so", "extremely", "totally", "completely", "super", "sehr", "muy"}
)

UNCERTAIN: frozenset[str] = frozenset(
    {
        "maybe",
        "perhaps",
        "unsure",
        "unclear",
        "confused",
        "might",
        "probably",
        "guess",
        "wondering",
        "vielleicht",
        "quizás",
        "quizas",
        "peut-être",
        "может",
    }
)

CERTAIN: frozenset[str] = frozenset(
    {
        "definitely",
        "certainly",
        "certain",
        "sure",
        "absolutely",
        "clearly",
        "decided",
        "confident",
        "always",
        "never",
    }
)

# Tokens that make a message worth splitting into sentences, by the family of cues they
# announce; the sentence regexes in `heuristic` then decide precisely.
OUTCOME_CUES: frozenset[str] = frozenset(
    {
        "decided",
        "decision",
        "let's",
        "lets",
        "going",
        "settled",
        "agreed",
        "agree",
        "deal",
        "i'll",
        "will",
        "we'll",
        "action",
    }
)
THREAD_CUES: frozenset[str] = frozenset(
    {"follow", "followup", "remind", "later", "next", "todo", "i'll", "will", "we'll"}
)
SALIENT_CUES: frozenset[str] = frozenset(
    {
        "prefer",
        "like",
        "love",
        "hate",
        "dislike",
        "enjoy",
        "rather",
        "always",
        "never",
        "am",
        "i'm",
        "i've",
        "work",
        "live",
        "have",
        "born",
        "study",
        "my",
    }
)
# Second words of the hedging phrases ("not sure", "no idea", "i think", ...).
HEDGE_CUES: frozenset[str] = frozenset({"sure", "know", "idea", "think", "guess"})
