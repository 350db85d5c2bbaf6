"""What shape of answer a message asks for, and whether a line has it.

The offline engine quotes lines; a line can be on the topic and still not answer ("What is my dog called?"
answered with the dog that did not bark). A question says what shape its answer takes: "who are you"
wants the character to say who it is, a yes/no question a yes or a no, "why" a reason. A line opening
with "Because…" answers only a why. English and Chinese; other languages ask for no shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_I = re.IGNORECASE

_WHO = re.compile(r"\bwho\s+(?:are|were)\s+you\b|\bwhat\s+are\s+you\b|\byour\s+name\b|\bintroduce\s+yourself|"
                  r"\btell\s+me\s+about\s+yourself|\bdescribe\s+yourself|"
                  r"你是谁|你是何人|你是什么人|你是哪位|您是哪位|您是谁|什么来历|何方神圣|自我介绍|叫什么名字|尊姓大名|"
                  r"你叫什么|介绍一下你自己|介绍你自己|说说你自己", _I)
_SELF = re.compile(r"\b(?:I\s+am|I'm|my\s+name|call\s+me|they\s+call\s+me)\b|"
                   r"我是|我乃|俺是|俺乃|本是|乃是|是也|在下|我叫|名叫|人称|人送外号|自号|本座|老夫|贫僧", _I)
_AUX = ("do does did is are was were am can could will would shall should have has had may might must "
        "don't doesn't didn't isn't aren't wasn't weren't can't couldn't won't wouldn't shouldn't haven't hasn't")
_CALLING = r"^\s*(?:[\w'. ]{1,30},\s*)?(?:and\s+|but\s+|so\s+|then\s+|well,\s*)?"  # "Holmes, are you…"
_YESNO_EN = re.compile(_CALLING + rf"(?:{'|'.join(map(re.escape, _AUX.split()))})\b[^?]*\?", _I)
_YESNO_ZH = re.compile(r"[吗嘛么][？?！!。]?\s*$|是不是|有没有|能不能|会不会|可不可以|要不要|对不对|好不好|行不行|"
                       r"肯不肯|敢不敢|愿不愿|想不想|可曾|是否|可有|可是真|当真")
_YESNO_ANSWER = re.compile(
    r"^\s*(?:yes|yea|yeah|no|nay|not|never|indeed|certainly|of\s+course|surely|assuredly|undoubtedly|absolutely|"
    r"quite|perhaps|possibly|hardly|rather|occasionally|sometimes|often|seldom|rarely|by\s+no\s+means|"
    r"not\s+at\s+all|nothing|none|nobody|always|gladly|willingly|I\s+(?:think|believe|suppose|fear|hope|doubt))\b|"
    r"^\s*(?:是|不|没|有|会|能|当然|自然|正是|那是|哪里|岂|怎么不|可不是|确实|的确|对|好|行|要|敢|愿意|当真|非也|然也|"
    r"未必|也许|或许|倒是|还是|只怕|恐怕|俺(?:不|没|会|能|要|敢|是|有|当然)|我(?:不|没|会|能|要|敢|是|有|当然)|"
    r"洒家(?:不|没|会|能|要|敢|是|有)|亮(?:不|以为|料)|自然|那还用说)", _I)
# "Are you…?" is answered "I am…", "Do you have…?" "I have…" or "I do…": the verbs a direct answer opens with
_ECHO_ASKED = re.compile(_CALLING + r"(\w+)(?:n't)?\s+you\b\s*(?:ever\s+|never\s+|still\s+|really\s+)?(\w+)?", _I)
_ECHO_AS = {"are": ("am", "'m"), "were": ("was",), "do": ("do", "don't"), "did": ("did", "didn't"),
            "can": ("can", "cannot", "can't"), "could": ("could", "couldn't"), "will": ("will", "shall", "won't"),
            "would": ("would", "should", "wouldn't"), "have": ("have", "haven't"), "has": ("have",),
            "shall": ("shall", "will"), "should": ("should",), "may": ("may",)}
_WHY = re.compile(r"\bwhy\b|\bhow\s+come\b|\bwhat\s+for\b|为什么|为何|何故|怎么会|凭什么|为啥|干嘛|干吗", _I)
_REASON = re.compile(r"\b(?:because|since|for|as|so\s+that|reason|that\s+is\s+why|therefore)\b|"
                     r"因为|只因|为了|由于|因此|所以|故而|缘故|原来|只为|皆因", _I)
_OPENS_REASON = re.compile(r"^\s*because\b|^\s*(?:因为|只因|由于|皆因|只为)", _I)
_QUESTION = re.compile(r"[?？]\s*[」”\"']?\s*$")


@dataclass(frozen=True)
class Asked:
    """What a message asks: a kind ("who", "yesno", "why", or "" for none in particular) and whether it is a
    question at all."""

    kind: str = ""
    question: bool = False
    echo: tuple[str, ...] = ()  # the verbs a direct answer to a yes/no question opens with, after "I" or "we"


def asked(text: str) -> Asked:
    """The shape of answer a visitor's message wants."""
    text = (text or "").strip()
    question = bool(re.search(r"[?？]", text)) or bool(_YESNO_ZH.search(text)) or bool(_WHY.search(text))
    if _WHO.search(text):
        return Asked("who", True)
    if _WHY.search(text):
        return Asked("why", True)
    last = re.split(r"(?<=[.!。！])\s*", text)
    tail = next((s for s in reversed(last) if s.strip()), text)
    if _YESNO_EN.search(tail) or _YESNO_ZH.search(tail):
        return Asked("yesno", True, _echo(tail))
    return Asked("", question)


def _echo(question: str) -> tuple[str, ...]:
    """"Do you have one?" -> ("do", "don't", "have"): how "I …" would begin a direct answer."""
    m = _ECHO_ASKED.search(question)
    if not m:
        return ()
    aux, verb = m.group(1).lower(), (m.group(2) or "").lower()
    if aux not in _ECHO_AS:
        return ()
    return (*_ECHO_AS[aux], *([verb] if verb and aux in ("do", "did", "can", "will", "would", "could") else []))


def fit(ask: Asked, line: str, own_names: frozenset[str] = frozenset()) -> float:
    """How well a line's shape answers: +1 for the shape asked, -1 for a shape that answers another question
    (a "Because…" to no why), 0 otherwise."""
    line = (line or "").strip()
    if ask.kind != "why" and _OPENS_REASON.search(line):
        return -1.0
    if ask.kind == "who":
        says_name = any(n and n in line for n in own_names)
        return 1.0 if says_name or _SELF.search(line) else 0.0
    if ask.kind == "yesno":
        if ask.echo and re.match(rf"^\s*(?:\w+,\s*)?(?:I|we)\s*(?:{'|'.join(map(re.escape, ask.echo))})\b", line, _I):
            return 1.0
        return 1.0 if _YESNO_ANSWER.search(line) else 0.0
    if ask.kind == "why":
        return 1.0 if _REASON.search(line) else 0.0
    return 0.0


def is_question(line: str) -> bool:
    """A line that ends by asking (an answer that only asks back answers little)."""
    return bool(_QUESTION.search(line or ""))


# A question that gathers: its answer is several things said on different days ("What books has Anna read?",
# "Which places…", "both…", "How many times…", "哪些", "都…过", "几次"). Memory answers it with coverage: many
# days rather than the best day's neighbours (chat/packing.py).
_PLURAL = r"(?!(?:is|was|has|does|his|this|its|us|yes|less|kinds|sorts|types)\b)\w+s"  # a plural noun, roughly
_GATHER_EN = re.compile(
    rf"\bwhich\s+of\b|\bwhich\s+(?:\w+\s+)?{_PLURAL}\b|\bwhat\s+(?:\w+\s+)?{_PLURAL}\s+(?:has|have|had|did|do|does)\b|"
    r"\bwhat\s+(?:has|have)\s+(?!\w+\s+(?:been|got)\b)|\bwhat\s+(?:else|other)\b|\bwhat\s+are\s+(?:some|all)\b|"
    r"\bboth\b|\bin\s+common\b|\ball\s+the\b|\bhow\s+many\b|\bhow\s+often\b|\blist\b|\bname\s+(?:the|all|every)\b|"
    r"\bwhere\s+(?:has|have)\b|\bso\s+far\b", _I)
_GATHER_ZH = re.compile(r"哪些|哪几|几次|多少次|几回|一共|总共|共同|都有|都[^。！？?]{0,6}过|都喜欢|都讨厌|都不|"
                        r"两人都|俩都|分别")


def gathers(question: str) -> bool:
    """Whether a question asks for several things said at different times (English and Chinese): a plural
    "which"/"what … have", "both", "how many", "哪些", "都…过", "几次"."""
    return bool(_GATHER_EN.search(question) or _GATHER_ZH.search(question))
