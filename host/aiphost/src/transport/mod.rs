//! HTTP: the connection layer, the door kit, the doors (AIP, A2A, group mode, the Agent API,
//! AIFlowy chat, MCP) and the host's own endpoints.
//!
//! - [`connections`] accepts connections (timeouts, the cap) and [`tls`] terminates TLS;
//! - [`kit`] is what every door uses (state, caller, JSON body, SSE, span, chat sessions, the
//!   `Door` interface);
//! - [`aip`], [`a2a`], [`group`], [`agent_api`], [`aiflowy`] and [`mcp`] are the doors, one folder each;
//!   none names another;
//! - [`host`] is the host's own endpoints and the router that merges the doors' routes.

pub mod a2a;
pub mod agent_api;
pub mod aiflowy;
pub mod aip;
pub mod connections;
pub mod group;
pub mod host;
pub mod kit;
pub mod mcp;
pub mod tls;
