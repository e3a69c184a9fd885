"""The trip planner's parsing and planning (the Rust partner's tests, ported), and a whole
conversation against the SDK's mock host."""

from app import (
    MAX_DAYS,
    Trip,
    TripPlanner,
    civil_from_days,
    itinerary,
    parse_data,
    parse_iso,
    parse_text,
    question,
    span,
)

from aiphost_sdk import DataItem, State
from aiphost_sdk.testing import MockHost


def test_labelled_fields_in_any_case() -> None:
    trip = parse_text("Destination: Beijing, DATES = 2025-10-01 to 2025-10-03; budget: 5,000")
    assert trip == Trip("Beijing", "2025-10-01 to 2025-10-03", 5000.0)
    trip = parse_text("destination: Paris, France\nbudget: 1200.50 EUR")
    assert trip == Trip("Paris, France", None, 1200.5)


def test_plain_sentences() -> None:
    trip = parse_text(
        "I'd like to go to Beijing from 2025-10-01 to 2025-10-03 with a budget of 5000 yuan."
    )
    assert trip == Trip("Beijing", "2025-10-01 to 2025-10-03", 5000.0)
    trip = parse_text("Plan a trip to New York, please")
    assert trip.destination == "New York"
    assert trip.missing() == ["dates", "budget"]
    assert parse_text("hello there") == Trip()
    assert parse_text("my budget is 3000").budget == 3000.0
    assert parse_text("no budget yet, maybe in 2026").budget is None
    assert parse_text("Budget: about $3,000.").budget == 3000.0
    assert parse_text("budget ¥8000").budget == 8000.0


def test_data_items() -> None:
    trip = parse_data(
        {"destination": "Tokyo", "dates": ["2025-03-30", "2025-04-02"], "budget": 80000}
    )
    assert trip == Trip("Tokyo", "2025-03-30 to 2025-04-02", 80000.0)
    trip = parse_data({"dates": {"start": "2025-01-01", "end": "2025-01-02"}, "budget": "900"})
    assert (trip.dates, trip.budget) == ("2025-01-01 to 2025-01-02", 900.0)
    assert parse_data({"destination": 3, "budget": -5}) == Trip()


def test_merging_turns() -> None:
    trip = parse_text("destination: Beijing")
    trip.merge(parse_text("budget 5000"))
    assert trip.missing() == ["dates"]
    q = question(trip, trip.missing())
    assert "Got it: destination Beijing, budget 5000." in q
    assert "your travel dates" in q
    trip.merge(parse_text("dates: 2025-10-01 to 2025-10-03"))
    assert trip.missing() == []


def test_itinerary_is_day_by_day() -> None:
    product = itinerary(Trip("Beijing", "2025-12-30 to 2026-01-02", 5000.0))
    text = product.items[0].as_text()
    assert text is not None
    assert "(4 days)" in text
    assert "Day 1 (2025-12-30): Arrive in Beijing" in text
    assert "Day 3 (2026-01-01)" in text
    assert "Day 4 (2026-01-02): Last breakfast" in text
    data = product.items[1].as_data()
    assert data is not None
    assert data["days"] == 4 and len(data["plan"]) == 4
    assert data["budget"]["perDay"] == 1250.0
    assert data["budget"]["split"]["lodging"] == 2000.0


def test_dates() -> None:
    assert parse_iso("2024-02-29") == 19_782
    assert parse_iso("2025-02-29") is None
    assert civil_from_days(19_782) == "2024-02-29"
    assert civil_from_days(0) == "1970-01-01"
    assert span("next weekend") == (None, 3)
    assert span("2025-10-03 to 2025-10-01")[1] == 3
    assert span("2025-01-01 to 2025-12-31")[1] == MAX_DAYS


def test_a_conversation_over_three_turns() -> None:
    host = MockHost(TripPlanner)
    assert host.start([]).state == State.REJECTED

    turn = host.start([DataItem.text("destination: Beijing")])
    assert turn.state == State.AWAITING_INPUT
    assert turn.status_items[1].as_data() == {"missing": ["dates", "budget"]}
    assert turn.text().startswith("Got it: destination Beijing. To plan the trip I still need")

    turn = host.continue_(turn.task_id, [DataItem.data({"budget": 5000})])
    assert turn.status_items[1].as_data() == {"missing": ["dates"]}

    turn = host.continue_(turn.task_id, [DataItem.text("dates: 2025-10-01 to 2025-10-03")])
    assert turn.state == State.AWAITING_COMPLETION
    itinerary_ = turn.product("itinerary")
    assert (
        itinerary_.items[0]
        .as_text()
        .startswith("Trip to Beijing, 2025-10-01 to 2025-10-03 (3 days)")
    )  # type: ignore[union-attr]
    assert itinerary_.items[2].as_data() == {"itineraryNumber": 1}

    host.complete(turn.task_id)
    assert "trip" not in host.task_kv[turn.task_id]
    assert host.agent_kv["itineraries-made"] == b"1"
