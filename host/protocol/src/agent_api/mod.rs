//! The AgentScope Runtime **Agent API** (`agentscope-runtime` 1.1.6.post2; seed
//! `../shared/specs/agent-api.zh.md`), no I/O: a request's `AgentRequest` body read into what the
//! door hands the engine ([`request`]), and an Agent API content read into and rendered from the
//! model's `DataItem` ([`content`]), and a task's events rendered as one turn's response events
//! ([`render`]).
//!
//! Field paths in refusals are the request's own (`input[0].content[1].type`), so a client sees
//! which part of its body is wrong. Where the seed text and the real schema classes
//! (`agentscope_runtime.engine.schemas.agent_schemas`) differ, the classes decide: `role` may also
//! be `tool`, unknown fields are allowed (`extra="allow"`).

pub mod content;
pub mod render;
pub mod request;

#[cfg(test)]
mod reference_tests;

pub use content::{item_of_content, render_content};
pub use render::Turn;
pub use request::{AgentApiRequest, parse_request, parse_stop};
