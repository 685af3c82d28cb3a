"""Text normalisation for the synthetic-speech corpus (stdlib only).

A transcript is lowercase ASCII letters, apostrophes and single spaces: numbers, amounts, times and common
abbreviations are written out in words, exactly as the synthesizer is asked to say them. `normalise()` turns a
piece of found English text into a *speak form*: the transcript's words, some of them followed by one of
`, . ? !` so that the synthesizer keeps the prosody of the original; `transcript()` strips those marks again.
Anything that cannot be verbalised with confidence (stray digits, symbols, URLs, non-Latin letters) makes the
sentence be dropped (None), never guessed.
"""

import re
import unicodedata

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
SCALES = [(10 ** 12, "trillion"), (10 ** 9, "billion"), (10 ** 6, "million"), (1000, "thousand")]
ORD_IRREGULAR = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
                 "nine": "ninth", "twelve": "twelfth"}

_PUNCT_KEEP = ",.?!"


def _below_hundred(n):
    if n < 20:
        return ONES[n]
    t, o = divmod(n, 10)
    return TENS[t] + ("" if o == 0 else " " + ONES[o])


def _below_thousand(n, british_and):
    h, r = divmod(n, 100)
    parts = []
    if h:
        parts.append(ONES[h] + " hundred")
    if r:
        if h and british_and:
            parts.append("and")
        parts.append(_below_hundred(r))
    return " ".join(parts)


def cardinal(n, british_and=False):
    """Cardinal number in words: 105 -> 'one hundred five' (or 'one hundred and five')."""
    if n < 0:
        return "minus " + cardinal(-n, british_and)
    if n == 0:
        return "zero"
    if n >= 10 ** 15:
        raise ValueError("number too large to verbalise: %d" % n)
    parts = []
    for value, name in SCALES:
        if n >= value:
            q, n = divmod(n, value)
            parts.append(_below_thousand(q, british_and) + " " + name)
    if n:
        if parts and british_and and n < 100:
            parts.append("and")
        parts.append(_below_thousand(n, british_and))
    return " ".join(parts)


def ordinal_of_words(words):
    """'twenty one' -> 'twenty first', 'one hundred' -> 'one hundredth'."""
    head, _, last = words.rpartition(" ")
    if last in ORD_IRREGULAR:
        last = ORD_IRREGULAR[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last = last + "th"
    return (head + " " + last) if head else last


def ordinal(n, british_and=False):
    return ordinal_of_words(cardinal(n, british_and))


def year(n):
    """Year as usually read: 1984 -> 'nineteen eighty four', 1905 -> 'nineteen oh five', 2000 -> 'two thousand',
    2007 -> 'two thousand seven', 2024 -> 'twenty twenty four', 1600 -> 'sixteen hundred'."""
    if n < 1000 or n > 9999:
        return cardinal(n)
    hi, lo = divmod(n, 100)
    if 2000 <= n <= 2009:
        return cardinal(n)
    if lo == 0:
        return cardinal(hi) + " hundred" if hi % 10 else cardinal(n)
    if lo < 10:
        return cardinal(hi) + " oh " + ONES[lo]
    return cardinal(hi) + " " + _below_hundred(lo)


def plural_of_words(words):
    """'nineteen sixty' -> 'nineteen sixties' (for '1960s')."""
    head, _, last = words.rpartition(" ")
    last = last[:-1] + "ies" if last.endswith("y") else (last + "es" if last.endswith("x") else last + "s")
    return (head + " " + last) if head else last


def digits(s, zero="zero"):
    """Digit by digit: '5017' -> 'five oh one seven' with zero='oh'."""
    return " ".join(zero if c == "0" else ONES[int(c)] for c in s)


# ---------------------------------------------------------------------------------------------------------------
# found text

ABBREVIATIONS = [
    (r"\bMr\.", "mister"), (r"\bMrs\.", "missus"), (r"\bMs\.", "miz"), (r"\bDr\.", "doctor"),
    (r"\bProf\.", "professor"), (r"\bSt\.(?= [A-Z])", "saint"), (r"\bJr\.", "junior"), (r"\bSr\.", "senior"),
    (r"\bvs\.", "versus"), (r"\betc\.", "et cetera"), (r"\be\.g\.", "for example"), (r"\bi\.e\.", "that is"),
    (r"\bMt\.", "mount"), (r"\bCapt\.", "captain"), (r"\bGen\.", "general"), (r"\bSgt\.", "sergeant"),
    (r"\bGov\.", "governor"), (r"\bSen\.", "senator"), (r"\bRev\.", "reverend"), (r"\bLt\.", "lieutenant"),
    (r"\bNo\.(?= ?\d)", "number"), (r"\bapprox\.", "approximately"), (r"\bdept\.", "department"),
    (r"\bA\.M\.", "a m"), (r"\bP\.M\.", "p m"), (r"\ba\.m\.", "a m"), (r"\bp\.m\.", "p m"),
    (r"\bU\.S\.A\.", "u s a"), (r"\bU\.S\.", "u s"), (r"\bU\.K\.", "u k"),
]
_ABBR = [(re.compile(p), r) for p, r in ABBREVIATIONS]

_MONEY = re.compile(r"\$(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d\d))?(?![\d.,]*\d)")
_POUNDS = re.compile(r"£(\d{1,3}(?:,\d{3})+|\d+)(?![\d.,]*\d)")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?) ?%")
_ORDINAL = re.compile(r"\b(\d+)(st|nd|rd|th)\b", re.I)
_DECADE = re.compile(r"\b(1[1-9]\d0|20[0-9]0)'?s\b")
_SHORT_DECADE = re.compile(r"(?<![\w'])'?([2-9]0)'?s\b")
_CLOCK = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
_DECIMAL = re.compile(r"\b(\d+)\.(\d+)\b")
_COMMA_NUM = re.compile(r"\b\d{1,3}(?:,\d{3})+\b")
_YEAR = re.compile(r"\b(1[1-9]\d\d|20\d\d)\b")
_INT = re.compile(r"\b\d+\b")


def _money(m):
    dollars = int(m.group(1).replace(",", ""))
    out = cardinal(dollars) + (" dollar" if dollars == 1 else " dollars")
    if m.group(2) and int(m.group(2)):
        c = int(m.group(2))
        out += " and " + cardinal(c) + (" cent" if c == 1 else " cents")
    return " " + out + " "


def _decimal_words(m):
    return " " + cardinal(int(m.group(1))) + " point " + digits(m.group(2)) + " "


def _percent(m):
    v = m.group(1)
    if "." in v:
        a, b = v.split(".")
        w = cardinal(int(a)) + " point " + digits(b)
    else:
        w = cardinal(int(v))
    return " " + w + " percent "


def _clock(m):
    h, mi = int(m.group(1)), int(m.group(2))
    if mi == 0:
        return " " + cardinal(h) + " o'clock "
    if mi < 10:
        return " " + cardinal(h) + " oh " + ONES[mi] + " "
    return " " + cardinal(h) + " " + _below_hundred(mi) + " "


def verbalise_numbers(s):
    s = _MONEY.sub(_money, s)
    s = _POUNDS.sub(lambda m: " " + cardinal(int(m.group(1).replace(",", ""))) + " pounds ", s)
    s = _PERCENT.sub(_percent, s)
    s = _ORDINAL.sub(lambda m: " " + ordinal(int(m.group(1))) + " ", s)
    s = _DECADE.sub(lambda m: " " + plural_of_words(year(int(m.group(1)))) + " ", s)
    s = _SHORT_DECADE.sub(lambda m: " " + plural_of_words(TENS[int(m.group(1)) // 10]) + " ", s)
    if re.search(r"\d[A-Za-z]|[A-Za-z]\d", s):
        return None  # codes like 4x4, mp3, b12: no single right reading
    s = _CLOCK.sub(_clock, s)
    s = _DECIMAL.sub(_decimal_words, s)
    s = _COMMA_NUM.sub(lambda m: " " + cardinal(int(m.group(0).replace(",", ""))) + " ", s)
    s = _YEAR.sub(lambda m: " " + year(int(m.group(1))) + " ", s)
    s = _INT.sub(lambda m: " " + cardinal(int(m.group(0))) + " " if len(m.group(0)) <= 12 else m.group(0), s)
    return s


_UNSAFE = re.compile(r"[0-9<>{}|\\~^#@$=+_\[\]`]|://|www\.|\.com\b|\.org\b")
_WORD_OK = re.compile(r"^[a-z]+(?:'[a-z]+)*$")


def _ascii_fold(s):
    s = s.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    s = s.replace("\u2014", " -- ").replace("\u2013", " - ").replace("\u2026", "...")
    s = unicodedata.normalize("NFKD", s)
    return "".join(c for c in s if not unicodedata.combining(c))


def normalise(text, min_words=2, max_words=30):
    """Found English text -> speak form (words + trailing ,.?!), or None if it cannot be verbalised."""
    s = _ascii_fold(text)
    s = re.sub(r".\x08", "", s)  # overstrike (x BS x)
    if any(ord(c) > 127 for c in s):
        return None
    for pat, rep in _ABBR:
        s = pat.sub(rep, s)
    s = s.replace("&", " and ")
    if re.search(r"\d\s*[-/]\s*\d", s):
        return None  # ranges, phone numbers, fractions: no single right reading
    try:
        s = verbalise_numbers(s)
    except ValueError:  # a number too large to say
        return None
    if s is None:
        return None
    if _UNSAFE.search(s):
        return None
    s = re.sub(r"(?<=[A-Za-z])[-/](?=[A-Za-z])", " ", s)  # well-known -> well known, and/or -> and or
    s = s.replace("--", ", ")
    out = []
    for raw in s.split():
        if re.search(r"[^A-Za-z'\"(),;:.!?*-]", raw):
            return None  # some symbol we do not know how to say
        mark = ""
        stripped = raw.rstrip("\"')]*")
        if stripped and stripped[-1] in ",;:.!?":
            c = stripped.rstrip(".")[-1:] if stripped.endswith("...") else stripped[-1]
            mark = {";": ",", ":": ","}.get(c, c) if c in ",;:.!?" else "."
        w = re.sub(r"[^A-Za-z']", "", raw).lower().strip("'")
        w = re.sub(r"'+", "'", w)
        if not w:
            if mark and out and out[-1][-1] not in _PUNCT_KEEP:
                out[-1] += mark
            continue
        if not _WORD_OK.match(w):
            return None
        out.append(w + mark)
    words = out
    n = len(words)
    if n < min_words or n > max_words:
        return None
    if words[-1][-1] == ",":
        words[-1] = words[-1][:-1]
    if words[-1][-1] not in _PUNCT_KEEP:
        words[-1] += "."
    return " ".join(words)


def transcript(speak):
    """Speak form -> transcript (lowercase letters, apostrophes, single spaces)."""
    return " ".join(w.rstrip(_PUNCT_KEEP) for w in speak.split())


_TRANSCRIPT_OK = re.compile(r"^[a-z']+(?: [a-z']+)*$")


def is_valid_transcript(t):
    return bool(_TRANSCRIPT_OK.match(t))
