//! The task engine and the agent registry of aiphost: every rule of a task, whatever door its
//! command came through.
//!
//! - [`task`]: the task engine (slots, commands, the write path, invocations, expiry), records,
//!   histories, timers, live-task counts and partner shares;
//! - [`agent`]: manifests, loaded partners, the registry the doors look them up in;
//! - [`quota`]: a tenant's quotas and its state as the running host enforces it.
//!
//! The engine reaches the world beyond the task through [`task::FanOut`] (notifications and
//! group results), so the doors, the notifier and group mode sit above it.

#![deny(missing_docs)]

pub mod agent;
pub mod quota;
pub mod task;
