//! The host's own HTTP endpoints, which are no door's: its home, the partner listing, health and
//! readiness, metrics, the admin API, and the gate in front of every partner's URLs. [`router`]
//! merges them with the doors' routes.

mod admin;
pub mod endpoints;
mod gate;
mod index;
mod metrics;
mod partner_stats;
mod readiness;
mod reports;
pub mod router;
