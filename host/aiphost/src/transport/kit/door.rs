//! What a door gives the server: its routes. The server assembles a list of doors and merges
//! them; a door's routes carry its own state (drawn from [`HostState`]), so nothing of a door is
//! edited centrally. A door with counters of its own registers them on the host's
//! [`crate::metrics::Metrics`] when it is made; every door's requests are counted in the kit's
//! request span ([`super::span`]).

use super::state::HostState;
use axum::Router;

/// A door of the host (AIP, A2A, group mode).
pub trait Door: Send + Sync {
    /// Its name, for logs.
    fn name(&self) -> &'static str;

    /// Its HTTP routes (none for a door with no HTTP entry of its own).
    fn routes(&self) -> Router<HostState>;
}
