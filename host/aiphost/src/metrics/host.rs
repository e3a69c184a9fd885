//! The host's own series: each partner's gauges, the engine's, the store's counters, the
//! notifier's and the connections'. They are counted where they happen (atomics of their own,
//! on paths that know nothing of metrics) and copied into their series each time `/metrics`
//! is scraped.

use super::{HostMetrics, Labels};
use crate::notify::Notifier;
use crate::task::TaskEngine;
use crate::transport::connections::ConnectionStats;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Register the host's own series on `host`: each partner's gauges, the engine's, the
/// store's, the notifier's and the connections' (all read when scraped).
pub fn register(
    host: &HostMetrics,
    engine: &TaskEngine,
    notifier: &Arc<Notifier>,
    connections: &Arc<ConnectionStats>,
) {
    let metrics = &host.metrics;
    let counter = |name, help| metrics.counter(name, help, Labels::none());
    let gauge = |name, help| metrics.gauge(name, help, Labels::none());
    let notified = [
        counter(
            "aiphost_notifications_delivered_total",
            "Notifications a receiver took (HTTP 200)",
        ),
        counter(
            "aiphost_notification_failed_attempts_total",
            "Notification attempts that failed (to be retried or given up)",
        ),
        counter(
            "aiphost_notifications_given_up_total",
            "Notifications given up on after the retry horizon",
        ),
    ];
    let stored = [
        counter(
            "aiphost_store_flushes_total",
            "Store syncs: committer rounds that made writes durable, each with one fdatasync (shared by concurrent writes)",
        ),
        counter(
            "aiphost_store_checkpoints_total",
            "Store checkpoints: rounds that flushed sled (the write-ahead log then starts over)",
        ),
        counter(
            "aiphost_store_changes_total",
            "Task changes applied by the store's committer, one write-ahead log record per round",
        ),
        counter(
            "aiphost_store_keys_written_total",
            "Keys the store's committer wrote to sled for task changes (inserts and removals)",
        ),
    ];
    let connected = [
        counter(
            "aiphost_http_connections_refused_total",
            "HTTP connections refused over --max-connections",
        ),
        counter(
            "aiphost_http_connections_timed_out_total",
            "HTTP connections closed for a slow client (request head, or an answer it stopped reading)",
        ),
    ];
    let agents = gauge("aiphost_agents", "Hosted partners");
    let streams = gauge(
        "aiphost_open_streams",
        "Event streams open now (followers of a task's events, whatever door; a stream does not know its door)",
    );
    let slots = gauge(
        "aiphost_task_slots",
        "Tasks held in memory now (in use by a command, an invocation or a stream's start)",
    );
    let open = gauge(
        "aiphost_http_connections",
        "HTTP connections open now (TLS handshakes included)",
    );
    let (engine, notifier, connections) = (engine.clone(), notifier.clone(), connections.clone());
    let partners = host.partners.clone();
    metrics.on_scrape(move || {
        partners.refresh(&engine);
        let n = &notifier.stats;
        for (counter, value) in notified.iter().zip([
            n.delivered.load(Ordering::Relaxed),
            n.failed_attempts.load(Ordering::Relaxed),
            n.given_up.load(Ordering::Relaxed),
        ]) {
            counter.absolute(value);
        }
        for (counter, value) in stored.iter().zip([
            engine.store_flushes(),
            engine.store_checkpoints(),
            engine.store_changes(),
            engine.store_keys(),
        ]) {
            counter.absolute(value);
        }
        for (counter, value) in connected.iter().zip([
            connections.refused.load(Ordering::Relaxed),
            connections.timed_out.load(Ordering::Relaxed),
        ]) {
            counter.absolute(value);
        }
        agents.set(partners.hosted() as f64);
        streams.set(engine.open_streams() as f64);
        slots.set(engine.slots_in_use() as f64);
        open.set(connections.open.load(Ordering::Relaxed) as f64);
    });
}

/// Register the partners' log counters on `host`: lines kept and lines dropped over the rate,
/// per hosted partner (`agent`, `tenant`), copied from `logs` when scraped. The labels come
/// from the registry, as every partner's do: a log of a partner no longer hosted is not shown.
pub fn register_partner_logs(
    host: &HostMetrics,
    logs: &Arc<crate::partner_logs::PartnerLogs>,
    agents: &Arc<crate::agent::Registry>,
) {
    // Weak: the hook lives in the metrics it registers on; a strong reference would keep them
    // (and through the other hooks the engine and its store) alive after the host stops.
    let metrics = Arc::downgrade(&host.metrics);
    let (logs, agents) = (logs.clone(), agents.clone());
    host.metrics.on_scrape(move || {
        let Some(metrics) = metrics.upgrade() else {
            return;
        };
        for count in logs.counts() {
            let Some(agent) = agents.get(&count.agent) else {
                continue;
            };
            let partner = super::Partner::of(&agent);
            metrics
                .counter(
                    "aiphost_partner_log_lines_total",
                    "Log lines a partner wrote that were kept (see GET /admin/agents/{id}/logs)",
                    Labels::partner(&partner),
                )
                .absolute(count.lines);
            metrics
                .counter(
                    "aiphost_partner_log_dropped_total",
                    "Log lines a partner wrote over its rate (--partner-log-rate), dropped",
                    Labels::partner(&partner),
                )
                .absolute(count.dropped);
        }
    });
}
