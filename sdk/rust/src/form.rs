//! Forms: asking the Leader for structured input described by a JSON Schema, and reading the
//! answer when it comes back on `continue`.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::bindings::aiphost::partner::types as wit;
use crate::item::DataItem;

/// The metadata key that marks what an item is for (the host's and the SDK's own tags).
pub(crate) const KIND_KEY: &str = "aiphost.kind";
/// The [`KIND_KEY`] value of a form answer.
const INPUT_ANSWER: &str = "input-answer";
/// The metadata key naming the request a form answer answers.
const REQUEST_ID_KEY: &str = "requestId";

/// A form: what the partner asks for when it needs structured input, as a JSON Schema of an
/// object. Return it with [`Outcome::Form`](crate::Outcome::Form) (or
/// [`Outcome::ask_form`](crate::Outcome::ask_form)): the task moves to `awaiting-input` with it,
/// and the answer arrives on the next `continue` (read it with [`form_answer`]).
///
/// ```
/// use aiphost_sdk::Form;
/// use aiphost_sdk::serde_json::json;
///
/// let trip = Form::new(
///     "trip",
///     "Trip",
///     json!({
///         "type": "object",
///         "required": ["city", "days"],
///         "properties": {
///             "city": {"type": "string"},
///             "days": {"type": "integer", "minimum": 1}
///         }
///     }),
/// )
/// .described("Where to, and for how many days?");
/// assert_eq!(trip.request_id, "trip");
/// ```
///
/// The host checks the form when it is asked (a request id of 1-128 bytes of `A-Z a-z 0-9 . _ -`,
/// a title of 1-256 bytes, a description of at most 4 KiB, a schema of at most 64 KiB whose top
/// level is `"type": "object"` and that is a valid JSON Schema); it refuses a wrong one with
/// [`ReportError::InvalidData`](crate::ReportError::InvalidData). It checks each answer against the
/// schema before the partner sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Form {
    /// Names this request; the answer comes back tagged with it.
    pub request_id: String,
    /// What the form is about, for people.
    pub title: String,
    /// More about what is asked, for people.
    pub description: Option<String>,
    /// The JSON Schema (draft 2020-12 unless it says otherwise) of the object asked for.
    pub schema: Value,
    /// Items to put on the `awaiting-input` status besides the form (a text question, say).
    pub items: Vec<DataItem>,
}

impl Form {
    /// A form with no description and no other items.
    pub fn new(request_id: impl Into<String>, title: impl Into<String>, schema: Value) -> Self {
        Form {
            request_id: request_id.into(),
            title: title.into(),
            description: None,
            schema,
            items: Vec::new(),
        }
    }

    /// Sets the description.
    pub fn described(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds an item to put on the `awaiting-input` status with the form.
    pub fn with_item(mut self, item: DataItem) -> Self {
        self.items.push(item);
        self
    }

    /// The WIT request and the status items.
    pub(crate) fn into_wit(self) -> (wit::InputRequest, Vec<wit::DataItem>) {
        let request = wit::InputRequest {
            request_id: self.request_id,
            title: self.title,
            description: self.description,
            schema: self.schema.to_string(),
        };
        let items = self.items.into_iter().map(DataItem::into_wit).collect();
        (request, items)
    }
}

impl DataItem {
    /// The answer to the form `request_id` as the host delivers it on `continue`: a data item with
    /// the `values` and the metadata `{"aiphost.kind": "input-answer", "requestId": request_id}`.
    ///
    /// Partners read answers with [`form_answer`]; this builds one, for tests
    /// ([`MockHost::answer_form`](crate::testing::MockHost::answer_form) uses it).
    pub fn input_answer(request_id: impl Into<String>, values: Value) -> Self {
        let mut metadata = Map::new();
        metadata.insert(KIND_KEY.into(), Value::from(INPUT_ANSWER));
        metadata.insert(REQUEST_ID_KEY.into(), Value::from(request_id.into()));
        DataItem::data(values).with_metadata(metadata)
    }

    /// The request id this item answers, if it is a form answer.
    pub fn answered_request(&self) -> Option<&str> {
        let metadata = self.metadata.as_ref()?;
        if metadata.get(KIND_KEY).and_then(Value::as_str) != Some(INPUT_ANSWER) {
            return None;
        }
        metadata.get(REQUEST_ID_KEY).and_then(Value::as_str)
    }
}

/// The answer to the form `request_id` among a `continue`'s input: the values the Leader
/// submitted, already checked against the form's schema by the host. `None` when the input
/// carries no answer to that form (the Leader may have sent text instead).
///
/// ```
/// use aiphost_sdk::serde_json::json;
/// use aiphost_sdk::{DataItem, form_answer};
///
/// let input = vec![DataItem::input_answer("trip", json!({"city": "Oslo", "days": 3}))];
/// let answer = form_answer(&input, "trip").expect("an answer");
/// assert_eq!(answer["city"], "Oslo");
/// assert!(form_answer(&input, "other").is_none());
/// ```
pub fn form_answer<'a>(input: &'a [DataItem], request_id: &str) -> Option<&'a Map<String, Value>> {
    input
        .iter()
        .find(|item| item.answered_request() == Some(request_id))
        .and_then(DataItem::as_data)
}

/// Like [`form_answer`], deserialized into `T` (a struct matching the schema, say). `None`
/// without an answer; `Some(Err(..))` when the values do not fit `T`.
///
/// ```
/// use aiphost_sdk::serde_json::json;
/// use aiphost_sdk::{DataItem, form_answer_as};
///
/// #[derive(serde::Deserialize)]
/// struct Trip {
///     city: String,
///     days: u32,
/// }
///
/// let input = vec![DataItem::input_answer("trip", json!({"city": "Oslo", "days": 3}))];
/// let trip: Trip = form_answer_as(&input, "trip").expect("an answer").expect("a trip");
/// assert_eq!((trip.city.as_str(), trip.days), ("Oslo", 3));
/// ```
pub fn form_answer_as<T: DeserializeOwned>(
    input: &[DataItem],
    request_id: &str,
) -> Option<Result<T, serde_json::Error>> {
    form_answer(input, request_id).map(|values| T::deserialize(Value::Object(values.clone())))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn answers_are_found_by_request_id_only_when_tagged() {
        let mut wrong_kind = Map::new();
        wrong_kind.insert(KIND_KEY.into(), json!("something-else"));
        wrong_kind.insert(REQUEST_ID_KEY.into(), json!("trip"));
        let input = vec![
            DataItem::text("trip"),
            DataItem::data(json!({"city": "untagged"})),
            DataItem::data(json!({"city": "wrong kind"})).with_metadata(wrong_kind),
            DataItem::input_answer("other", json!({"city": "other"})),
            DataItem::input_answer("trip", json!({"city": "Oslo"})),
        ];
        assert_eq!(form_answer(&input, "trip").unwrap()["city"], "Oslo");
        assert_eq!(input[3].answered_request(), Some("other"));
        assert_eq!(input[2].answered_request(), None);
        assert!(form_answer(&input[..4], "trip").is_none());
    }

    #[test]
    fn typed_answers() {
        use std::collections::BTreeMap;
        let input = vec![DataItem::input_answer("trip", json!({"days": "three"}))];
        let typed = form_answer_as::<BTreeMap<String, u32>>(&input, "trip");
        let err = typed.and_then(Result::err).expect("refused");
        assert!(err.to_string().contains("invalid type"), "{err}");
        assert!(form_answer_as::<BTreeMap<String, u32>>(&input, "none").is_none());
    }

    #[test]
    fn a_form_becomes_the_wit_request() {
        let form = Form::new("f", "T", json!({"type": "object"}))
            .described("d")
            .with_item(DataItem::text("q"));
        let (request, items) = form.into_wit();
        assert_eq!(request.request_id, "f");
        assert_eq!(request.description.as_deref(), Some("d"));
        assert_eq!(request.schema, r#"{"type":"object"}"#);
        assert_eq!(items.len(), 1);
    }
}
