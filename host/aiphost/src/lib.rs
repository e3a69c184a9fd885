//! aiphost: hosts AIP (ACPs Agent Interaction Protocol) partners as sandboxed WebAssembly
//! components.
//!
//! A Leader talks AIP over HTTP to the host; the host runs the partner's code in wasmtime, keeps every
//! task durable in sled, and answers in the Leader's dialect (AIP v01.00 or v02.01).
//!
//! The host is layered crates under `host/`; each depends only on those below it, so Cargo
//! refuses an edge that reaches up:
//!
//! ```text
//! aiphost (this crate)   doors (transport), notify, tenancy admin, CLI, the binary
//!   ├ aiphost-client     the Leader-side client of `aiphost call` (on the model and the wire formats)
//!   └ aiphost-engine     the task engine, the agent registry, tenants' quotas
//!       └ aiphost-runtime    wasmtime: partner components, the sandbox, the partner contract
//!           ├ aiphost-store      sled behind one committer
//!           ├ aiphost-net-policy where the host may connect on someone else's say-so
//!           └ aiphost-model      tasks, commands, events, notices, configs, the state machine (pure)
//! aiphost-protocol       (used by this crate only) the wire formats: AIP, A2A, JSON-RPC (pure)
//!   └ aiphost-model
//! ```
//!
//! This crate's parts, from the wire inwards:
//! - [`transport`]: connections (timeouts, the cap), the door kit, the doors (AIP, A2A, group mode
//!   over RabbitMQ, one folder each) and the host's own endpoints;
//! - [`notify`]: the webhook outbox's delivery; [`metrics`]: `/metrics`, one recorder per host;
//! - [`tenant`]: tenants, publishing, Leader API keys;
//! - [`partner_logs`]: partners' own log lines, kept per partner (bounded) for their tenants;
//! - [`telemetry`]: the log lines, and the spans exported over OTLP when an endpoint is set;
//! - [`server`]: assembles a host from a config; [`units`]: the flags' duration and size parsers
//!   (`aiphost serve`'s and the doors' own flags).
//!
//! The lower crates are re-exported under their module names ([`model`], [`protocol`], [`store`],
//! [`runtime`], [`net_policy`], [`task`], [`agent`]).

#![deny(missing_docs)]

pub mod aip_error;
#[cfg(test)]
mod door_errors_tests;
#[cfg(test)]
mod door_imports_tests;
pub mod fan_out;
pub mod metrics;
pub mod notify;
pub mod partner_logs;
pub mod redact;
pub mod refusal;
pub mod server;
pub mod telemetry;
pub mod tenant;
pub mod transport;
pub mod units;

pub use aiphost_engine::{agent, quota, task};
pub use aiphost_model as model;
pub use aiphost_net_policy as net_policy;
pub use aiphost_protocol as protocol;
pub use aiphost_runtime as runtime;
pub use aiphost_store as store;
