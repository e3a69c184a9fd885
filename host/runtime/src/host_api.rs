//! What a partner can call: task reports, logging, its key-value store, its granted config values
//! and `wasi:http` checked against its grants. WASI has no preopened directories, no environment,
//! no arguments and no sockets.
//!
//! Both contract versions are served by one [`InvocationState`]: the logic lives in its
//! version-neutral methods over the host's model types, and each version's `Host` traits are thin
//! delegations, expanded for both by [`shared_host!`] (the interfaces 0.2.0 left as they were) or
//! written out (`task`, which 0.2.0 extended).

use super::bindings::{v0_1, v0_2};
use super::log_sink::{LogSink, PartnerLog};
use super::outbound::{ConfigError, OutboundHooks};
use aiphost_model::activity::{Activity, Failure, InputRequest, TextDelta};
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
    /// A per-task cap on activity (events or bytes) is used up; the task is unchanged.
    #[error("limit reached: {0}")]
    LimitReached(String),
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
    /// Append text to a product (contract 0.2.0 on).
    fn stream_text(&self, delta: TextDelta) -> BoxFuture<'_, Result<(), ReportError>>;
    /// Report tool activity or usage (contract 0.2.0 on).
    fn activity(&self, activity: Activity) -> BoxFuture<'_, Result<(), ReportError>>;
    /// Move to awaiting-input with a form (contract 0.2.0 on); the schema is still to be checked.
    fn ask(
        &self,
        request: InputRequest,
        items: Vec<DataItem>,
    ) -> BoxFuture<'_, Result<(), ReportError>>;
    /// Fail the task with a code (contract 0.2.0 on).
    fn fail(&self, failure: Failure) -> BoxFuture<'_, Result<(), ReportError>>;
    /// Answer a start with a plain message and no task (contract 0.2.0 on).
    fn reply(&self, items: Vec<DataItem>) -> BoxFuture<'_, Result<(), ReportError>>;
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
    /// Where its log lines go.
    pub(super) log: Arc<dyn LogSink>,
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

impl WasiView for InvocationState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Why a key-value call failed, whatever the version (each maps it to its own `kv-error`).
enum KvFailure {
    TooLarge(String),
    Unavailable(String),
}

fn unavailable(e: aiphost_store::StoreError) -> KvFailure {
    tracing::error!(error = %e, "partner key-value store failed");
    KvFailure::Unavailable("the host's store failed; try again later".into())
}

fn check_key(key: &str) -> Result<(), KvFailure> {
    if key.len() > MAX_KV_KEY_BYTES {
        return Err(KvFailure::TooLarge(format!(
            "key is {} bytes; at most {MAX_KV_KEY_BYTES} are allowed",
            key.len()
        )));
    }
    Ok(())
}

/// The version-neutral side of every host call.
impl InvocationState {
    fn kv_scope(&self, task_scope: bool) -> KvScope<'_> {
        if task_scope {
            KvScope::Task(&self.kv.task)
        } else {
            KvScope::Agent
        }
    }

    fn kv_get(&self, task_scope: bool, key: &str) -> Result<Option<Vec<u8>>, KvFailure> {
        check_key(key)?;
        let kv = &self.kv;
        kv.store
            .kv_get(&kv.agent, self.kv_scope(task_scope), key)
            .map_err(unavailable)
    }

    fn kv_set(&self, task_scope: bool, key: &str, value: &[u8]) -> Result<(), KvFailure> {
        check_key(key)?;
        if value.len() > MAX_KV_VALUE_BYTES {
            return Err(KvFailure::TooLarge(format!(
                "value is {} bytes; at most {MAX_KV_VALUE_BYTES} are allowed",
                value.len()
            )));
        }
        let kv = &self.kv;
        kv.store
            .kv_set(&kv.agent, self.kv_scope(task_scope), key, value)
            .map(|_| ())
            .map_err(unavailable)
    }

    fn kv_delete(&self, task_scope: bool, key: &str) -> Result<(), KvFailure> {
        check_key(key)?;
        let kv = &self.kv;
        kv.store
            .kv_delete(&kv.agent, self.kv_scope(task_scope), key)
            .map(|_| ())
            .map_err(unavailable)
    }

    fn log_line(&self, level: tracing::Level, message: String, fields: Vec<(String, String)>) {
        let line = PartnerLog::bounded(level, message, fields);
        self.log.log(&self.kv.agent, &self.kv.task, line);
    }
}

/// The `Host` impls of the interfaces both versions share word for word (`types`, `log`, `kv`,
/// `config`), for the version module `$v`.
macro_rules! shared_host {
    ($v:ident) => {
        impl $v::wit::Host for InvocationState {}

        impl $v::aiphost::partner::config::Host for InvocationState {
            async fn get(
                &mut self,
                name: String,
            ) -> Result<String, $v::aiphost::partner::config::ConfigError> {
                use $v::aiphost::partner::config::ConfigError as E;
                self.outbound.caps.config(&name).map_err(|e| match e {
                    ConfigError::NotGranted => E::NotGranted,
                    ConfigError::NotSet => E::NotSet,
                })
            }
        }

        impl $v::aiphost::partner::log::Host for InvocationState {
            async fn log(
                &mut self,
                level: $v::aiphost::partner::log::Level,
                message: String,
                fields: Vec<(String, String)>,
            ) {
                use $v::aiphost::partner::log::Level as L;
                let level = match level {
                    L::Trace => tracing::Level::TRACE,
                    L::Debug => tracing::Level::DEBUG,
                    L::Info => tracing::Level::INFO,
                    L::Warn => tracing::Level::WARN,
                    L::Error => tracing::Level::ERROR,
                };
                self.log_line(level, message, fields);
            }
        }

        impl $v::aiphost::partner::kv::Host for InvocationState {
            async fn get(
                &mut self,
                scope: $v::aiphost::partner::kv::Scope,
                key: String,
            ) -> Result<Option<Vec<u8>>, $v::aiphost::partner::kv::KvError> {
                let task = matches!(scope, $v::aiphost::partner::kv::Scope::Task);
                self.kv_get(task, &key).map_err(Into::into)
            }

            async fn set(
                &mut self,
                scope: $v::aiphost::partner::kv::Scope,
                key: String,
                value: Vec<u8>,
            ) -> Result<(), $v::aiphost::partner::kv::KvError> {
                let task = matches!(scope, $v::aiphost::partner::kv::Scope::Task);
                self.kv_set(task, &key, &value).map_err(Into::into)
            }

            async fn delete(
                &mut self,
                scope: $v::aiphost::partner::kv::Scope,
                key: String,
            ) -> Result<(), $v::aiphost::partner::kv::KvError> {
                let task = matches!(scope, $v::aiphost::partner::kv::Scope::Task);
                self.kv_delete(task, &key).map_err(Into::into)
            }
        }

        impl From<KvFailure> for $v::aiphost::partner::kv::KvError {
            fn from(e: KvFailure) -> Self {
                match e {
                    KvFailure::TooLarge(m) => Self::TooLarge(m),
                    KvFailure::Unavailable(m) => Self::Unavailable(m),
                }
            }
        }
    };
}

shared_host!(v0_1);
shared_host!(v0_2);

impl v0_1::aiphost::partner::task::Host for InvocationState {
    async fn set_status(
        &mut self,
        state: v0_1::wit::TaskState,
        data_items: Vec<v0_1::wit::DataItem>,
    ) -> Result<(), v0_1::wit::ReportError> {
        let items =
            v0_1::items_from_guest(data_items).map_err(v0_1::wit::ReportError::InvalidData)?;
        Ok(self.reporter.set_status(state.into(), items).await?)
    }

    async fn emit_product_chunk(
        &mut self,
        chunk: v0_1::wit::ProductChunk,
    ) -> Result<(), v0_1::wit::ReportError> {
        let chunk = v0_1::chunk_from_guest(chunk).map_err(v0_1::wit::ReportError::InvalidData)?;
        Ok(self.reporter.emit_chunk(chunk).await?)
    }

    async fn current_state(&mut self) -> Option<v0_1::wit::TaskState> {
        self.reporter.current_state().await.map(Into::into)
    }
}

impl v0_2::aiphost::partner::task::Host for InvocationState {
    async fn set_status(
        &mut self,
        state: v0_2::wit::TaskState,
        data_items: Vec<v0_2::wit::DataItem>,
    ) -> Result<(), v0_2::wit::ReportError> {
        let items =
            v0_2::items_from_guest(data_items).map_err(v0_2::wit::ReportError::InvalidData)?;
        Ok(self.reporter.set_status(state.into(), items).await?)
    }

    async fn emit_product_chunk(
        &mut self,
        chunk: v0_2::wit::ProductChunk,
    ) -> Result<(), v0_2::wit::ReportError> {
        let chunk = v0_2::chunk_from_guest(chunk).map_err(v0_2::wit::ReportError::InvalidData)?;
        Ok(self.reporter.emit_chunk(chunk).await?)
    }

    async fn current_state(&mut self) -> Option<v0_2::wit::TaskState> {
        self.reporter.current_state().await.map(Into::into)
    }

    async fn stream_text(
        &mut self,
        delta: v0_2::wit::TextDelta,
    ) -> Result<(), v0_2::wit::ReportError> {
        let delta = v0_2::delta_from_guest(delta).map_err(v0_2::wit::ReportError::InvalidData)?;
        Ok(self.reporter.stream_text(delta).await?)
    }

    async fn report_tool_call(
        &mut self,
        call: v0_2::wit::ToolCall,
    ) -> Result<(), v0_2::wit::ReportError> {
        let call = v0_2::tool_call_from_guest(call).map_err(v0_2::wit::ReportError::InvalidData)?;
        Ok(self.reporter.activity(call).await?)
    }

    async fn report_tool_result(
        &mut self,
        outcome: v0_2::wit::ToolResult,
    ) -> Result<(), v0_2::wit::ReportError> {
        let result =
            v0_2::tool_result_from_guest(outcome).map_err(v0_2::wit::ReportError::InvalidData)?;
        Ok(self.reporter.activity(result).await?)
    }

    async fn report_usage(
        &mut self,
        usage: v0_2::wit::Usage,
    ) -> Result<(), v0_2::wit::ReportError> {
        let usage = v0_2::usage_from_guest(usage).map_err(v0_2::wit::ReportError::InvalidData)?;
        Ok(self.reporter.activity(usage).await?)
    }

    async fn ask(
        &mut self,
        request: v0_2::wit::InputRequest,
        data_items: Vec<v0_2::wit::DataItem>,
    ) -> Result<(), v0_2::wit::ReportError> {
        let request =
            v0_2::request_from_guest(request).map_err(v0_2::wit::ReportError::InvalidData)?;
        let items =
            v0_2::items_from_guest(data_items).map_err(v0_2::wit::ReportError::InvalidData)?;
        Ok(self.reporter.ask(request, items).await?)
    }

    async fn fail(&mut self, failure: v0_2::wit::Failure) -> Result<(), v0_2::wit::ReportError> {
        let failure =
            v0_2::failure_from_guest(failure).map_err(v0_2::wit::ReportError::InvalidData)?;
        Ok(self.reporter.fail(failure).await?)
    }

    async fn reply(
        &mut self,
        data_items: Vec<v0_2::wit::DataItem>,
    ) -> Result<(), v0_2::wit::ReportError> {
        let items =
            v0_2::items_from_guest(data_items).map_err(v0_2::wit::ReportError::InvalidData)?;
        Ok(self.reporter.reply(items).await?)
    }
}
