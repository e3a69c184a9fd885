//! The doors' wire formats, no I/O: AIP's two dialects ([`aip`]), A2A v1.0 and v0.3 ([`a2a`]),
//! and the JSON-RPC 2.0 envelope both speak ([`jsonrpc`]); the chat protocols of issue 32, the
//! AgentScope Agent API ([`agent_api`]) and AIFlowy's chat protocol ([`aiflowy`]); what a
//! notification config's notifications speak ([`notice_format`]); the chat doors' refusal body
//! ([`error_object`]); the MCP door's tools, arguments, results and forms ([`mcp`]). Each parses into and renders
//! from the door-free model of `aiphost-model`.

#![deny(missing_docs)]

pub mod a2a;
pub mod agent_api;
pub mod aiflowy;
pub mod aip;
pub mod error_object;
pub mod jsonrpc;
pub mod mcp;
pub mod notice_format;

pub use jsonrpc::{ErrorCode, RpcError};
