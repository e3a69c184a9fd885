//! The host's own HTTP endpoints, which are no door's: its home, the partner listing, health and
//! readiness, metrics, the admin API, the console, and the gate in front of every partner's URLs. [`router`]
//! merges them with the doors' routes.

mod admin;
mod console;
pub mod endpoints;
mod gate;
mod index;
mod metrics;
mod readiness;
mod reports;
pub mod router;
