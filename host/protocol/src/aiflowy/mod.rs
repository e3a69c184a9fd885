//! The **AIFlowy chat protocol** v1.1 (seed `../shared/specs/aiflowy-chat-v1.1.zh.md`, byte for
//! byte AIFlowy's `aiflowy-chat-protocol.md`), no I/O: a chat turn's and a form submit's bodies
//! read ([`request`]), the envelope in its two spellings ([`envelope`]: the seed's, and AIFlowy's
//! own server's, `?wire=aiflowy`), a task's events rendered as one stream's envelopes
//! ([`render`]), and the bodies of refused requests ([`error`]).
//!
//! Where the seed's text and AIFlowy's code differ, the seed's is the default and AIFlowy's a
//! choice of the client; what each wire does with a field is said where it is rendered.

pub mod envelope;
pub mod error;
pub mod render;
pub mod request;

pub use envelope::{Envelope, SseName, Wire};
pub use error::AiflowyError;
pub use render::{Event, Turn, Ui};
pub use request::{
    ChatRequest, FormSubmit, parse_chat, parse_conversation, parse_form, parse_stop,
};
