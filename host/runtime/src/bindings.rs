//! Generated bindings for both versions of the `aiphost:partner` world, and conversions between
//! each version's WIT types and the host's model.
//!
//! The two versions share every type 0.1.0 had, so the conversions are written once
//! ([`conversions!`]) and expanded in each version's module; 0.2.0's additions are converted in
//! [`v0_2`] alone. Which version a component targets is read from its exports
//! ([`Contract::of`]).

use aiphost_model::JsonObject;

/// The contract version a component was built against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contract {
    /// `aiphost:partner@0.1.0`: statuses and product chunks.
    V0_1,
    /// `aiphost:partner@0.2.0`: also text deltas, tool activity, usage, forms, coded failures
    /// and plain replies.
    V0_2,
}

impl Contract {
    /// The handler export that names each version.
    const HANDLERS: [(&'static str, Contract); 2] = [
        ("aiphost:partner/handler@0.1.0", Contract::V0_1),
        ("aiphost:partner/handler@0.2.0", Contract::V0_2),
    ];

    /// The version whose handler a component exports, from its export names. The handler is the
    /// one export every partner must have (its imports may be any subset), so it decides; a
    /// component exporting both, or neither, is refused.
    pub fn of<'a>(exports: impl IntoIterator<Item = &'a str>) -> Result<Contract, String> {
        let found: Vec<Contract> = exports
            .into_iter()
            .filter_map(|name| {
                Self::HANDLERS
                    .iter()
                    .find(|(handler, _)| *handler == name)
                    .map(|&(_, c)| c)
            })
            .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(
                "the component exports no aiphost:partner handler (aiphost:partner/handler@0.1.0 \
                 or @0.2.0): is it built with an aiphost SDK?"
                    .into(),
            ),
            _ => Err(
                "the component exports the aiphost:partner handler of more than one version; \
                 export exactly one"
                    .into(),
            ),
        }
    }

    /// The version as the WIT package spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Contract::V0_1 => "0.1.0",
            Contract::V0_2 => "0.2.0",
        }
    }
}

fn json_object(text: &str, what: &str) -> Result<JsonObject, String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err(format!("{what} must be a JSON object")),
        Err(e) => Err(format!("{what} is not valid JSON: {e}")),
    }
}

/// The conversions of the types both versions share, expanded in each version's module (where
/// `wit` names that version's `types` interface).
macro_rules! conversions {
    () => {
        use crate::{EndReason, Invocation, PartnerEvent};
        use aiphost_model::{DataItem, JsonObject, Product, ProductChunk, TaskState};
        use base64::Engine as _;

        impl From<TaskState> for wit::TaskState {
            fn from(s: TaskState) -> Self {
                match s {
                    TaskState::Accepted => wit::TaskState::Accepted,
                    TaskState::Working => wit::TaskState::Working,
                    TaskState::AwaitingInput => wit::TaskState::AwaitingInput,
                    TaskState::AwaitingCompletion => wit::TaskState::AwaitingCompletion,
                    TaskState::Completed => wit::TaskState::Completed,
                    TaskState::Canceled => wit::TaskState::Canceled,
                    TaskState::Failed => wit::TaskState::Failed,
                    TaskState::Rejected => wit::TaskState::Rejected,
                }
            }
        }

        impl From<wit::TaskState> for TaskState {
            fn from(s: wit::TaskState) -> Self {
                match s {
                    wit::TaskState::Accepted => TaskState::Accepted,
                    wit::TaskState::Working => TaskState::Working,
                    wit::TaskState::AwaitingInput => TaskState::AwaitingInput,
                    wit::TaskState::AwaitingCompletion => TaskState::AwaitingCompletion,
                    wit::TaskState::Completed => TaskState::Completed,
                    wit::TaskState::Canceled => TaskState::Canceled,
                    wit::TaskState::Failed => TaskState::Failed,
                    wit::TaskState::Rejected => TaskState::Rejected,
                }
            }
        }

        /// A host DataItem as the guest sees it. File bytes were checked as base64 on the way in.
        pub fn item_to_guest(item: &DataItem) -> wit::DataItem {
            let json_text = |m: &Option<JsonObject>| {
                m.as_ref()
                    .map(|m| serde_json::Value::Object(m.clone()).to_string())
            };
            match item {
                DataItem::Text { text, metadata } => wit::DataItem {
                    kind: wit::DataKind::Text(text.clone()),
                    metadata: json_text(metadata),
                },
                DataItem::File {
                    name,
                    mime_type,
                    uri,
                    bytes,
                    metadata,
                } => {
                    let content = match (uri, bytes) {
                        (_, Some(b64)) => wit::FileContent::Bytes(
                            base64::engine::general_purpose::STANDARD
                                .decode(b64)
                                .unwrap_or_default(),
                        ),
                        (Some(uri), None) => wit::FileContent::Uri(uri.clone()),
                        (None, None) => wit::FileContent::Uri(String::new()),
                    };
                    wit::DataItem {
                        kind: wit::DataKind::File(wit::FileItem {
                            name: name.clone(),
                            mime_type: mime_type.clone(),
                            content,
                        }),
                        metadata: json_text(metadata),
                    }
                }
                DataItem::Data { data, metadata } => wit::DataItem {
                    kind: wit::DataKind::Data(serde_json::Value::Object(data.clone()).to_string()),
                    metadata: json_text(metadata),
                },
            }
        }

        /// A DataItem reported by a guest, checked: `data` and `metadata` must be JSON objects nested at
        /// most [`aiphost_model::depth::MAX_JSON_DEPTH`] levels (the host stores them).
        pub fn item_from_guest(item: wit::DataItem) -> Result<DataItem, String> {
            let item = item_from_guest_unchecked(item)?;
            item.check_depth("a data item").map_err(|e| e.to_string())?;
            Ok(item)
        }

        fn item_from_guest_unchecked(item: wit::DataItem) -> Result<DataItem, String> {
            let metadata = item
                .metadata
                .as_deref()
                .map(|m| super::json_object(m, "metadata"))
                .transpose()?;
            Ok(match item.kind {
                wit::DataKind::Text(text) => DataItem::Text { text, metadata },
                wit::DataKind::Data(text) => DataItem::Data {
                    data: super::json_object(&text, "a data item")?,
                    metadata,
                },
                wit::DataKind::File(file) => {
                    let (uri, bytes) = match file.content {
                        wit::FileContent::Uri(uri) => (Some(uri), None),
                        wit::FileContent::Bytes(b) => (
                            None,
                            Some(base64::engine::general_purpose::STANDARD.encode(b)),
                        ),
                    };
                    DataItem::File {
                        name: file.name,
                        mime_type: file.mime_type,
                        uri,
                        bytes,
                        metadata,
                    }
                }
            })
        }

        /// Convert a list of guest items, failing on the first malformed one.
        pub fn items_from_guest(items: Vec<wit::DataItem>) -> Result<Vec<DataItem>, String> {
            items.into_iter().map(item_from_guest).collect()
        }

        /// A product chunk reported by a guest.
        pub fn chunk_from_guest(chunk: wit::ProductChunk) -> Result<ProductChunk, String> {
            let p = chunk.product;
            aiphost_model::activity::check_product_id(&p.id)?;
            Ok(ProductChunk {
                product: Product {
                    id: p.id,
                    name: p.name,
                    description: p.description,
                    data_items: items_from_guest(p.data_items)?,
                },
                append: chunk.append,
                last_chunk: chunk.last_chunk,
            })
        }

        /// The invocation as this version's guest sees it.
        pub fn to_guest(inv: &Invocation) -> wit::Invocation {
            let end = |r: EndReason| match r {
                EndReason::Leader => wit::EndReason::Leader,
                EndReason::Timeout => wit::EndReason::Timeout,
            };
            wit::Invocation {
                event: match inv.event {
                    PartnerEvent::Start => wit::Event::Start,
                    PartnerEvent::Continue => wit::Event::Continue,
                    PartnerEvent::Complete(r) => wit::Event::Complete(end(r)),
                    PartnerEvent::Cancel(r) => wit::Event::Cancel(end(r)),
                },
                task_id: inv.task_id.clone(),
                session_id: inv.session_id.clone(),
                leader_id: inv.leader_id.clone(),
                state: inv.state.map(Into::into),
                data_items: inv.data_items.iter().map(item_to_guest).collect(),
                max_products_bytes: inv.max_products_bytes,
                products_bytes: inv.products_bytes,
                command_params: serde_json::Value::Object(inv.command_params.clone()).to_string(),
            }
        }
    };
}

/// `aiphost:partner@0.1.0`, frozen (`wit/0.1.0/partner.wit`).
pub mod v0_1 {
    wasmtime::component::bindgen!({
        world: "partner",
        path: "../../wit/0.1.0/partner.wit",
        imports: { default: async },
        exports: { default: async },
    });

    pub use self::aiphost::partner::types as wit;

    conversions!();

    impl From<crate::ReportError> for wit::ReportError {
        fn from(e: crate::ReportError) -> Self {
            use crate::ReportError as E;
            match e {
                E::InvalidTransition(m) => wit::ReportError::InvalidTransition(m),
                E::TaskEnded => wit::ReportError::TaskEnded,
                E::ProductsTooLarge(n) => wit::ReportError::ProductsTooLarge(n),
                E::InvalidData(m) => wit::ReportError::InvalidData(m),
                // 0.1.0 has no such case; its partners cannot reach the activity caps anyway.
                E::LimitReached(m) => wit::ReportError::InvalidTransition(m),
            }
        }
    }
}

/// `aiphost:partner@0.2.0` (`wit/partner.wit`).
pub mod v0_2 {
    wasmtime::component::bindgen!({
        world: "partner",
        path: "../../wit/partner.wit",
        imports: { default: async },
        exports: { default: async },
    });

    pub use self::aiphost::partner::types as wit;
    use aiphost_model::activity::{
        self, Activity, Channel, Failure, InputRequest, TextDelta, ToolCall, ToolOutput,
        ToolResult, Usage,
    };
    use aiphost_model::depth;

    conversions!();

    impl From<crate::ReportError> for wit::ReportError {
        fn from(e: crate::ReportError) -> Self {
            use crate::ReportError as E;
            match e {
                E::InvalidTransition(m) => wit::ReportError::InvalidTransition(m),
                E::TaskEnded => wit::ReportError::TaskEnded,
                E::ProductsTooLarge(n) => wit::ReportError::ProductsTooLarge(n),
                E::InvalidData(m) => wit::ReportError::InvalidData(m),
                E::LimitReached(m) => wit::ReportError::LimitReached(m),
            }
        }
    }

    /// JSON text of at most `max` bytes nested at most `max_depth` levels: the size is checked
    /// before anything is parsed, so a huge text costs no parse.
    fn bounded_json(
        text: &str,
        what: &str,
        max: usize,
        max_depth: usize,
    ) -> Result<serde_json::Value, String> {
        if text.len() > max {
            return Err(format!(
                "{what} is {} bytes; at most {max} are allowed",
                text.len()
            ));
        }
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("{what} is not valid JSON: {e}"))?;
        depth::check_depth_below(&value, what, depth::MAX_JSON_DEPTH - max_depth).map_err(|e| {
            if max_depth < depth::MAX_JSON_DEPTH {
                format!("{} nests deeper than {max_depth} levels", e.path)
            } else {
                e.to_string()
            }
        })?;
        Ok(value)
    }

    /// [`bounded_json`], which must be an object.
    fn bounded_object(
        text: &str,
        what: &str,
        max: usize,
        max_depth: usize,
    ) -> Result<JsonObject, String> {
        match bounded_json(text, what, max, max_depth)? {
            serde_json::Value::Object(m) => Ok(m),
            _ => Err(format!("{what} must be a JSON object")),
        }
    }

    /// A text delta, checked.
    pub fn delta_from_guest(d: wit::TextDelta) -> Result<TextDelta, String> {
        let delta = TextDelta {
            product_id: d.product_id,
            channel: match d.channel {
                wit::TextChannel::Answer => Channel::Answer,
                wit::TextChannel::Reasoning => Channel::Reasoning,
            },
            text: d.text,
            last: d.last,
        };
        delta.check()?;
        Ok(delta)
    }

    /// 1-128 bytes: a call id or a tool name.
    fn short_name(value: &str, what: &str) -> Result<(), String> {
        if value.is_empty() || value.len() > 128 {
            return Err(format!("{what} must be 1-128 bytes"));
        }
        Ok(())
    }

    /// A tool call, its arguments parsed (a JSON object of at most 64 KiB).
    pub fn tool_call_from_guest(c: wit::ToolCall) -> Result<Activity, String> {
        short_name(&c.call_id, "a call id")?;
        short_name(&c.name, "a tool name")?;
        let arguments = bounded_object(
            &c.arguments,
            "tool arguments",
            activity::MAX_TOOL_ARGUMENTS_BYTES,
            depth::MAX_JSON_DEPTH,
        )?;
        Ok(Activity::ToolCall(ToolCall {
            call_id: c.call_id,
            name: c.name,
            arguments,
        }))
    }

    /// A tool result, its output checked (at most 256 KiB; JSON when it says so).
    pub fn tool_result_from_guest(r: wit::ToolResult) -> Result<Activity, String> {
        short_name(&r.call_id, "a call id")?;
        let max = activity::MAX_TOOL_OUTPUT_BYTES;
        let output = match r.output {
            wit::ToolOutput::Json(text) => ToolOutput::Json(bounded_json(
                &text,
                "a tool output",
                max,
                depth::MAX_JSON_DEPTH,
            )?),
            wit::ToolOutput::Text(text) if text.len() > max => {
                return Err(format!(
                    "a tool output is {} bytes; at most {max} are allowed",
                    text.len()
                ));
            }
            wit::ToolOutput::Text(text) => ToolOutput::Text(text),
        };
        Ok(Activity::ToolResult(ToolResult {
            call_id: r.call_id,
            output,
            is_error: r.is_error,
        }))
    }

    /// Token usage (a model name of at most 256 bytes).
    pub fn usage_from_guest(u: wit::Usage) -> Result<Activity, String> {
        if u.model.as_ref().is_some_and(|m| m.len() > 256) {
            return Err("a model name may be at most 256 bytes".into());
        }
        Ok(Activity::Usage(Usage {
            model: u.model,
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            reasoning_tokens: u.reasoning_tokens,
        }))
    }

    /// A form, its schema parsed within the contract's bounds (whether it is a valid JSON Schema
    /// is the engine's to check: it compiles it).
    pub fn request_from_guest(r: wit::InputRequest) -> Result<InputRequest, String> {
        let schema = bounded_object(
            &r.schema,
            "a form schema",
            activity::MAX_SCHEMA_BYTES,
            activity::MAX_SCHEMA_DEPTH,
        )?;
        let request = InputRequest {
            request_id: r.request_id,
            title: r.title,
            description: r.description,
            schema,
        };
        request.check()?;
        Ok(request)
    }

    /// A failure, its detail parsed (a JSON object of at most 16 KiB).
    pub fn failure_from_guest(f: wit::Failure) -> Result<Failure, String> {
        let detail = f
            .detail
            .as_deref()
            .map(|d| {
                bounded_object(
                    d,
                    "a failure detail",
                    activity::MAX_DETAIL_BYTES,
                    depth::MAX_JSON_DEPTH,
                )
            })
            .transpose()?;
        let failure = Failure {
            code: f.code,
            message: f.message,
            retryable: f.retryable,
            detail,
        };
        failure.check()?;
        Ok(failure)
    }
}

#[cfg(test)]
mod tests {
    use super::v0_2::*;
    use aiphost_model::DataItem;
    use serde_json::json;

    #[test]
    fn items_roundtrip_through_the_guest_form() {
        let items: Vec<DataItem> = serde_json::from_value(json!([
            {"type": "text", "text": "hi", "metadata": {"a": 1}},
            {"type": "file", "name": "f", "mimeType": "text/csv", "bytes": "aGVsbG8="},
            {"type": "file", "uri": "https://x/y"},
            {"type": "data", "data": {"k": [1, 2]}}
        ]))
        .unwrap();
        let back: Vec<DataItem> = items
            .iter()
            .map(item_to_guest)
            .map(|i| item_from_guest(i).unwrap())
            .collect();
        assert_eq!(back, items);
    }

    #[test]
    fn guest_items_must_carry_objects() {
        let bad = wit::DataItem {
            kind: wit::DataKind::Data("[1,2]".into()),
            metadata: None,
        };
        assert!(item_from_guest(bad).unwrap_err().contains("JSON object"));
        let bad_meta = wit::DataItem {
            kind: wit::DataKind::Text("x".into()),
            metadata: Some("{oops".into()),
        };
        assert!(item_from_guest(bad_meta).unwrap_err().contains("metadata"));
    }

    #[test]
    fn guest_activity_is_checked_before_it_is_stored() {
        let call = |arguments: &str| {
            tool_call_from_guest(wit::ToolCall {
                call_id: "c1".into(),
                name: "lookup".into(),
                arguments: arguments.into(),
            })
        };
        assert!(call(r#"{"q": 1}"#).is_ok());
        assert!(call("not json").unwrap_err().contains("not valid JSON"));
        assert!(call("[1]").unwrap_err().contains("JSON object"));
        let huge = format!("{{\"q\": \"{}\"}}", "x".repeat(70 * 1024));
        assert!(call(&huge).unwrap_err().contains("at most 65536"));

        let form = |schema: String| {
            request_from_guest(wit::InputRequest {
                request_id: "trip".into(),
                title: "Trip".into(),
                description: None,
                schema,
            })
        };
        // A 10 MB schema is refused by its size, before anything parses it.
        let big = format!("{{{}", " ".repeat(10 << 20));
        assert!(form(big).unwrap_err().contains("10485761 bytes"));
        let deep = format!(
            "{{\"type\":\"object\",\"x\":{}1{}}}",
            "[".repeat(40),
            "]".repeat(40)
        );
        assert!(form(deep).unwrap_err().contains("deeper than 32"));
        assert!(form(r#"{"type":"array"}"#.into()).is_err());
        assert!(form(r#"{"type":"object"}"#.into()).is_ok());

        let failure = |code: &str| {
            failure_from_guest(wit::Failure {
                code: code.into(),
                message: "m".into(),
                retryable: false,
                detail: Some("[]".into()),
            })
        };
        assert!(failure("OK").unwrap_err().contains("JSON object"));
        let delta = |text: &str, last: bool| {
            delta_from_guest(wit::TextDelta {
                product_id: "answer".into(),
                channel: wit::TextChannel::Answer,
                text: text.into(),
                last,
            })
        };
        assert!(delta("", false).is_err());
        assert!(delta("", true).is_ok());
    }
}
