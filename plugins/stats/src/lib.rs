//! Stats: descriptive statistics of numbers sent as structured data.
//!
//! Input: `data` items like `{"numbers": [1, 2.5, 3]}` (the numbers of all such items are
//! pooled). Output: the product `stats` with a data item `{"count", "sum", "mean", "min", "max"}`.
//! A start without a usable `numbers` array is rejected with the precise reason; a continue
//! without one asks again.

use aiphost_sdk::serde_json::{Value, json};
use aiphost_sdk::{DataItem, Decision, Outcome, Partner, Product, Task};

/// The stats partner.
pub struct Stats;

const EXAMPLE: &str = r#"{"numbers": [1, 2.5, 3]}"#;

impl Partner for Stats {
    fn decide(_task: &Task, input: &[DataItem]) -> Decision {
        match numbers(input) {
            Ok(_) => Decision::Accept,
            Err(reason) => Decision::Reject(reason),
        }
    }

    fn work(_task: &mut Task, input: Vec<DataItem>) -> Outcome {
        match numbers(&input) {
            Ok(numbers) => Outcome::Done(vec![
                Product::new("stats")
                    .named("statistics")
                    .described(format!("Statistics of {} numbers", numbers.len()))
                    .with_item(DataItem::data(summary(&numbers))),
            ]),
            Err(reason) => Outcome::NeedInput(vec![
                DataItem::text(reason),
                DataItem::data(json!({"expected": {"numbers": [1, 2.5, 3]}})),
            ]),
        }
    }
}

aiphost_sdk::export!(Stats);

/// The numbers of every data item with a `numbers` key, or why there are none to use.
fn numbers(input: &[DataItem]) -> Result<Vec<f64>, String> {
    let data: Vec<_> = input.iter().filter_map(DataItem::as_data).collect();
    if data.is_empty() {
        return Err(format!(
            "stats needs a data item with a numeric \"numbers\" array, like {EXAMPLE}; \
             got {} item(s) and none of them is a data item",
            input.len()
        ));
    }
    let mut all = Vec::new();
    let mut found = false;
    for (i, item) in data.iter().enumerate() {
        let Some(value) = item.get("numbers") else {
            continue;
        };
        found = true;
        let Value::Array(values) = value else {
            return Err(format!(
                "\"numbers\" in data item {} must be an array of numbers, like {EXAMPLE}; got {value}",
                i + 1
            ));
        };
        for (j, v) in values.iter().enumerate() {
            match v.as_f64() {
                Some(n) => all.push(n),
                None => {
                    return Err(format!(
                        "\"numbers\"[{j}] in data item {} is {v}, not a number",
                        i + 1
                    ));
                }
            }
        }
    }
    if !found {
        return Err(format!(
            "no data item has a \"numbers\" key; send one like {EXAMPLE}"
        ));
    }
    if all.is_empty() {
        return Err(format!(
            "the \"numbers\" array is empty; send at least one number, like {EXAMPLE}"
        ));
    }
    Ok(all)
}

/// `{"count", "sum", "mean", "min", "max"}` of non-empty `numbers`.
fn summary(numbers: &[f64]) -> Value {
    let count = numbers.len();
    let sum: f64 = numbers.iter().sum();
    let min = numbers.iter().copied().fold(f64::INFINITY, f64::min);
    let max = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    json!({
        "count": count,
        "sum": sum,
        "mean": sum / count as f64,
        "min": min,
        "max": max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(v: Value) -> DataItem {
        DataItem::data(v)
    }

    #[test]
    fn statistics() {
        let input = [
            data(json!({"numbers": [1, 2.5]})),
            DataItem::text("ignored"),
            data(json!({"numbers": [3, -1]})),
        ];
        let n = numbers(&input).unwrap();
        assert_eq!(
            summary(&n),
            json!({"count": 4, "sum": 5.5, "mean": 1.375, "min": -1.0, "max": 3.0})
        );
    }

    #[test]
    fn precise_reasons() {
        let err = numbers(&[DataItem::text("1 2 3")]).unwrap_err();
        assert!(err.contains("none of them is a data item"), "{err}");
        let err = numbers(&[data(json!({"values": [1]}))]).unwrap_err();
        assert!(err.contains("no data item has a \"numbers\" key"), "{err}");
        let err = numbers(&[data(json!({"numbers": "1,2"}))]).unwrap_err();
        assert!(err.contains("must be an array"), "{err}");
        let err = numbers(&[data(json!({"numbers": [1, "two"]}))]).unwrap_err();
        assert!(
            err.contains("\"numbers\"[1] in data item 1 is \"two\""),
            "{err}"
        );
        let err = numbers(&[data(json!({"numbers": []}))]).unwrap_err();
        assert!(err.contains("empty"), "{err}");
    }
}
