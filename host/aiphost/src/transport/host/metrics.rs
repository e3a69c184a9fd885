//! `GET /metrics`, in Prometheus' text format.

use super::endpoints::Endpoints;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use std::sync::atomic::Ordering;

/// `GET /metrics`: the engine's, the store's, the notifier's and the connections' counters,
/// then each door's.
pub(super) async fn metrics(State(state): State<Endpoints>) -> Response {
    let stats = state.engine.stats();
    let counters = [
        (
            "aiphost_commands_total",
            "Leader commands handled",
            stats.commands.load(Ordering::Relaxed),
        ),
        (
            "aiphost_invocations_total",
            "Partner invocations started",
            stats.invocations.load(Ordering::Relaxed),
        ),
        (
            "aiphost_invocation_failures_total",
            "Invocations that failed their task (trap, deadline, limit)",
            stats.invocation_failures.load(Ordering::Relaxed),
        ),
        (
            "aiphost_transitions_total",
            "Task state transitions stored",
            stats.transitions.load(Ordering::Relaxed),
        ),
        (
            "aiphost_timeouts_total",
            "Awaiting timers that expired",
            stats.timeouts.load(Ordering::Relaxed),
        ),
        (
            "aiphost_events_total",
            "Task events logged",
            stats.events.load(Ordering::Relaxed),
        ),
        (
            "aiphost_tasks_set_aside_total",
            "Tasks whose stored state could not be read, failed and set aside",
            stats.set_aside.load(Ordering::Relaxed),
        ),
        (
            "aiphost_notifications_delivered_total",
            "Notifications a receiver took (HTTP 200)",
            state.notifier.stats.delivered.load(Ordering::Relaxed),
        ),
        (
            "aiphost_notification_failed_attempts_total",
            "Notification attempts that failed (to be retried or given up)",
            state.notifier.stats.failed_attempts.load(Ordering::Relaxed),
        ),
        (
            "aiphost_notifications_given_up_total",
            "Notifications given up on after the retry horizon",
            state.notifier.stats.given_up.load(Ordering::Relaxed),
        ),
        (
            "aiphost_store_flushes_total",
            "Store syncs: committer rounds that made writes durable, each with one fdatasync (shared by concurrent writes)",
            state.engine.store_flushes(),
        ),
        (
            "aiphost_store_checkpoints_total",
            "Store checkpoints: rounds that flushed sled (the write-ahead log then starts over)",
            state.engine.store_checkpoints(),
        ),
        (
            "aiphost_store_changes_total",
            "Task changes applied by the store's committer, one write-ahead log record per round",
            state.engine.store_changes(),
        ),
    ];
    let mut text = String::new();
    for (name, help, value) in counters {
        text.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n"
        ));
    }
    text.push_str(&format!(
        "# HELP aiphost_agents Hosted partners\n# TYPE aiphost_agents gauge\naiphost_agents {}\n",
        state.agents.len()
    ));
    text.push_str(&format!(
        "# HELP aiphost_open_streams Event streams open now\n# TYPE aiphost_open_streams gauge\naiphost_open_streams {}\n",
        state.engine.open_streams()
    ));
    text.push_str(&format!(
        "# HELP aiphost_task_slots Tasks held in memory now (in use by a command, an invocation or a stream's start)\n# TYPE aiphost_task_slots gauge\naiphost_task_slots {}\n",
        state.engine.slots_in_use()
    ));
    let busy = state.engine.busy_partners();
    text.push_str("# HELP aiphost_partner_invocations_running Invocations of a partner running now\n# TYPE aiphost_partner_invocations_running gauge\n");
    for share in &busy {
        text.push_str(&format!(
            "aiphost_partner_invocations_running{{agent=\"{}\"}} {}\n",
            share.agent, share.running
        ));
    }
    text.push_str("# HELP aiphost_partner_invocations_waiting Invocations of a partner waiting for its turn (its share of the guest threads is in use)\n# TYPE aiphost_partner_invocations_waiting gauge\n");
    for share in &busy {
        text.push_str(&format!(
            "aiphost_partner_invocations_waiting{{agent=\"{}\"}} {}\n",
            share.agent, share.waiting
        ));
    }
    let connections = &state.connections;
    text.push_str(&format!(
        "# HELP aiphost_http_connections HTTP connections open now (TLS handshakes included)\n# TYPE aiphost_http_connections gauge\naiphost_http_connections {}\n",
        connections.open.load(Ordering::Relaxed)
    ));
    for (name, help, value) in [
        (
            "aiphost_http_connections_refused_total",
            "HTTP connections refused over --max-connections",
            connections.refused.load(Ordering::Relaxed),
        ),
        (
            "aiphost_http_connections_timed_out_total",
            "HTTP connections closed for a slow client (request head, or an answer it stopped reading)",
            connections.timed_out.load(Ordering::Relaxed),
        ),
    ] {
        text.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n"
        ));
    }
    // Each door's own lines.
    for door in state.doors.iter() {
        door.metrics(&mut text);
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}
