//! The host's own HTTP endpoints, which are no door's: its home, the partner listing, health and
<<<<<<< HEAD
//! readiness, metrics, the admin API, the console, and the gate in front of every partner's URLs. [`router`]
//! merges them with the doors' routes.
=======
//! readiness, metrics, the admin API (partners' logs included), and the gate in front of every
//! partner's URLs. [`router`] merges them with the doors' routes.
>>>>>>> i34-logs

mod admin;
mod console;
pub mod endpoints;
mod gate;
mod index;
mod logs;
mod metrics;
mod readiness;
mod reports;
pub mod router;
