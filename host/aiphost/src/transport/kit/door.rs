//! What a door gives the server: its routes and its metrics. The server assembles a list of
//! doors and merges them; a door's routes carry its own state (drawn from [`HostState`]), so
//! nothing of a door is edited centrally.

use super::state::HostState;
use axum::Router;

/// A door of the host (AIP, A2A, group mode).
pub trait Door: Send + Sync {
    /// Its name, for logs.
    fn name(&self) -> &'static str;

    /// Its HTTP routes (none for a door with no HTTP entry of its own).
    fn routes(&self) -> Router<HostState>;

    /// Its lines of `/metrics`, appended to `text` ([`super::metrics`]).
    fn metrics(&self, text: &mut String) {
        let _ = text;
    }
}
