//! Write AIP partners for **aiphost** in plain Rust.
//!
//! A partner is a WebAssembly component that aiphost runs once per Leader command (start,
//! continue, complete, cancel). This crate hides the component plumbing: implement [`Partner`]
//! on a type, register it with [`export!`], and build with
//! `cargo build --release --target wasm32-wasip2`.
//!
//! ```no_run
//! use aiphost_sdk::{DataItem, Decision, Outcome, Partner, Product, Task};
//!
//! /// Greets whoever the Leader names.
//! struct Greeter;
//!
//! impl Partner for Greeter {
//!     fn decide(_task: &Task, input: &[DataItem]) -> Decision {
//!         if input.iter().any(|item| item.as_text().is_some()) {
//!             Decision::Accept
//!         } else {
//!             Decision::reject("send a text item with a name")
//!         }
//!     }
//!
//!     fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
//!         let name = input.iter().find_map(DataItem::as_text).unwrap_or("").trim();
//!         if name.is_empty() {
//!             // Ask, and remember across turns how often we had to.
//!             let kv = task.kv();
//!             let asked: u32 = kv.get_json("asked").ok().flatten().unwrap_or(0);
//!             let _ = kv.set_json("asked", &(asked + 1));
//!             return Outcome::ask("Whom should I greet?");
//!         }
//!         aiphost_sdk::log::info("greeting");
//!         Outcome::Done(vec![
//!             Product::new("greeting")
//!                 .named("greeting")
//!                 .with_item(DataItem::text(format!("Hello, {name}!"))),
//!         ])
//!     }
//! }
//!
//! aiphost_sdk::export!(Greeter);
//! # fn main() {}
//! ```
//!
//! What the SDK reports for you:
//! - on start, [`Partner::decide`]: a [`Decision::Reject`] becomes `rejected` with the reason; a
//!   [`Decision::Reply`] answers with a plain message and creates no task; an accept becomes
//!   `accepted` then `working`, and [`Partner::work`] runs;
//! - on continue (the host has already moved the task back to `working`), [`Partner::work`] runs;
//! - the [`Outcome`] of `work` becomes `awaiting-input` (with the question items, or a [`Form`]),
//!   the products plus `awaiting-completion`, or `failed` (with the reason, or a [`Failure`] with
//!   a code); before the task rests, the SDK closes the text streamed without `last`;
//! - on complete and cancel, [`Partner::completed`] / [`Partner::canceled`] run for clean-up.
//!
//! If the host refuses a report because the task is over (the Leader canceled it meanwhile, or
//! the products exceeded `maxProductsBytes` and the host failed it), the SDK stops quietly. Any
//! other refusal ends the invocation with an error, and the host fails the task with it.
//!
//! # Talking to people
//!
//! A partner behind a chat (an LLM, say) shows its work while it does it: [`Task::think`] and
//! [`Task::say`] stream reasoning and answer text as deltas ([`Task::stream_text`] into any
//! product), [`Task::tool_call`] / [`Task::tool_result`] report tool activity, [`Task::usage`]
//! the tokens spent. It asks for structured input with [`Outcome::Form`] (read the answer with
//! [`form_answer`]), fails with a code with [`Outcome::FailWith`], and answers a start without a
//! task with [`Decision::Reply`].
//!
//! ```no_run
//! use aiphost_sdk::serde_json::json;
//! use aiphost_sdk::{
//!     DataItem, Decision, Form, Outcome, Partner, ReportError, Task, ToolOutput, form_answer,
//! };
//!
//! struct Weather;
//!
//! impl Partner for Weather {
//!     fn decide(_task: &Task, input: &[DataItem]) -> Decision {
//!         match input.iter().find_map(DataItem::as_text) {
//!             Some("ping") => Decision::reply("pong"), // no task
//!             _ => Decision::Accept,
//!         }
//!     }
//!
//!     fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
//!         let answer = form_answer(&input, "where");
//!         let Some(city) = answer.and_then(|a| a.get("city")?.as_str()) else {
//!             let schema = json!({
//!                 "type": "object",
//!                 "required": ["city"],
//!                 "properties": {"city": {"type": "string"}}
//!             });
//!             return Outcome::ask_form(Form::new("where", "Which city?", schema));
//!         };
//!         if city.is_empty() {
//!             return Outcome::fail_with("NO_CITY", "an empty city has no weather");
//!         }
//!         match forecast(task, city) {
//!             Ok(()) => Outcome::Done(vec![]), // the SDK closes the streamed text
//!             Err(e) => e.into(),              // quiet if the Leader canceled meanwhile
//!         }
//!     }
//! }
//!
//! fn forecast(task: &mut Task, city: &str) -> Result<(), ReportError> {
//!     task.think(&format!("Looking up the weather in {city}."))?;
//!     task.tool_call("call-1", "weather", &json!({"city": city}))?;
//!     task.tool_result("call-1", ToolOutput::Json(json!({"sky": "clear"})), false)?;
//!     task.say("Clear skies ")?;
//!     task.say(&format!("in {city}."))
//! }
//!
//! aiphost_sdk::export!(Weather);
//! # fn main() {}
//! ```
//!
//! Testing: [`testing::MockHost`] runs a partner natively (`cargo test`) against a host in
//! memory, checks each report as the host does, and shows what it reported, logged and stored.
//!
//! Streaming whole items: [`Task::emit_chunk`] sends (parts of) products while `work` runs.
//! Memory: nothing survives between invocations except the task and the key-value entries
//! ([`Task::kv`], [`Task::agent_kv`]).
#![warn(missing_docs)]

/// The bindings generated from the `aiphost:partner` WIT package (`wit/partner.wit`). Not public
/// API: use the types of this crate instead.
///
/// They are generated ahead of time and committed, so that a partner's build does not compile
/// `wit_bindgen::generate!` and its WIT tooling; `tests/bindings.rs` checks that they are what
/// wit-bindgen generates, and regenerates them.
#[doc(hidden)]
#[allow(missing_docs, clippy::all)]
#[rustfmt::skip]
pub mod bindings;

pub mod config;
mod form;
#[cfg(feature = "http")]
pub mod http;
mod item;
mod kv;
pub mod log;
mod partner;
mod report;
mod runtime;
mod task;
pub mod testing;

pub use form::{Form, form_answer, form_answer_as};
pub use item::{DataItem, DataKind, File, FileContent, Product};
pub use kv::{Kv, KvError};
pub use partner::{Decision, Outcome, Partner};
pub use report::{ANSWER_PRODUCT, Channel, Failure, REASONING_PRODUCT, ToolOutput, Usage};
pub use task::{EndReason, ReportError, State, Task};

/// The `serde_json` this crate uses (for [`serde_json::json!`], [`serde_json::Value`] and
/// [`serde_json::Map`]).
pub use serde_json;

/// Not public API: what [`export!`] expands to.
#[doc(hidden)]
pub mod __private {
    pub use crate::runtime::run;
}

/// Makes `$ty` (a type implementing [`Partner`]) the partner this component exports.
///
/// Use it once, in the partner crate's `lib.rs` (built as a `cdylib` for `wasm32-wasip2`):
///
/// ```no_run
/// # use aiphost_sdk::{DataItem, Outcome, Partner, Task};
/// struct Echo;
///
/// impl Partner for Echo {
///     fn work(_task: &mut Task, input: Vec<DataItem>) -> Outcome {
///         Outcome::Done(vec![aiphost_sdk::Product::new("echo").with_items(input)])
///     }
/// }
///
/// aiphost_sdk::export!(Echo);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! export {
    ($ty:ty) => {
        const _: () = {
            #[doc(hidden)]
            struct __AiphostSdkGuest;

            impl $crate::bindings::exports::aiphost::partner::handler::Guest for __AiphostSdkGuest {
                fn handle(
                    invocation: $crate::bindings::exports::aiphost::partner::handler::Invocation,
                ) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::__private::run::<$ty>(invocation)
                }
            }

    $crate::bindings::__export_partner!(__AiphostSdkGuest with_types_in $crate::bindings);
        };
    };
}

#[cfg(test)]
mod tests {
    /// The crate ships its own copy of the WIT (the package has no `../../wit`); it must be the
    /// repository's. Built from the package, there is no repository copy to compare with.
    #[test]
    fn the_shipped_wit_is_the_repositorys() {
        let shipped = include_str!("../wit/partner.wit");
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit/partner.wit");
        match std::fs::read_to_string(&repo) {
            Ok(repo) => assert!(
                repo == shipped,
                "sdk/rust/wit/partner.wit differs from wit/partner.wit: copy it over, then \
                 regenerate the bindings (AIPHOST_BLESS_BINDINGS=1 cargo test -p aiphost-sdk --test bindings)"
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!(
                    "no {} (built from the package): nothing to compare",
                    repo.display()
                );
            }
            Err(e) => panic!("reading {}: {e}", repo.display()),
        }
    }
}
