//! Metering: the bytes stored for each tenant, measured now and then, against its quota.

use super::*;
use std::collections::HashMap;
use std::sync::Arc;

impl Tenancy {
    /// Measure every tenant's stored bytes (published bundles, tasks, events, KV).
    pub fn measure_storage(&self) -> Result<(), TenancyError> {
        let mut totals: HashMap<String, u64> = HashMap::new();
        for record in self.agent_records()? {
            if record.orphaned {
                continue;
            }
            let bundles: u64 = record.versions.iter().map(|v| v.component_bytes).sum();
            let data = self.store.agent_bytes(&record.id)?;
            *totals.entry(record.tenant.clone()).or_default() += bundles + data;
        }
        let map = self.tenants.read().unwrap_or_else(|p| p.into_inner());
        for (id, state) in map.iter() {
            let total = totals.get(id).copied().unwrap_or(0);
            state.set_stored_bytes(total);
        }
        Ok(())
    }

    /// Re-measure storage every `every` until `stop`.
    pub fn spawn_storage_meter(
        self: &Arc<Self>,
        every: std::time::Duration,
        stop: tokio_util::sync::CancellationToken,
    ) {
        let tenancy = self.clone();
        tokio::spawn(async move {
            loop {
                let measuring = tenancy.clone();
                match tokio::task::spawn_blocking(move || measuring.measure_storage()).await {
                    Ok(Err(e)) => tracing::warn!(error = %e, "cannot measure tenant storage"),
                    Err(e) => tracing::warn!(error = %e, "storage meter failed"),
                    Ok(Ok(())) => {}
                }
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = stop.cancelled() => return,
                }
            }
        });
    }
}
