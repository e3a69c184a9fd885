//! The host's own HTTP endpoints, which are no door's: its home, the partner listing, health and
//! readiness, metrics, the admin API (partners' logs, tasks and their timeline included), the
//! console, the gate in front of every partner's URLs, and the access layer around every route
//! (the request span, the access line). [`router`] merges them with the doors' routes.

mod access;
mod admin;
mod console;
pub mod endpoints;
mod gate;
mod index;
mod logs;
mod metrics;
mod partner_stats;
mod readiness;
mod reports;
pub mod router;
mod tasks;
mod timeline;
