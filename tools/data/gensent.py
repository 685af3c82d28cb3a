"""Generated English sentences with numbers, dates, times, names, amounts, addresses and phone numbers, written in
words exactly as they are to be spoken (speak form: words plus , . ? ! as in textnorm). Stdlib only; deterministic
for a given random.Random."""

from textnorm import ONES, cardinal, ordinal, year, digits

FIRST = """james mary robert patricia john jennifer michael linda david elizabeth william barbara richard susan joseph
jessica thomas sarah charles karen christopher lisa daniel nancy matthew betty anthony sandra mark margaret donald
ashley steven kimberly paul emily andrew donna joshua michelle kenneth carol kevin amanda brian melissa george
deborah timothy stephanie ronald rebecca edward sharon jason laura jeffrey cynthia ryan kathleen jacob amy gary
angela nicholas shirley eric anna jonathan brenda stephen pamela larry emma justin nicole scott helen brandon
samantha benjamin katherine samuel christine gregory debra alexander rachel frank carolyn patrick janet raymond
catherine jack maria dennis heather jerry diane tyler ruth aaron julie jose olivia adam joyce nathan virginia
henry victoria douglas kelly zachary lauren peter christina kyle joan ethan evelyn walter judith noah megan jeremy
andrea christian cheryl keith hannah roger jacqueline terry martha gerald gloria harold teresa sean ann austin
sophie oliver lucy harry grace charlie alice freddie ella arthur chloe oscar isla leo poppy alfie daisy theo
ruby archie millie""".split()

LAST = """smith johnson williams brown jones miller davis wilson anderson taylor thomas moore martin jackson thompson
white harris clark lewis robinson walker young allen king wright scott hill green adams baker nelson carter
mitchell roberts turner phillips campbell parker evans edwards collins stewart morris rogers reed cook morgan bell
murphy bailey cooper richardson cox howard ward peterson gray james watson brooks kelly sanders price bennett wood
barnes ross henderson coleman jenkins perry powell long patterson hughes flores washington butler simmons foster
bryant alexander russell griffin hayes myers ford hamilton graham sullivan wallace west cole jordan reynolds
fisher ellis harrison gibson mcdonald marshall owens murray fletcher hunter palmer""".split()

STREETS = """maple oak pine cedar elm willow birch walnut chestnut spruce park lake hill river church mill school
station market bridge high main north south east west spring meadow forest garden orchard valley sunset highland
washington lincoln jefferson franklin madison adams jackson king queen victoria albert george york""".split()
STREET_TYPES = ["street", "avenue", "road", "lane", "drive", "court", "place", "boulevard", "way", "close",
                "crescent", "terrace"]
CITIES = """boston chicago denver seattle portland austin dallas houston phoenix atlanta miami detroit memphis
nashville baltimore philadelphia pittsburgh cleveland cincinnati columbus indianapolis milwaukee minneapolis
omaha kansas city st louis new orleans san diego san francisco los angeles sacramento salt lake city las vegas
albuquerque tucson london manchester liverpool birmingham leeds glasgow edinburgh cardiff bristol oxford
cambridge dublin belfast toronto vancouver montreal sydney melbourne auckland paris berlin madrid rome vienna
amsterdam""".replace("kansas city", "kansas_city").replace("st louis", "saint_louis").replace(
    "new orleans", "new_orleans").replace("san diego", "san_diego").replace("san francisco", "san_francisco").replace(
    "los angeles", "los_angeles").replace("salt lake city", "salt_lake_city").replace("las vegas", "las_vegas").split()
CITIES = [c.replace("_", " ") for c in CITIES]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]
MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
ITEMS = [tuple(p.split("/")) if "/" in p else (p, p + "s") for p in """apple orange banana egg ticket book chair
table box/boxes bottle candle pencil notebook shirt cup plate towel blanket lamp key battery/batteries bicycle
cookie loaf/loaves sandwich/sandwiches flower stamp envelope package shoe hat coat glove umbrella tomato/tomatoes
potato/potatoes onion carrot lemon peach/peaches pear plum button nail screw brick tile bag basket jar can carton
glass/glasses knife/knives dish/dishes brush/brushes child/children mouse/mice sheep/sheep""".split()]
EVENTS = ["the meeting", "the concert", "the interview", "the appointment", "the game", "the flight", "the train",
          "the wedding", "the party", "the lecture", "the dentist appointment", "the conference call", "the match",
          "the exam", "the rehearsal", "the dinner", "the bus", "the ferry", "the show", "the sale"]
PLACES = ["the library", "the station", "the office", "the museum", "the park", "the hospital", "the airport",
          "the market", "the school", "the bank", "the post office", "the hotel", "the theatre", "the stadium",
          "the town hall", "the bakery", "the pharmacy", "the garage", "the harbour", "the cafe"]
UNITS = [("mile", "miles"), ("kilometre", "kilometres"), ("metre", "metres"), ("foot", "feet"), ("inch", "inches"),
         ("pound", "pounds"), ("kilogram", "kilograms"), ("gram", "grams"), ("litre", "litres"),
         ("gallon", "gallons"), ("hour", "hours"), ("minute", "minutes"), ("second", "seconds"), ("day", "days"),
         ("week", "weeks"), ("month", "months"), ("year", "years"), ("degree", "degrees"), ("page", "pages"),
         ("person", "people"), ("mile per hour", "miles per hour")]
CURRENCIES = [("dollar", "dollars", "cent", "cents"), ("pound", "pounds", "penny", "pence"),
              ("euro", "euros", "cent", "cents")]
ROOMS = ["apartment", "room", "suite", "unit", "flat", "gate", "platform", "seat", "table", "locker"]


def _num(r, lo, hi):
    return r.randint(lo, hi)


def any_number(r):
    k = r.random()
    if k < 0.35:
        n = _num(r, 0, 20)
    elif k < 0.65:
        n = _num(r, 21, 99)
    elif k < 0.85:
        n = _num(r, 100, 999)
    elif k < 0.95:
        n = _num(r, 1000, 99999)
    else:
        n = _num(r, 100000, 999999999)
    return n, cardinal(n, british_and=r.random() < 0.3)


def count_of(r, singular, plural):
    n, w = any_number(r)
    if n == 0:
        return "no " + plural
    if n == 1:
        return r.choice(["one ", "a single "]) + singular
    if r.random() < 0.05 and n in (12, 24):
        return ("a dozen " if n == 12 else "two dozen ") + plural
    return w + " " + plural


def time_of_day(r):
    h = r.randint(1, 12)
    m = r.choice([0, 0, 5, 10, 15, 15, 20, 25, 30, 30, 35, 40, 45, 45, 50, 55] + [r.randint(1, 59)])
    hw = cardinal(h)
    nh = cardinal(h % 12 + 1)
    k = r.random()
    if m == 0:
        base = r.choice([hw + " o'clock", hw, hw + " o'clock sharp"])
    elif k < 0.4 and m in (15, 30, 45):
        base = {15: "quarter past " + hw, 30: "half past " + hw, 45: "quarter to " + nh}[m]
    elif k < 0.55 and m % 5 == 0 and m < 30 and m != 15:
        base = cardinal(m) + " past " + hw
    elif k < 0.65 and m % 5 == 0 and m > 30 and m != 45:
        base = cardinal(60 - m) + " to " + nh
    elif m < 10:
        base = hw + " oh " + ONES[m]
    else:
        base = hw + " " + cardinal(m)
    suffix = r.choice(["", "", "", " in the morning", " in the afternoon", " in the evening", " a m", " p m",
                       " at night"])
    if r.random() < 0.04:
        return r.choice(["noon", "midnight", "midday"])
    return base + suffix


def date(r, with_year=None):
    mi = r.randrange(12)
    d = r.randint(1, MONTH_DAYS[mi])
    mon = MONTHS[mi]
    k = r.random()
    if k < 0.5:
        s = mon + " " + ordinal(d)
    elif k < 0.85:
        s = "the " + ordinal(d) + " of " + mon
    else:
        s = r.choice(WEEKDAYS) + " " + mon + " " + ordinal(d)
    if with_year is None:
        with_year = r.random() < 0.3
    if with_year:
        s += " " + year(r.randint(1900, 2039))
    return s


def amount(r):
    cur = r.choice(CURRENCIES)
    k = r.random()
    major = r.choice([r.randint(1, 20), r.randint(1, 99), r.randint(100, 999), r.randint(1000, 50000)])
    minor = r.randint(1, 99)
    mw = cardinal(major, british_and=cur[0] == "pound")
    unit = cur[0] if major == 1 else cur[1]
    if k < 0.45:
        return mw + " " + unit
    if k < 0.75:
        return mw + " " + unit + " and " + cardinal(minor) + " " + (cur[2] if minor == 1 else cur[3])
    if k < 0.9:
        return mw + " " + unit + " " + cardinal(minor)
    return cardinal(minor) + " " + (cur[2] if minor == 1 else cur[3])


def phone(r):
    zero = r.choice(["oh", "zero"])
    a = "".join(str(r.randrange(10)) for _ in range(3))
    b = "".join(str(r.randrange(10)) for _ in range(3))
    c = "".join(str(r.randrange(10)) for _ in range(4))
    parts = [digits(a, zero), digits(b, zero), digits(c, zero)]
    if r.random() < 0.5:
        parts = parts[1:]
    return ", ".join(parts)


def address(r):
    k = r.random()
    n = r.randint(1, 9999)
    if n >= 100 and k < 0.5:  # 421 -> four twenty one, 1250 -> twelve fifty
        hi, lo = divmod(n, 100)
        nw = cardinal(hi) + " " + (("oh " + ONES[lo]) if 0 < lo < 10 else ("hundred" if lo == 0 else cardinal(lo)))
    else:
        nw = cardinal(n)
    s = nw + " " + r.choice(STREETS) + " " + r.choice(STREET_TYPES)
    if r.random() < 0.3:
        s += ", " + r.choice(ROOMS) + " " + cardinal(r.randint(1, 40))
    if r.random() < 0.4:
        s += ", " + r.choice(CITIES)
    return s


def name(r):
    k = r.random()
    if k < 0.4:
        return r.choice(FIRST)
    if k < 0.8:
        return r.choice(FIRST) + " " + r.choice(LAST)
    return r.choice(["mister", "missus", "doctor", "professor", "miss"]) + " " + r.choice(LAST)


def measure(r):
    u = r.choice(UNITS)
    k = r.random()
    if k < 0.15:
        a, b = r.randint(0, 99), r.randint(1, 9)
        return cardinal(a) + " point " + ONES[b] + " " + u[1]
    n, w = any_number(r)
    if n == 1:
        return "one " + u[0]
    return w + " " + u[1]


def _unit_amount(r, units, lo, hi):
    sing, plur = r.choice(units)
    if r.random() < 0.2:
        return cardinal(r.randint(lo, hi)) + " point " + ONES[r.randint(1, 9)] + " " + plur
    n = r.randint(max(lo, 1), hi)
    return ("one " + sing) if n == 1 else (cardinal(n) + " " + plur)


def distance(r):
    return _unit_amount(r, [("mile", "miles"), ("kilometre", "kilometres"), ("metre", "metres"),
                            ("foot", "feet"), ("yard", "yards")], 0, 300)


def weight(r):
    return _unit_amount(r, [("pound", "pounds"), ("kilogram", "kilograms"), ("gram", "grams"),
                            ("ounce", "ounces")], 0, 500)


def quantity(r):
    return _unit_amount(r, [("cup", "cups"), ("gram", "grams"), ("ounce", "ounces"), ("pound", "pounds"),
                            ("tablespoon", "tablespoons")], 0, 500)


def percent(r):
    if r.random() < 0.2:
        return cardinal(r.randint(0, 99)) + " point " + ONES[r.randint(0, 9)] + " percent"
    return cardinal(r.randint(0, 100)) + " percent"


TEMPLATES = [
    "{event} is at {time} on {date}.",
    "{event} starts at {time}.",
    "please meet me at {place} at {time}.",
    "{name} will arrive on {date} at {time}.",
    "my appointment is on {date}, at {time}.",
    "the deadline is {date}.",
    "we moved here on {date}.",
    "{name} was born on {date_year}.",
    "the store opens at {time} and closes at {time2}.",
    "the total comes to {amount}.",
    "that will be {amount}, please.",
    "{name} paid {amount} for {count_item}.",
    "i bought {count_item} for {amount}.",
    "the ticket costs {amount}.",
    "can you lend me {amount} until {weekday}?",
    "the rent is {amount} a month.",
    "my number is {phone}.",
    "call {name} on {phone}.",
    "you can reach the office at {phone}.",
    "the new address is {address}.",
    "send the package to {address}.",
    "{name} lives at {address}.",
    "turn left after {address}.",
    "we need {count_item} by {weekday}.",
    "there are {count_item} in the kitchen.",
    "{name} counted {count_item}.",
    "the box holds {count_item}.",
    "it is {distance} from here to {place}.",
    "the river is {distance} long.",
    "the recipe needs {quantity} of flour.",
    "the temperature dropped to {small} degrees.",
    "the package weighs {weight}.",
    "the parcel measures {distance} across.",
    "we walked for {duration} and covered {distance}.",
    "prices went up by {percent} last year.",
    "about {percent} of the students passed.",
    "the battery is at {percent}.",
    "chapter {number} begins on page {number2}.",
    "flight {number} to {city} leaves from gate {number2}.",
    "the train to {city} departs at {time} from platform {small}.",
    "room {number} is on the {ordinal} floor.",
    "she finished in {ordinal} place.",
    "this is the {ordinal} time i have asked.",
    "in {year}, {name} moved to {city}.",
    "the bridge was built in {year}.",
    "the company was founded in {year} in {city}.",
    "{name} and {name2} met in {city} in {year}.",
    "the population of {city} is about {big}.",
    "the score was {small} to {small2}.",
    "{name} scored {small} points on {weekday}.",
    "{number} plus {number2} equals {sum}.",
    "the code is {digits}.",
    "my pin is {digits}.",
    "order number {digits} has shipped.",
    "{name} called at {time} on {weekday}.",
    "see you on {weekday} at {time}.",
    "the library closes at {time} on {weekday}s.",
    "{name} owes {name2} {amount}.",
    "hello, this is {name} calling from {city}.",
    "i'll be there by {time}, {name}.",
    "is {event} still on {date}?",
    "did {name} really spend {amount} on {count_item}?",
    "we drove {distance} on {date}.",
    "the baby weighed {small} pounds {small2} ounces.",
    "it happened on {date_year} at about {time}.",
    "the exam lasts {duration}.",
    "the film runs for {duration}.",
    "wait {duration} before you try again.",
    "{name} ran the race in {duration}.",
]

SLOTS = {
    "event": lambda r: r.choice(EVENTS),
    "time": time_of_day, "time2": time_of_day,
    "date": date, "date_year": lambda r: date(r, with_year=True),
    "place": lambda r: r.choice(PLACES),
    "name": name, "name2": name,
    "amount": amount,
    "count_item": lambda r: count_of(r, *r.choice(ITEMS)),
    "weekday": lambda r: r.choice(WEEKDAYS),
    "phone": phone,
    "address": address,
    "measure": measure,
    "percent": percent,
    "distance": distance, "weight": weight, "quantity": quantity,
    "number": lambda r: cardinal(r.randint(1, 999)), "number2": lambda r: cardinal(r.randint(1, 999)),
    "small": lambda r: cardinal(r.randint(0, 30)), "small2": lambda r: cardinal(r.randint(0, 30)),
    "big": lambda r: cardinal(r.choice([r.randint(1000, 99999), r.randint(100000, 9999999)])),
    "ordinal": lambda r: ordinal(r.randint(1, 60)),
    "year": lambda r: year(r.randint(1066, 2039)),
    "city": lambda r: r.choice(CITIES),
    "digits": lambda r: digits("".join(str(r.randrange(10)) for _ in range(r.randint(3, 8))), r.choice(["oh", "zero"])),
}


def _duration(r):
    k = r.random()
    if k < 0.3:
        return cardinal(r.randint(2, 59)) + " minutes"
    if k < 0.5:
        return "an hour and " + r.choice(["a half", "a quarter", cardinal(r.randint(2, 59)) + " minutes"])
    if k < 0.7:
        return cardinal(r.randint(2, 12)) + " hours and " + cardinal(r.randint(2, 59)) + " minutes"
    if k < 0.85:
        return cardinal(r.randint(2, 59)) + " minutes and " + cardinal(r.randint(2, 59)) + " seconds"
    return r.choice(["half an hour", "a quarter of an hour", "ninety minutes", "a few seconds", "two hours"])


SLOTS["duration"] = _duration


def sentence(r):
    """One generated sentence (speak form)."""
    t = r.choice(TEMPLATES)
    vals = {}
    for key, fn in SLOTS.items():
        if "{" + key + "}" in t:
            vals[key] = fn(r)
    if "sum" in t:
        a, b = r.randint(1, 99), r.randint(1, 99)
        vals["number"], vals["number2"], vals["sum"] = cardinal(a), cardinal(b), cardinal(a + b)
    s = t.format(**vals)
    return " ".join(s.split())
