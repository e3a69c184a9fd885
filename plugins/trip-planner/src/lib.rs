//! Trip planner: a multi-turn partner in the style of the AIP spec's travel examples.
//!
//! It needs a destination, travel dates and a budget. It reads them from text, either labelled
//! (`destination: Beijing`, `dates: 2025-10-01 to 2025-10-03`, `budget: 5000`, any case, `:` or
//! `=`) or in a plain sentence ("I'd like to go to Beijing from 2025-10-01 to 2025-10-03 with a
//! budget of 5000"), and from `data` items with the keys `destination`, `dates` and `budget`.
//! What it has learnt is kept in the task's key-value store, so each turn only needs to add what
//! is missing. While something is missing it asks for it (awaiting-input, with a text question
//! and a `{"missing": [...]}` data item); once everything is known it produces the product
//! `itinerary`: a day-by-day plan as text plus the same plan as structured data.

use aiphost_sdk::serde_json::{Map, Value, json};
use aiphost_sdk::{DataItem, Decision, EndReason, Outcome, Partner, Product, Task, log};
use serde::{Deserialize, Serialize};

/// The trip-planner partner.
pub struct TripPlanner;

/// The task KV key holding what has been learnt so far.
const TRIP_KEY: &str = "trip";
/// Agent-wide count of itineraries made (shared by all tasks of this partner).
const COUNT_KEY: &str = "itineraries-made";

/// The longest trip planned day by day.
const MAX_DAYS: i64 = 14;

/// What the planner knows about the trip.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Trip {
    destination: Option<String>,
    dates: Option<String>,
    budget: Option<f64>,
}

impl Trip {
    /// Takes every field `newer` knows (later turns correct earlier ones).
    fn merge(&mut self, newer: Trip) {
        if newer.destination.is_some() {
            self.destination = newer.destination;
        }
        if newer.dates.is_some() {
            self.dates = newer.dates;
        }
        if newer.budget.is_some() {
            self.budget = newer.budget;
        }
    }

    fn missing(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.destination.is_none() {
            missing.push("destination");
        }
        if self.dates.is_none() {
            missing.push("dates");
        }
        if self.budget.is_none() {
            missing.push("budget");
        }
        missing
    }

    fn known(&self) -> Vec<String> {
        let mut known = Vec::new();
        if let Some(d) = &self.destination {
            known.push(format!("destination {d}"));
        }
        if let Some(d) = &self.dates {
            known.push(format!("dates {d}"));
        }
        if let Some(b) = self.budget {
            known.push(format!("budget {}", money(b)));
        }
        known
    }
}

impl Partner for TripPlanner {
    fn decide(_task: &Task, input: &[DataItem]) -> Decision {
        if input.is_empty() {
            Decision::reject(
                "trip-planner needs a request to start: send a text or data item with the \
                 destination, dates and budget (for example \"destination: Beijing, dates: \
                 2025-10-01 to 2025-10-03, budget: 5000\")",
            )
        } else {
            Decision::Accept
        }
    }

    fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
        let kv = task.kv();
        let mut trip = match kv.get_json::<Trip>(TRIP_KEY) {
            Ok(saved) => saved.unwrap_or_default(),
            Err(e) => {
                log::warn(&format!("could not read what was learnt so far: {e}"));
                Trip::default()
            }
        };
        for item in &input {
            trip.merge(learn(item));
        }
        let saved = kv.set_json(TRIP_KEY, &trip);
        let missing = trip.missing();
        if missing.is_empty() {
            if let Err(e) = saved {
                log::warn(&format!("could not save the trip: {e}"));
            }
            return Outcome::Done(vec![numbered(task, itinerary(&trip))]);
        }
        if let Err(e) = saved {
            return Outcome::fail(format!(
                "trip-planner cannot remember the trip between turns: {e}"
            ));
        }
        Outcome::NeedInput(vec![
            DataItem::text(question(&trip, &missing)),
            DataItem::data(json!({ "missing": missing })),
        ])
    }

    fn completed(task: &Task, _reason: EndReason) {
        forget(task);
    }

    fn canceled(task: &Task, _reason: EndReason) {
        forget(task);
    }
}

aiphost_sdk::export!(TripPlanner);

/// Number the itinerary with the agent-wide count of itineraries made so far.
fn numbered(task: &Task, product: Product) -> Product {
    let agent = task.agent_kv();
    let made: u64 = agent.get_json(COUNT_KEY).ok().flatten().unwrap_or(0) + 1;
    if let Err(e) = agent.set_json(COUNT_KEY, &made) {
        log::warn(&format!("could not count the itinerary: {e}"));
    }
    product.with_item(DataItem::data(json!({ "itineraryNumber": made })))
}

fn forget(task: &Task) {
    if let Err(e) = task.kv().delete(TRIP_KEY) {
        log::warn(&format!("could not forget the trip: {e}"));
    }
}

fn question(trip: &Trip, missing: &[&str]) -> String {
    let mut text = String::new();
    let known = trip.known();
    if !known.is_empty() {
        text.push_str(&format!("Got it: {}. ", known.join(", ")));
    }
    let wanted: Vec<&str> = missing
        .iter()
        .map(|m| match *m {
            "destination" => "where you want to go",
            "dates" => "your travel dates",
            _ => "your total budget",
        })
        .collect();
    text.push_str(&format!(
        "To plan the trip I still need {}.",
        join_and(&wanted)
    ));
    let examples: Vec<&str> = missing
        .iter()
        .map(|m| match *m {
            "destination" => "destination: Beijing",
            "dates" => "dates: 2025-10-01 to 2025-10-03",
            _ => "budget: 5000",
        })
        .collect();
    text.push_str(&format!(" For example: \"{}\".", examples.join(", ")));
    text
}

fn join_and(parts: &[&str]) -> String {
    match parts {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// What one DataItem says about the trip.
fn learn(item: &DataItem) -> Trip {
    if let Some(text) = item.as_text() {
        parse_text(text)
    } else if let Some(data) = item.as_data() {
        parse_data(data)
    } else {
        Trip::default()
    }
}

fn parse_data(data: &Map<String, Value>) -> Trip {
    let destination = data
        .get("destination")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(str::to_owned);
    let dates = match data.get("dates") {
        Some(Value::String(s)) => normalize_dates(s),
        Some(Value::Array(parts)) => {
            let parts: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
            normalize_dates(&parts.join(" to "))
        }
        Some(Value::Object(range)) => {
            let start = range.get("start").and_then(Value::as_str).unwrap_or("");
            let end = range.get("end").and_then(Value::as_str).unwrap_or("");
            normalize_dates(&format!("{start} to {end}"))
        }
        _ => None,
    };
    let budget = match data.get("budget") {
        Some(Value::Number(n)) => n.as_f64().filter(|b| b.is_finite() && *b > 0.0),
        Some(Value::String(s)) => first_number(s),
        _ => None,
    };
    Trip {
        destination,
        dates,
        budget,
    }
}

const LABELS: [&str; 4] = ["destination", "dates", "date", "budget"];

fn parse_text(text: &str) -> Trip {
    let destination = labelled(text, &["destination"])
        .filter(|d| !d.is_empty())
        .or_else(|| destination_in_sentence(text));
    let dates = labelled(text, &["dates", "date"])
        .and_then(|d| normalize_dates(&d))
        .or_else(|| iso_dates_in(text));
    let budget = labelled(text, &["budget"])
        .and_then(|b| first_number(&b))
        .or_else(|| budget_in_sentence(text));
    Trip {
        destination,
        dates,
        budget,
    }
}

/// The value after `label:` or `label=` (any case), up to the end of the line, a `;` or the next
/// label; `None` without such a label.
fn labelled(text: &str, labels: &[&str]) -> Option<String> {
    // ASCII lowercasing keeps byte offsets, so positions in `lower` are positions in `text`.
    let lower = text.to_ascii_lowercase();
    for label in labels {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(label) {
            let start = from + pos;
            from = start + label.len();
            let before_ok = lower[..start]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric());
            let rest = &lower[from..];
            let trimmed = rest.trim_start_matches([' ', '\t']);
            if !before_ok || !(trimmed.starts_with(':') || trimmed.starts_with('=')) {
                continue;
            }
            let value_start = from + (rest.len() - trimmed.len()) + 1;
            let mut value_end = text[value_start..]
                .find(['\n', ';'])
                .map_or(text.len(), |i| value_start + i);
            if let Some(next) = next_label(&lower, value_start, value_end) {
                value_end = next;
            }
            let value = text[value_start..value_end]
                .trim()
                .trim_end_matches([',', '.', ';'])
                .trim();
            return Some(value.to_owned());
        }
    }
    None
}

/// Where the next `label:` starts in `lower[start..end]`, if anywhere.
fn next_label(lower: &str, start: usize, end: usize) -> Option<usize> {
    let segment = &lower[start..end];
    LABELS
        .iter()
        .filter_map(|label| {
            segment.match_indices(label).find_map(|(i, _)| {
                let before_ok = segment[..i]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !c.is_alphanumeric());
                let after = segment[i + label.len()..].trim_start_matches([' ', '\t']);
                (before_ok && (after.starts_with(':') || after.starts_with('=')))
                    .then_some(start + i)
            })
        })
        .min()
}

/// "... go to Beijing ...", "... visit New York ...": the capitalised words after to/visit.
fn destination_in_sentence(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    for (i, word) in words.iter().enumerate() {
        let w = word.to_ascii_lowercase();
        if !matches!(w.as_str(), "to" | "visit" | "visiting") {
            continue;
        }
        let mut place: Vec<&str> = Vec::new();
        for next in &words[i + 1..] {
            let clean = next.trim_matches(|c: char| !c.is_alphanumeric());
            if !clean.chars().next().is_some_and(char::is_uppercase) {
                break;
            }
            place.push(clean);
            if next.ends_with([',', '.', ';', '!', '?']) {
                break;
            }
        }
        if !place.is_empty() {
            return Some(place.join(" "));
        }
    }
    None
}

/// "... a budget of 5,000 ...", "budget is about $3000": a number after "budget" with at most a
/// few filler words (of, is, about, a currency) in between.
fn budget_in_sentence(text: &str) -> Option<f64> {
    const FILLER: [&str; 18] = [
        "",
        "of",
        "is",
        "about",
        "around",
        "approximately",
        "roughly",
        "up",
        "to",
        "max",
        "maximum",
        "under",
        "usd",
        "cny",
        "rmb",
        "eur",
        "yuan",
        "dollars",
    ];
    let lower = text.to_ascii_lowercase();
    lower.match_indices("budget").find_map(|(i, _)| {
        let after = &lower[i + "budget".len()..];
        for word in after.split_whitespace().take(4) {
            if word.contains(|c: char| c.is_ascii_digit()) {
                return first_number(word);
            }
            let bare = word.trim_matches(|c: char| !c.is_ascii_alphanumeric());
            if !FILLER.contains(&bare) {
                return None;
            }
        }
        None
    })
}

/// The first positive number in `text` (thousands separators allowed: "5,000.50").
fn first_number(text: &str) -> Option<f64> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let digits: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '.')
        .filter(|c| *c != ',')
        .collect();
    let digits = digits.trim_end_matches('.');
    digits
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n > 0.0)
}

/// Dates as given: two ISO dates become "start to end", one stays, anything else is kept as text.
fn normalize_dates(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    iso_dates_in(text).or_else(|| Some(text.to_owned()))
}

/// The ISO dates (YYYY-MM-DD) in `text`: "a to b" for two or more, "a" for one.
fn iso_dates_in(text: &str) -> Option<String> {
    let dates: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|w| parse_iso(w).is_some())
        .collect();
    match dates.as_slice() {
        [] => None,
        [one] => Some((*one).to_owned()),
        [first, .., last] => Some(format!("{first} to {last}")),
    }
}

/// Days since 1970-01-01 of an ISO date, if it is a real date.
fn parse_iso(word: &str) -> Option<i64> {
    let mut parts = word.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d): (i64, u32, u32) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The ISO date of a day number (inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> String {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn money(amount: f64) -> String {
    if amount.fract() == 0.0 {
        format!("{amount:.0}")
    } else {
        format!("{amount:.2}")
    }
}

/// The first day and the number of days of the trip, if its dates are ISO dates.
fn span(dates: &str) -> (Option<i64>, i64) {
    let days: Vec<i64> = dates.split(" to ").filter_map(parse_iso).collect();
    match days.as_slice() {
        [start, end] if end >= start => (Some(*start), (end - start + 1).min(MAX_DAYS)),
        [start, ..] => (Some(*start), 3),
        [] => (None, 3),
    }
}

fn activity(destination: &str, day: i64, days: i64) -> String {
    if day == 1 {
        return format!(
            "Arrive in {destination}, check in, and take an evening walk around the centre."
        );
    }
    if day == days {
        return format!("Last breakfast, pick up souvenirs and depart from {destination}.");
    }
    match (day - 2) % 4 {
        0 => format!("Visit the best-known landmarks and museums of {destination}."),
        1 => "Explore the old neighbourhoods and markets; try the street food.".to_owned(),
        2 => format!("Day trip to the countryside around {destination}."),
        _ => "Slow day: parks and cafés, then a show in the evening.".to_owned(),
    }
}

fn itinerary(trip: &Trip) -> Product {
    let destination = trip.destination.as_deref().unwrap_or("your destination");
    let dates = trip.dates.as_deref().unwrap_or("");
    let budget = trip.budget.unwrap_or(0.0);
    let (first_day, days) = span(dates);
    let per_day = budget / days as f64;

    let mut text = format!(
        "Trip to {destination}, {dates} ({days} day{}), budget {} (about {} per day)\n",
        if days == 1 { "" } else { "s" },
        money(budget),
        money(per_day)
    );
    let mut plan = Vec::new();
    for day in 1..=days {
        let date = first_day.map(|d| civil_from_days(d + day - 1));
        let what = activity(destination, day, days);
        match &date {
            Some(date) => text.push_str(&format!("\nDay {day} ({date}): {what}")),
            None => text.push_str(&format!("\nDay {day}: {what}")),
        }
        plan.push(json!({ "day": day, "date": date, "activity": what }));
    }
    let split = [
        ("lodging", 0.40),
        ("food", 0.25),
        ("transport", 0.15),
        ("activities", 0.20),
    ];
    text.push_str("\n\nBudget split:");
    let mut split_json = Map::new();
    for (what, share) in split {
        let amount = (budget * share * 100.0).round() / 100.0;
        text.push_str(&format!(" {what} {};", money(amount)));
        split_json.insert(what.to_owned(), json!(amount));
    }
    text.pop();

    Product::new("itinerary")
        .named("itinerary")
        .described(format!("Day-by-day plan for {destination}"))
        .with_item(DataItem::text(text))
        .with_item(DataItem::data(json!({
            "destination": destination,
            "dates": dates,
            "days": days,
            "budget": {
                "total": budget,
                "perDay": (per_day * 100.0).round() / 100.0,
                "split": split_json,
            },
            "plan": plan,
        })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labelled_fields_in_any_case() {
        let trip =
            parse_text("Destination: Beijing, DATES = 2025-10-01 to 2025-10-03; budget: 5,000");
        assert_eq!(trip.destination.as_deref(), Some("Beijing"));
        assert_eq!(trip.dates.as_deref(), Some("2025-10-01 to 2025-10-03"));
        assert_eq!(trip.budget, Some(5000.0));

        let trip = parse_text("destination: Paris, France\nbudget: 1200.50 EUR");
        assert_eq!(trip.destination.as_deref(), Some("Paris, France"));
        assert_eq!(trip.dates, None);
        assert_eq!(trip.budget, Some(1200.5));
    }

    #[test]
    fn plain_sentences() {
        let trip = parse_text(
            "I'd like to go to Beijing from 2025-10-01 to 2025-10-03 with a budget of 5000 yuan.",
        );
        assert_eq!(trip.destination.as_deref(), Some("Beijing"));
        assert_eq!(trip.dates.as_deref(), Some("2025-10-01 to 2025-10-03"));
        assert_eq!(trip.budget, Some(5000.0));

        let trip = parse_text("Plan a trip to New York, please");
        assert_eq!(trip.destination.as_deref(), Some("New York"));
        assert_eq!(trip.missing(), ["dates", "budget"]);

        assert_eq!(parse_text("hello there"), Trip::default());
        assert_eq!(parse_text("my budget is 3000").budget, Some(3000.0));
        assert_eq!(parse_text("no budget yet, maybe in 2026").budget, None);
        assert_eq!(parse_text("Budget: about $3,000.").budget, Some(3000.0));
        assert_eq!(parse_text("budget ¥8000").budget, Some(8000.0));
    }

    #[test]
    fn data_items() {
        let data =
            json!({"destination": "Tokyo", "dates": ["2025-03-30", "2025-04-02"], "budget": 80000});
        let trip = parse_data(data.as_object().unwrap());
        assert_eq!(trip.destination.as_deref(), Some("Tokyo"));
        assert_eq!(trip.dates.as_deref(), Some("2025-03-30 to 2025-04-02"));
        assert_eq!(trip.budget, Some(80000.0));
        let data = json!({"dates": {"start": "2025-01-01", "end": "2025-01-02"}, "budget": "900"});
        let trip = parse_data(data.as_object().unwrap());
        assert_eq!(trip.dates.as_deref(), Some("2025-01-01 to 2025-01-02"));
        assert_eq!(trip.budget, Some(900.0));
        let data = json!({"destination": 3, "budget": -5});
        assert_eq!(parse_data(data.as_object().unwrap()), Trip::default());
    }

    #[test]
    fn merging_turns() {
        let mut trip = parse_text("destination: Beijing");
        trip.merge(parse_text("budget 5000"));
        assert_eq!(trip.missing(), ["dates"]);
        let q = question(&trip, &trip.missing());
        assert!(
            q.contains("Got it: destination Beijing, budget 5000."),
            "{q}"
        );
        assert!(q.contains("your travel dates"), "{q}");
        trip.merge(parse_text("dates: 2025-10-01 to 2025-10-03"));
        assert!(trip.missing().is_empty());
    }

    #[test]
    fn itinerary_is_day_by_day() {
        let trip = Trip {
            destination: Some("Beijing".into()),
            dates: Some("2025-12-30 to 2026-01-02".into()),
            budget: Some(5000.0),
        };
        let product = itinerary(&trip);
        let text = product.data_items[0].as_text().unwrap();
        assert!(text.contains("(4 days)"), "{text}");
        assert!(
            text.contains("Day 1 (2025-12-30): Arrive in Beijing"),
            "{text}"
        );
        assert!(text.contains("Day 3 (2026-01-01)"), "{text}");
        assert!(
            text.contains("Day 4 (2026-01-02): Last breakfast"),
            "{text}"
        );
        let data = product.data_items[1].as_data().unwrap();
        assert_eq!(data["days"], 4);
        assert_eq!(data["plan"].as_array().unwrap().len(), 4);
        assert_eq!(data["budget"]["perDay"], 1250.0);
        assert_eq!(data["budget"]["split"]["lodging"], 2000.0);
    }

    #[test]
    fn dates() {
        assert_eq!(parse_iso("2024-02-29"), Some(19_782));
        assert_eq!(parse_iso("2025-02-29"), None);
        assert_eq!(civil_from_days(19_782), "2024-02-29");
        assert_eq!(civil_from_days(0), "1970-01-01");
        assert_eq!(span("next weekend"), (None, 3));
        assert_eq!(span("2025-10-03 to 2025-10-01").1, 3);
        assert_eq!(span("2025-01-01 to 2025-12-31").1, MAX_DAYS);
    }
}
