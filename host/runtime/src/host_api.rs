//! What a partner can call: task reports, logging, its key-value store, its granted config values
//! and `wasi:http` checked against its grants. WASI has no preopened directories, no environment,
//! no arguments and no sockets.

use super::bindings::{aiphost::partner as api, chunk_from_guest, items_from_guest, wit};
use super::outbound::{ConfigError, OutboundHooks};
use aiphost_model::{DataItem, ProductChunk, TaskState};
use aiphost_store::{KvScope, Store};
use futures::future::BoxFuture;
use std::sync::Arc;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// Longest key a partner may store.
pub const MAX_KV_KEY_BYTES: usize = 1024;
/// Largest value a partner may store under one key.
pub const MAX_KV_VALUE_BYTES: usize = 1024 * 1024;
/// Longest log message kept (the rest is cut).
const MAX_LOG_BYTES: usize = 8 * 1024;

/// Why the host refused a partner's report (mirrors the WIT `report-error`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    /// The state machine does not allow this change from the current state; the message says
    /// why.
    #[error("not allowed: {0}")]
    InvalidTransition(String),
    /// The task already ended (completed, canceled, failed or rejected).
    #[error("the task has ended")]
    TaskEnded,
    /// The products would have reached this many bytes, over the task's `maxProductsBytes`; the
    /// task has been failed.
    #[error("products would reach {0} bytes, over the task's maxProductsBytes")]
    ProductsTooLarge(u64),
    /// A DataItem is malformed (e.g. `data` that is not a JSON object).
    #[error("invalid data: {0}")]
    InvalidData(String),
}

impl From<ReportError> for wit::ReportError {
    fn from(e: ReportError) -> Self {
        match e {
            ReportError::InvalidTransition(m) => wit::ReportError::InvalidTransition(m),
            ReportError::TaskEnded => wit::ReportError::TaskEnded,
            ReportError::ProductsTooLarge(n) => wit::ReportError::ProductsTooLarge(n),
            ReportError::InvalidData(m) => wit::ReportError::InvalidData(m),
        }
    }
}

/// Where a partner's reports about its task go: the task engine.
pub trait Reporter: Send + Sync + 'static {
    /// Move the task to `state`.
    fn set_status(
        &self,
        state: TaskState,
        items: Vec<DataItem>,
    ) -> BoxFuture<'_, Result<(), ReportError>>;
    /// Add or replace part of a product.
    fn emit_chunk(&self, chunk: ProductChunk) -> BoxFuture<'_, Result<(), ReportError>>;
    /// The task's state now (`None` while a new task is undecided).
    fn current_state(&self) -> BoxFuture<'_, Option<TaskState>>;
}

/// The partner's key-value store: its agent's entries and its task's.
pub struct KvAccess {
    pub store: Store,
    pub agent: String,
    pub task: String,
}

/// The data of one invocation's wasmtime `Store`.
pub struct InvocationState {
    pub(super) wasi: WasiCtx,
    pub(super) table: ResourceTable,
    pub(super) limits: crate::limits::InstanceLimits,
    pub(super) reporter: Arc<dyn Reporter>,
    pub(super) kv: KvAccess,
    pub(super) http: WasiHttpCtx,
    /// Checks every outgoing request against the partner's grants.
    pub(super) outbound: OutboundHooks,
}

impl WasiHttpView for InvocationState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.outbound,
        }
    }
}

impl api::config::Host for InvocationState {
    async fn get(&mut self, name: String) -> Result<String, api::config::ConfigError> {
        self.outbound.caps.config(&name).map_err(|e| match e {
            ConfigError::NotGranted => api::config::ConfigError::NotGranted,
            ConfigError::NotSet => api::config::ConfigError::NotSet,
        })
    }
}

impl WasiView for InvocationState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wit::Host for InvocationState {}

impl api::task::Host for InvocationState {
    async fn set_status(
        &mut self,
        state: wit::TaskState,
        data_items: Vec<wit::DataItem>,
    ) -> Result<(), wit::ReportError> {
        let items = items_from_guest(data_items).map_err(wit::ReportError::InvalidData)?;
        self.reporter
            .set_status(state.into(), items)
            .await
            .map_err(Into::into)
    }

    async fn emit_product_chunk(
        &mut self,
        chunk: wit::ProductChunk,
    ) -> Result<(), wit::ReportError> {
        let chunk = chunk_from_guest(chunk).map_err(wit::ReportError::InvalidData)?;
        self.reporter.emit_chunk(chunk).await.map_err(Into::into)
    }

    async fn current_state(&mut self) -> Option<wit::TaskState> {
        self.reporter.current_state().await.map(Into::into)
    }
}

impl api::log::Host for InvocationState {
    async fn log(
        &mut self,
        level: api::log::Level,
        message: String,
        fields: Vec<(String, String)>,
    ) {
        let mut message = message;
        if message.len() > MAX_LOG_BYTES {
            let mut cut = MAX_LOG_BYTES;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        let fields: String = fields
            .iter()
            .take(32)
            .map(|(k, v)| format!("{k}={v:?}"))
            .collect::<Vec<_>>()
            .join(" ");
        let agent = &self.kv.agent;
        let task = &self.kv.task;
        use api::log::Level;
        match level {
            Level::Trace => tracing::trace!(target: "partner", agent, task, fields, "{message}"),
            Level::Debug => tracing::debug!(target: "partner", agent, task, fields, "{message}"),
            Level::Info => tracing::info!(target: "partner", agent, task, fields, "{message}"),
            Level::Warn => tracing::warn!(target: "partner", agent, task, fields, "{message}"),
            Level::Error => tracing::error!(target: "partner", agent, task, fields, "{message}"),
        }
    }
}

impl KvAccess {
    fn scope(&self, scope: api::kv::Scope) -> KvScope<'_> {
        match scope {
            api::kv::Scope::Task => KvScope::Task(&self.task),
            api::kv::Scope::Agent => KvScope::Agent,
        }
    }

    fn check_key(key: &str) -> Result<(), api::kv::KvError> {
        if key.len() > MAX_KV_KEY_BYTES {
            return Err(api::kv::KvError::TooLarge(format!(
                "key is {} bytes; at most {MAX_KV_KEY_BYTES} are allowed",
                key.len()
            )));
        }
        Ok(())
    }
}

fn unavailable(e: aiphost_store::StoreError) -> api::kv::KvError {
    tracing::error!(error = %e, "partner key-value store failed");
    api::kv::KvError::Unavailable("the host's store failed; try again later".into())
}

impl api::kv::Host for InvocationState {
    async fn get(
        &mut self,
        scope: api::kv::Scope,
        key: String,
    ) -> Result<Option<Vec<u8>>, api::kv::KvError> {
        KvAccess::check_key(&key)?;
        let kv = &self.kv;
        kv.store
            .kv_get(&kv.agent, kv.scope(scope), &key)
            .map_err(unavailable)
    }

    async fn set(
        &mut self,
        scope: api::kv::Scope,
        key: String,
        value: Vec<u8>,
    ) -> Result<(), api::kv::KvError> {
        KvAccess::check_key(&key)?;
        if value.len() > MAX_KV_VALUE_BYTES {
            return Err(api::kv::KvError::TooLarge(format!(
                "value is {} bytes; at most {MAX_KV_VALUE_BYTES} are allowed",
                value.len()
            )));
        }
        let kv = &self.kv;
        kv.store
            .kv_set(&kv.agent, kv.scope(scope), &key, &value)
            .map(|_| ())
            .map_err(unavailable)
    }

    async fn delete(&mut self, scope: api::kv::Scope, key: String) -> Result<(), api::kv::KvError> {
        KvAccess::check_key(&key)?;
        let kv = &self.kv;
        kv.store
            .kv_delete(&kv.agent, kv.scope(scope), &key)
            .map(|_| ())
            .map_err(unavailable)
    }
}
