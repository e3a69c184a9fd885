"""Trip planner (Python): a multi-turn partner in the style of the AIP spec's travel examples.

A faithful port of ``plugins/trip-planner`` (Rust): the same questions, the same parsing, the same
itinerary. It needs a destination, travel dates and a budget. It reads them from text, either
labelled (``destination: Beijing``, ``dates: 2025-10-01 to 2025-10-03``, ``budget: 5000``, any case,
``:`` or ``=``) or in a plain sentence ("I'd like to go to Beijing from 2025-10-01 to 2025-10-03
with a budget of 5000"), and from ``data`` items with the keys ``destination``, ``dates`` and
``budget``. What it has learnt is kept in the task's key-value store, so each turn only needs to
add what is missing. While something is missing it asks for it (awaiting-input, with a text
question and a ``{"missing": [...]}`` data item); once everything is known it produces the product
``itinerary``: a day-by-day plan as text plus the same plan as structured data.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, TypeGuard

from aiphost_sdk import (
    DataItem,
    Decision,
    EndReason,
    KvError,
    Outcome,
    Partner,
    Product,
    Task,
    export,
    log,
)

TRIP_KEY = "trip"
"""The task KV key holding what has been learnt so far."""
COUNT_KEY = "itineraries-made"
"""Agent-wide count of itineraries made (shared by all tasks of this partner)."""
MAX_DAYS = 14
"""The longest trip planned day by day."""


@dataclass
class Trip:
    """What the planner knows about the trip."""

    destination: str | None = None
    dates: str | None = None
    budget: float | None = None

    def merge(self, newer: Trip) -> None:
        """Takes every field ``newer`` knows (later turns correct earlier ones)."""
        if newer.destination is not None:
            self.destination = newer.destination
        if newer.dates is not None:
            self.dates = newer.dates
        if newer.budget is not None:
            self.budget = newer.budget

    def missing(self) -> list[str]:
        """The fields still unknown, in asking order."""
        fields = [("destination", self.destination), ("dates", self.dates), ("budget", self.budget)]
        return [name for name, value in fields if value is None]

    def known(self) -> list[str]:
        """What is known, for people."""
        known = []
        if self.destination is not None:
            known.append(f"destination {self.destination}")
        if self.dates is not None:
            known.append(f"dates {self.dates}")
        if self.budget is not None:
            known.append(f"budget {money(self.budget)}")
        return known

    @classmethod
    def from_json(cls, value: Any) -> Trip:
        """The trip saved by an earlier turn (anything unexpected is forgotten)."""
        if not isinstance(value, dict):
            return cls()
        destination, dates, budget = (value.get(k) for k in ("destination", "dates", "budget"))
        return cls(
            destination if isinstance(destination, str) else None,
            dates if isinstance(dates, str) else None,
            float(budget) if _is_number(budget) else None,
        )


@export
class TripPlanner(Partner):
    """The trip-planner partner."""

    def decide(self, task: Task, input: list[DataItem]) -> Decision:
        if not input:
            return Decision.reject(
                "trip-planner needs a request to start: send a text or data item with the "
                'destination, dates and budget (for example "destination: Beijing, dates: '
                '2025-10-01 to 2025-10-03, budget: 5000")'
            )
        return Decision.accept()

    def work(self, task: Task, input: list[DataItem]) -> Outcome:
        try:
            trip = Trip.from_json(task.kv.get_json(TRIP_KEY))
        except KvError as e:
            log.warn(f"could not read what was learnt so far: {e}")
            trip = Trip()
        for item in input:
            trip.merge(learn(item))
        saved: KvError | None = None
        try:
            task.kv.set_json(TRIP_KEY, asdict(trip))
        except KvError as e:
            saved = e
        missing = trip.missing()
        if not missing:
            if saved is not None:
                log.warn(f"could not save the trip: {saved}")
            return Outcome.done([numbered(task, itinerary(trip))])
        if saved is not None:
            return Outcome.fail(f"trip-planner cannot remember the trip between turns: {saved}")
        return Outcome.need_input(
            [DataItem.text(question(trip, missing)), DataItem.data({"missing": missing})]
        )

    def completed(self, task: Task, reason: EndReason) -> None:
        forget(task)

    def canceled(self, task: Task, reason: EndReason) -> None:
        forget(task)


def numbered(task: Task, product: Product) -> Product:
    """Numbers the itinerary with the agent-wide count of itineraries made so far."""
    try:
        made = task.agent_kv.get_json(COUNT_KEY, 0)
    except KvError:
        made = 0
    made = (made if isinstance(made, int) and not isinstance(made, bool) and made >= 0 else 0) + 1
    try:
        task.agent_kv.set_json(COUNT_KEY, made)
    except KvError as e:
        log.warn(f"could not count the itinerary: {e}")
    return product.with_item(DataItem.data({"itineraryNumber": made}))


def forget(task: Task) -> None:
    """Drops what was learnt about the trip."""
    try:
        task.kv.delete(TRIP_KEY)
    except KvError as e:
        log.warn(f"could not forget the trip: {e}")


def question(trip: Trip, missing: list[str]) -> str:
    """The question asking for what is missing."""
    text = ""
    known = trip.known()
    if known:
        text += f"Got it: {', '.join(known)}. "
    wanted = {
        "destination": "where you want to go",
        "dates": "your travel dates",
    }
    needed = join_and([wanted.get(m, "your total budget") for m in missing])
    text += f"To plan the trip I still need {needed}."
    examples = {
        "destination": "destination: Beijing",
        "dates": "dates: 2025-10-01 to 2025-10-03",
    }
    text += f' For example: "{", ".join(examples.get(m, "budget: 5000") for m in missing)}".'
    return text


def join_and(parts: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if not parts:
        return ""
    if len(parts) == 1:
        return parts[0]
    return f"{', '.join(parts[:-1])} and {parts[-1]}"


def learn(item: DataItem) -> Trip:
    """What one DataItem says about the trip."""
    text = item.as_text()
    if text is not None:
        return parse_text(text)
    data = item.as_data()
    if data is not None:
        return parse_data(data)
    return Trip()


def _is_number(value: Any) -> TypeGuard[int | float]:
    """Whether ``value`` is a JSON number (``True`` and ``False`` are not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_data(data: dict[str, Any]) -> Trip:
    """A ``{"destination", "dates", "budget"}`` data item."""
    destination = data.get("destination")
    destination = destination.strip() if isinstance(destination, str) else None
    raw_dates = data.get("dates")
    dates: str | None = None
    if isinstance(raw_dates, str):
        dates = normalize_dates(raw_dates)
    elif isinstance(raw_dates, list):
        dates = normalize_dates(" to ".join(p for p in raw_dates if isinstance(p, str)))
    elif isinstance(raw_dates, dict):
        start, end = raw_dates.get("start"), raw_dates.get("end")
        start = start if isinstance(start, str) else ""
        end = end if isinstance(end, str) else ""
        dates = normalize_dates(f"{start} to {end}")
    raw_budget = data.get("budget")
    budget: float | None = None
    if _is_number(raw_budget):
        b = float(raw_budget)
        budget = b if math.isfinite(b) and b > 0 else None
    elif isinstance(raw_budget, str):
        budget = first_number(raw_budget)
    return Trip(destination or None, dates, budget)


LABELS = ("destination", "dates", "date", "budget")

# Lower-cases ASCII letters only, as Rust's to_ascii_lowercase: the text keeps its length, so
# positions in the lower-cased text are positions in the text.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(text: str) -> str:
    """``text`` with its ASCII letters lower-cased."""
    return text.translate(_ASCII_LOWER)


def parse_text(text: str) -> Trip:
    """What a text says about the trip, labelled or in a sentence."""
    destination = labelled(text, ["destination"])
    if not destination:
        destination = destination_in_sentence(text)
    dates_label = labelled(text, ["dates", "date"])
    dates = normalize_dates(dates_label) if dates_label is not None else None
    if dates is None:
        dates = iso_dates_in(text)
    budget_label = labelled(text, ["budget"])
    budget = first_number(budget_label) if budget_label is not None else None
    if budget is None:
        budget = budget_in_sentence(text)
    return Trip(destination, dates, budget)


def _label_at(lower: str, i: int, label: str) -> bool:
    """Whether ``label`` at ``i`` starts a word and is followed by ``:`` or ``=``."""
    before_ok = i == 0 or not lower[i - 1].isalnum()
    after = lower[i + len(label) :].lstrip(" \t")
    return before_ok and (after.startswith(":") or after.startswith("="))


def labelled(text: str, labels: list[str]) -> str | None:
    """The value after ``label:`` or ``label=`` (any case), up to the end of the line, a ``;`` or
    the next label; ``None`` without such a label."""
    lower = ascii_lower(text)
    for label in labels:
        start = lower.find(label)
        while start >= 0:
            after = start + len(label)
            if _label_at(lower, start, label):
                rest = lower[after:]
                value_start = after + (len(rest) - len(rest.lstrip(" \t"))) + 1
                ends = [
                    i for i in (text.find("\n", value_start), text.find(";", value_start)) if i >= 0
                ]
                value_end = min(ends) if ends else len(text)
                following = next_label(lower, value_start, value_end)
                if following is not None:
                    value_end = following
                return text[value_start:value_end].strip().rstrip(",.;").strip()
            start = lower.find(label, after)
    return None


def next_label(lower: str, start: int, end: int) -> int | None:
    """Where the next ``label:`` starts in ``lower[start:end]``, if anywhere."""
    segment = lower[start:end]
    found = []
    for label in LABELS:
        i = segment.find(label)
        while i >= 0:
            if _label_at(segment, i, label):
                found.append(start + i)
                break
            i = segment.find(label, i + len(label))
    return min(found) if found else None


def _strip_non_alnum(word: str) -> str:
    start, end = 0, len(word)
    while start < end and not word[start].isalnum():
        start += 1
    while end > start and not word[end - 1].isalnum():
        end -= 1
    return word[start:end]


def destination_in_sentence(text: str) -> str | None:
    """ "... go to Beijing ...", "... visit New York ...": the capitalised words after to/visit."""
    words = text.split()
    for i, word in enumerate(words):
        if ascii_lower(word) not in ("to", "visit", "visiting"):
            continue
        place = []
        for following in words[i + 1 :]:
            clean = _strip_non_alnum(following)
            if not clean or not clean[0].isupper():
                break
            place.append(clean)
            if following.endswith((",", ".", ";", "!", "?")):
                break
        if place:
            return " ".join(place)
    return None


FILLER = {
    "", "of", "is", "about", "around", "approximately", "roughly", "up", "to", "max", "maximum",
    "under", "usd", "cny", "rmb", "eur", "yuan", "dollars",
}  # fmt: skip


def _strip_non_ascii_alnum(word: str) -> str:
    start, end = 0, len(word)
    while start < end and not (word[start].isascii() and word[start].isalnum()):
        start += 1
    while end > start and not (word[end - 1].isascii() and word[end - 1].isalnum()):
        end -= 1
    return word[start:end]


def budget_in_sentence(text: str) -> float | None:
    """ "... a budget of 5,000 ...", "budget is about $3000": a number after "budget" with at most
    a few filler words (of, is, about, a currency) in between."""
    lower = ascii_lower(text)
    i = lower.find("budget")
    while i >= 0:
        for word in lower[i + len("budget") :].split()[:4]:
            if any(c in "0123456789" for c in word):
                number = first_number(word)
                if number is not None:
                    return number
                break
            if _strip_non_ascii_alnum(word) not in FILLER:
                break
        i = lower.find("budget", i + len("budget"))
    return None


def first_number(text: str) -> float | None:
    """The first positive number in ``text`` (thousands separators allowed: "5,000.50")."""
    start = next((i for i, c in enumerate(text) if c in "0123456789"), None)
    if start is None:
        return None
    digits = ""
    for c in text[start:]:
        if c not in "0123456789,.":
            break
        if c != ",":
            digits += c
    try:
        number = float(digits.rstrip("."))
    except ValueError:
        return None
    return number if math.isfinite(number) and number > 0 else None


def normalize_dates(text: str) -> str | None:
    """Dates as given: two ISO dates become "start to end", one stays, anything else is kept as
    text."""
    text = text.strip()
    if not text:
        return None
    return iso_dates_in(text) or text


def iso_dates_in(text: str) -> str | None:
    """The ISO dates (YYYY-MM-DD) in ``text``: "a to b" for two or more, "a" for one."""
    words = "".join(c if c in "0123456789-" else " " for c in text).split()
    dates = [w for w in words if parse_iso(w) is not None]
    if not dates:
        return None
    if len(dates) == 1:
        return dates[0]
    return f"{dates[0]} to {dates[-1]}"


def _digits(s: str) -> bool:
    return s.isascii() and s.isdigit()


def parse_iso(word: str) -> int | None:
    """Days since 1970-01-01 of an ISO date, if it is a real date."""
    parts = word.split("-")
    if len(parts) != 3:
        return None
    y, m, d = parts
    if len(y) != 4 or len(m) != 2 or len(d) != 2 or not (_digits(y) and _digits(m) and _digits(d)):
        return None
    year, month, day = int(y), int(m), int(d)
    if not 1 <= month <= 12 or day == 0 or day > days_in_month(year, month):
        return None
    return days_from_civil(year, month, day)


def days_in_month(y: int, m: int) -> int:
    """The days of month ``m`` of year ``y``."""
    if m == 2:
        return 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28
    return 30 if m in (4, 6, 9, 11) else 31


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 (Howard Hinnant's algorithm)."""
    y = y - 1 if m <= 2 else y
    era = y // 400
    yoe = y - era * 400
    mp = m - 3 if m > 2 else m + 9
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def civil_from_days(z: int) -> str:
    """The ISO date of a day number (inverse of :func:`days_from_civil`)."""
    z += 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    y = yoe + era * 400 + (1 if m <= 2 else 0)
    return f"{y:04}-{m:02}-{d:02}"


def money(amount: float) -> str:
    """An amount without cents when it has none."""
    return f"{amount:.0f}" if amount == math.floor(amount) else f"{amount:.2f}"


def cents(amount: float) -> float:
    """Rounded to cents, halves away from zero (as Rust's ``f64::round``)."""
    return math.floor(amount * 100.0 + 0.5) / 100.0


def span(dates: str) -> tuple[int | None, int]:
    """The first day and the number of days of the trip, if its dates are ISO dates."""
    days = [d for d in (parse_iso(p) for p in dates.split(" to ")) if d is not None]
    if len(days) == 2 and days[1] >= days[0]:
        return days[0], min(days[1] - days[0] + 1, MAX_DAYS)
    if days:
        return days[0], 3
    return None, 3


def activity(destination: str, day: int, days: int) -> str:
    """What to do on ``day`` of ``days``."""
    if day == 1:
        return f"Arrive in {destination}, check in, and take an evening walk around the centre."
    if day == days:
        return f"Last breakfast, pick up souvenirs and depart from {destination}."
    return [
        f"Visit the best-known landmarks and museums of {destination}.",
        "Explore the old neighbourhoods and markets; try the street food.",
        f"Day trip to the countryside around {destination}.",
        "Slow day: parks and cafés, then a show in the evening.",
    ][(day - 2) % 4]


def itinerary(trip: Trip) -> Product:
    """The product ``itinerary``: the plan as text, and as data."""
    destination = trip.destination or "your destination"
    dates = trip.dates or ""
    budget = trip.budget or 0.0
    first_day, days = span(dates)
    per_day = budget / days

    text = (
        f"Trip to {destination}, {dates} ({days} day{'' if days == 1 else 's'}), "
        f"budget {money(budget)} (about {money(per_day)} per day)\n"
    )
    plan = []
    for day in range(1, days + 1):
        date = None if first_day is None else civil_from_days(first_day + day - 1)
        what = activity(destination, day, days)
        text += f"\nDay {day} ({date}): {what}" if date else f"\nDay {day}: {what}"
        plan.append({"day": day, "date": date, "activity": what})
    text += "\n\nBudget split:"
    split = {}
    for what, share in (
        ("lodging", 0.40),
        ("food", 0.25),
        ("transport", 0.15),
        ("activities", 0.20),
    ):
        amount = cents(budget * share)
        text += f" {what} {money(amount)};"
        split[what] = amount
    text = text[:-1]

    return (
        Product("itinerary")
        .named("itinerary")
        .described(f"Day-by-day plan for {destination}")
        .with_item(DataItem.text(text))
        .with_item(
            DataItem.data(
                {
                    "destination": destination,
                    "dates": dates,
                    "days": days,
                    "budget": {"total": budget, "perDay": cents(per_day), "split": split},
                    "plan": plan,
                }
            )
        )
    )
