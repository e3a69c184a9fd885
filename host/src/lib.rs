//! aiphost: hosts AIP (ACPs Agent Interaction Protocol) partners as sandboxed WebAssembly
//! components.
//!
//! A Leader talks AIP over HTTP to the host; the host runs the partner's code in wasmtime, keeps every
//! task durable in sled, and answers in the Leader's dialect (AIP v01.00 or v02.01).
//!
//! The parts, from the wire inwards:
//! - [`transport`]: connections (timeouts, the cap), axum routes, JSON-RPC dispatch on the method;
//! - [`protocol`]: the wire model of both dialects and the mapping to one internal model (pure);
//! - [`task`]: the state machine (pure), the task engine, timers;
//! - [`runtime`]: wasmtime, the partner contract's host side, sandbox limits;
//! - [`store`]: sled with group commit;
//! - [`agent`]: manifests, loaded partners, ACS documents;
//! - [`tenant`]: tenants, publishing, Leader API keys, quotas;
//! - [`net_policy`]: where the host may connect on someone else's say-so (webhooks, partners'
//!   outbound HTTP, group brokers);
//! - [`server`]: assembles a host from a config; [`client`]: a Leader-side client.

pub mod agent;
pub mod client;
pub mod group;
pub mod net_policy;
pub mod notify;
pub mod protocol;
pub mod runtime;
pub mod server;
pub mod store;
pub mod task;
pub mod tenant;
pub mod transport;
