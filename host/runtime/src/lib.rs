//! The partner runtime: wasmtime with a pooling allocator, epoch deadlines, a memory cap per
//! instance, async host functions, and a fresh instance per invocation from an `InstancePre`.
//!
//! An invocation starts on the thread that asked for it, like any other work of the host, and
//! most end there within a fraction of an epoch tick. One that keeps running for
//! [`BUSY_TICKS`] ticks moves to threads of its own (a tokio runtime for guests only), away from
//! the threads that serve Leaders: a partner that spins until its deadline then costs the others
//! a share of the CPU, as any busy process would, not the host's ability to answer. A running
//! guest yields every epoch tick, so the guests of many partners take turns on those threads.
//!
//! A trap, a deadline, a memory or stack limit, or a panic in a partner ends only that invocation:
//! [`Runtime::invoke`] turns it into an [`InvocationEnd`] with a readable reason.

#![deny(missing_docs)]

mod bindings;
mod cache;
mod footprint;
mod host_api;
mod layout;
mod limits;
pub mod log_sink;
pub mod outbound;
mod pool;

pub use footprint::Footprint;
pub use host_api::{MAX_KV_KEY_BYTES, MAX_KV_VALUE_BYTES, ReportError, Reporter};
pub use layout::{MemoryLayout, layouts_of};
pub use log_sink::{LogSink, PartnerLog};
pub use pool::CAP as FOOTPRINT_CAP;

use aiphost_model::{DataItem, JsonObject, TaskState};
use aiphost_store::Store;
use bindings::{Contract, v0_1, v0_2};
use host_api::{InvocationState, KvAccess};
use outbound::{Capabilities, OutboundHooks, OutboundPolicy};
use pool::Pool;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, InstanceAllocationStrategy};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi_http::WasiHttpCtx;

/// How often the epoch advances: how long a guest runs before it yields its thread to the next
/// one waiting (and the granularity of deadlines).
const EPOCH_TICK: Duration = Duration::from_millis(2);
/// Epoch ticks an invocation may run on a Leader's thread before it moves to the guest threads
/// (a tick is [`EPOCH_TICK`]; an invocation that waits on a host call does not tick).
const BUSY_TICKS: u32 = 2;
/// Guest output kept for error reports (a panic message lands on stderr).
const GUEST_OUTPUT_BYTES: usize = 16 * 1024;
/// Memory regions (linear memories, tables, stacks) of finished instances queued before one pass
/// decommits them all (see [`Runtime::new`]).
const DECOMMIT_BATCH: usize = 64;
/// The first bytes of each linear memory a finished instance leaves resident, reset in place
/// (zeroed, or copied back from the component's data) instead of decommitted (see
/// [`Runtime::new`]). Sized to hold the whole memory of the partners the SDKs build: CPython's
/// (componentize-py) starts at 12.4 MiB and QuickJS's at 1.7 MiB.
pub const RESIDENT_BYTES: usize = 16 * 1024 * 1024;
/// The first bytes of each table kept resident, reset in place (a Rust partner's table is a few
/// hundred 8-byte entries).
const TABLE_RESIDENT_BYTES: usize = 16 * 1024;

/// Operator-level limits of the runtime. A manifest may ask for less, never for more.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// Where precompiled components are cached.
    pub cache_dir: PathBuf,
    /// Invocations that may run at once (pool slots); more wait for a slot.
    pub max_concurrent: u32,
    /// Memory per instance when the manifest does not say, and the most it may ask for.
    pub default_memory_mib: u64,
    /// The most memory per instance a manifest may ask for, in MiB (also each pool slot's size).
    pub max_memory_mib: u64,
    /// Time per invocation when the manifest does not say, and the most it may ask for.
    pub default_invocation_ms: u64,
    /// The most time per invocation a manifest may ask for, in ms.
    pub max_invocation_ms: u64,
    /// WebAssembly stack per invocation.
    pub max_stack_bytes: usize,
    /// What outbound HTTP partners may be granted.
    pub outbound: Arc<OutboundPolicy>,
    /// Threads that run partner code (0: one per CPU).
    pub guest_threads: usize,
}

impl RuntimeConfig {
    /// Defaults with the cache under `data_dir`.
    pub fn with_data_dir(data_dir: &Path) -> Self {
        RuntimeConfig {
            cache_dir: data_dir.join("compiled"),
            max_concurrent: 256,
            default_memory_mib: 64,
            max_memory_mib: 512,
            default_invocation_ms: 30_000,
            max_invocation_ms: 300_000,
            max_stack_bytes: 512 * 1024,
            outbound: Arc::default(),
            guest_threads: 0,
        }
    }
}

/// A component that failed to load or does not fit the partner world.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The component file could not be read.
    #[error("cannot read component {path}: {source}")]
    Read {
        /// The component file.
        path: String,
        /// What reading it failed with.
        source: std::io::Error,
    },
    /// The bytes are not a component wasmtime can compile (a core module, say).
    #[error("not a usable WebAssembly component: {0:#}")]
    Invalid(wasmtime::Error),
    /// The component's imports or exports do not match the partner world.
    #[error("the component does not fit the aiphost:partner world (0.1.0 or 0.2.0): {0:#}")]
    World(wasmtime::Error),
    /// One instance of the component would take more of the pool than any may.
    #[error(
        "one instance of the component needs {needed} {what}, more than the {cap} any partner may have"
    )]
    TooBig {
        /// `core instances`, `linear memories` or `tables`.
        what: &'static str,
        /// How many one instance needs.
        needed: u32,
        /// The most any may have.
        cap: u32,
    },
    /// The manifest asks for more than the operator allows.
    #[error("{field} of {asked} exceeds the operator's limit of {limit}")]
    OverLimit {
        /// The manifest field: `limits.memory-mib` or `limits.invocation-ms`.
        field: &'static str,
        /// What the manifest asks for, in the field's unit.
        asked: u64,
        /// The operator's limit, in the same unit.
        limit: u64,
    },
    /// The engine, its linker or its epoch thread could not be set up, or a compiled component
    /// could not be cached.
    #[error("cannot start the WebAssembly engine: {0:#}")]
    Engine(wasmtime::Error),
    /// The tokio runtime of the guest threads could not be built.
    #[error("cannot start the threads that run partners: {0}")]
    Threads(std::io::Error),
}

/// What an invocation is about (the host side of the WIT `invocation`).
#[derive(Clone, Debug)]
pub struct Invocation {
    /// What the partner is invoked for.
    pub event: PartnerEvent,
    /// The task's id, as the Leader knows it.
    pub task_id: String,
    /// The task's session, if it has one.
    pub session_id: Option<String>,
    /// The Leader's identity (its AIC), if it gave one.
    pub leader_id: Option<String>,
    /// The task's state as the invocation begins; `None` for a new task not yet accepted or
    /// rejected.
    pub state: Option<TaskState>,
    /// The DataItems that came with the command.
    pub data_items: Vec<DataItem>,
    /// The Leader's `maxProductsBytes`, if it set one.
    pub max_products_bytes: Option<u64>,
    /// Product bytes the task already holds (they count against `max_products_bytes`).
    pub products_bytes: u64,
    /// The command's `commandParams`.
    pub command_params: JsonObject,
}

/// The event a partner is invoked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartnerEvent {
    /// A new task: the partner accepts or rejects it, then works.
    Start,
    /// New input for a task that was awaiting input or completion.
    Continue,
    /// The task was completed; the partner may clean up, but its reports are refused.
    Complete(EndReason),
    /// The task was canceled; the partner may clean up, but its reports are refused.
    Cancel(EndReason),
}

/// Why a task ended without the partner asking for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// The Leader sent the command.
    Leader,
    /// The awaiting-input or awaiting-completion timeout ran out.
    Timeout,
}

/// How an invocation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InvocationEnd {
    /// `handle` returned `ok`.
    Returned,
    /// `handle` returned `err` with this message.
    PartnerError(String),
    /// The partner broke a limit or trapped; the reason says which.
    Trapped(String),
    /// The invocation ran past its deadline and was stopped.
    DeadlineExceeded(Duration),
}

/// Whose key-value store an invocation uses: the agent's, and the task's as the store keys it
/// (a task id scoped to its Leader when Leaders authenticate).
#[derive(Clone, Copy, Debug)]
pub struct KvOwner<'a> {
    /// The agent id: whose agent-scoped entries the invocation uses.
    pub agent: &'a str,
    /// The task as the store keys it: whose task-scoped entries the invocation uses.
    pub task: &'a str,
}

/// What [`Runtime::precheck`] found of a component: its footprint, and the limits it runs with.
#[derive(Clone, Copy, Debug)]
pub struct Prechecked {
    footprint: Footprint,
    memory_mib: u64,
    invocation_ms: u64,
}

/// A component [`Runtime::check`] compiled and linked, not yet cached.
pub struct Checked {
    component: Component,
    /// The linked code, ready to run (with nothing granted yet).
    pub code: PartnerCode,
}

/// A component linked against the version of the contract it was built for.
#[derive(Clone)]
enum Pre {
    V0_1(v0_1::PartnerPre<InvocationState>),
    V0_2(v0_2::PartnerPre<InvocationState>),
}

/// A loaded partner: its compiled component, linked and ready to instantiate.
#[derive(Clone)]
pub struct PartnerCode {
    pre: Pre,
    footprint: Footprint,
    memory_bytes: usize,
    deadline: Duration,
    /// What it was granted beyond its sandbox (nothing until [`PartnerCode::granted`]).
    capabilities: Arc<Capabilities>,
    /// Where its log lines go (`tracing` until [`PartnerCode::logging_to`]).
    log: Arc<dyn LogSink>,
}

impl std::fmt::Debug for PartnerCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartnerCode")
            .field("footprint", &self.footprint)
            .field("memory_bytes", &self.memory_bytes)
            .field("deadline", &self.deadline)
            .field("contract", &self.contract())
            .finish_non_exhaustive()
    }
}

impl PartnerCode {
    /// This code with `capabilities` granted.
    pub fn granted(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = Arc::new(capabilities);
        self
    }

    /// This code with its log lines going to `sink`.
    pub fn logging_to(mut self, sink: Arc<dyn LogSink>) -> Self {
        self.log = sink;
        self
    }

    /// The version of `aiphost:partner` the component was built against: `0.1.0` or `0.2.0`.
    pub fn contract(&self) -> &'static str {
        match self.pre {
            Pre::V0_1(_) => Contract::V0_1,
            Pre::V0_2(_) => Contract::V0_2,
        }
        .as_str()
    }

    /// The wall-clock time one invocation may take.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }
}

/// One wasmtime engine for the process, with its linker and pool.
pub struct Runtime {
    engine: Engine,
    linker: Linker<InvocationState>,
    config: RuntimeConfig,
    cache_dir: PathBuf,
    pool: Pool,
    ticker_stop: Arc<AtomicBool>,
    /// Where guests run: threads of their own (see the module doc).
    guests: Option<tokio::runtime::Runtime>,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
        // Dropped from async code too (the last hold on a host): do not block on the threads.
        if let Some(guests) = self.guests.take() {
            guests.shutdown_background();
        }
    }
}

/// Something an invocation holds until its instance is gone (a permit).
pub type Hold = Box<dyn std::any::Any + Send>;

/// An invocation that runs where it is polled until it is found busy, then on the guest
/// threads (see the module doc).
struct Migrating<F: Future> {
    place: Place<F>,
    /// Set by the guest's epoch callback once it has run [`BUSY_TICKS`].
    busy: Arc<AtomicBool>,
    guests: tokio::runtime::Handle,
}

enum Place<F: Future> {
    Here(Pin<Box<F>>),
    Guests(tokio::task::JoinHandle<F::Output>),
    Moved,
}

impl<F: Future> Drop for Migrating<F> {
    /// Dropped (a cancel, an abandoned request): the guest stops too, wherever it runs, so no
    /// partner code runs on for a task nobody waits for.
    fn drop(&mut self) {
        if let Place::Guests(handle) = &self.place {
            handle.abort();
        }
    }
}

impl<F> Future for Migrating<F>
where
    F: Future<Output = InvocationEnd> + Send + 'static,
{
    type Output = InvocationEnd;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<InvocationEnd> {
        loop {
            match &mut self.place {
                Place::Here(run) => {
                    let Poll::Ready(end) = run.as_mut().poll(cx) else {
                        if !self.busy.load(Ordering::Relaxed) {
                            return Poll::Pending;
                        }
                        // Between two polls a guest can move: its stack is its own.
                        if let Place::Here(run) = std::mem::replace(&mut self.place, Place::Moved) {
                            let run = tracing::Instrument::in_current_span(run);
                            self.place = Place::Guests(self.guests.spawn(run));
                        }
                        continue;
                    };
                    return Poll::Ready(end);
                }
                Place::Guests(handle) => {
                    return Pin::new(handle).poll(cx).map(|joined| {
                        joined.unwrap_or_else(|e| {
                            InvocationEnd::Trapped(format!(
                                "the partner's invocation was lost: {e}"
                            ))
                        })
                    });
                }
                Place::Moved => {
                    return Poll::Ready(InvocationEnd::Trapped(
                        "the partner's invocation was lost while moving".into(),
                    ));
                }
            }
        }
    }
}

impl Runtime {
    /// Build the engine and start its epoch ticker.
    pub fn new(config: RuntimeConfig) -> Result<Self, RuntimeError> {
        let slots = config.max_concurrent.max(1);
        // The first `RESIDENT_BYTES` of each linear memory (and `TABLE_RESIDENT_BYTES` of each
        // table) stay resident when an instance ends: wasmtime resets them in place, zeroing
        // them or copying the component's data back over them, and only the rest is
        // decommitted. The reset covers what the memory has grown to, never more: a Rust echo's
        // 128 KiB memory (a 64 KiB stack at the bottom and its data right above, `layout.rs`)
        // is reset in 128 KiB, CPython's 12.4 MiB in 12.4 MiB. What it saves is the page
        // faults of the next instance in the slot: a decommitted page of the component's data
        // is mapped again from its image, read-only at the first read, and copied at the first
        // write, which must flush the old mapping from every core the host runs on (an
        // inter-processor interrupt). Python and QuickJS partners write all over their
        // snapshotted heaps: those faults were half of their starts' CPU, and keeping their
        // whole memory resident cut a Python start's host CPU from 11.3 to 4.2 ms and a QuickJS
        // one's from 2.4 to 0.9 ms (BENCHMARKS.md, issue 35 point 4); a smaller range saved
        // next to nothing for Python (2-8 MiB: 10.3-8.6 ms), whose writes are spread over the
        // whole image. For an echo in Rust, whose memory the range always held, it cut the
        // guest's page faults from 7.9 % to 2.1 % of a start's samples (issue 35).
        //
        // Resetting only the dirtied pages (PAGEMAP_SCAN) is not used: wasmtime 48's scan
        // skips a dirty page that is swapped out (or in migration), and the next instance in
        // that slot would read it (wasmtime PR #14357). What stays resident is bounded: the
        // range (or the memory's size, if smaller) times the pool's memories that were in use
        // at once, the memory such a burst of invocations held anyway while it ran.
        //
        // Decommits are batched: a finished instance's slot waits in a queue until
        // `DECOMMIT_BATCH` regions are queued, then one pass `madvise`s them all. Each `madvise`
        // flushes the TLB of every core the host runs on (an inter-processor interrupt that
        // both cores wait for), so one per batch instead of three per invocation cut a durable
        // start's CPU by about a tenth (BENCHMARKS.md, issue 14). A slot in the queue is not
        // lost: an allocation that finds the pool full flushes the queue and tries again. Nor
        // does the queue raise the memory bound: a queued slot's pages stay resident, but the
        // slot cannot be used meanwhile, so at most every slot of the pool holds its cap, as
        // when all are busy.
        let (pool, mut pooling) = Pool::new(slots);
        pooling
            .linear_memory_keep_resident(RESIDENT_BYTES)
            .table_keep_resident(TABLE_RESIDENT_BYTES)
            .decommit_batch_size(DECOMMIT_BATCH)
            .max_memory_size(usize::try_from(config.max_memory_mib << 20).unwrap_or(usize::MAX));
        let mut wasm = Config::new();
        wasm.wasm_component_model(true)
            .epoch_interruption(true)
            .max_wasm_stack(config.max_stack_bytes)
            .async_stack_size(config.max_stack_bytes + 1024 * 1024)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
        let engine = Engine::new(&wasm).map_err(RuntimeError::Engine)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(RuntimeError::Engine)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(RuntimeError::Engine)?;
        // Both versions of the contract: their names differ by version (wasmtime matches a 0.x
        // import by its minor version), so each component finds the one it was built for.
        v0_1::Partner::add_to_linker::<_, HasSelf<InvocationState>>(&mut linker, |s| s)
            .map_err(RuntimeError::Engine)?;
        v0_2::Partner::add_to_linker::<_, HasSelf<InvocationState>>(&mut linker, |s| s)
            .map_err(RuntimeError::Engine)?;

        let ticker_stop = Arc::new(AtomicBool::new(false));
        let (stop, ticking) = (ticker_stop.clone(), engine.clone());
        std::thread::Builder::new()
            .name("aiphost-epoch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    ticking.increment_epoch();
                }
            })
            .map_err(|e| RuntimeError::Engine(e.into()))?;
        let cache_dir = cache::engine_dir(&config.cache_dir, &engine);
        let threads = match config.guest_threads {
            0 => std::thread::available_parallelism().map_or(2, usize::from),
            n => n,
        };
        let guests = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("aiphost-guest")
            .enable_all()
            .build()
            .map_err(RuntimeError::Threads)?;
        Ok(Runtime {
            engine,
            linker,
            pool,
            config,
            cache_dir,
            ticker_stop,
            guests: Some(guests),
        })
    }

    /// Load a component from `path` with the manifest's limits (`None`: the defaults).
    pub fn load(
        &self,
        path: &Path,
        memory_mib: Option<u64>,
        invocation_ms: Option<u64>,
    ) -> Result<PartnerCode, RuntimeError> {
        let wasm = std::fs::read(path).map_err(|source| RuntimeError::Read {
            path: path.display().to_string(),
            source,
        })?;
        self.load_bytes(&wasm, memory_mib, invocation_ms)
    }

    /// What outbound HTTP partners may be granted.
    pub fn outbound_policy(&self) -> Arc<OutboundPolicy> {
        self.config.outbound.clone()
    }

    /// The limits a manifest asks for, within the operator's.
    fn limits(
        &self,
        memory_mib: Option<u64>,
        invocation_ms: Option<u64>,
    ) -> Result<(u64, u64), RuntimeError> {
        let memory_mib = memory_mib.unwrap_or(self.config.default_memory_mib);
        if memory_mib > self.config.max_memory_mib {
            return Err(RuntimeError::OverLimit {
                field: "limits.memory-mib",
                asked: memory_mib,
                limit: self.config.max_memory_mib,
            });
        }
        let invocation_ms = invocation_ms.unwrap_or(self.config.default_invocation_ms);
        if invocation_ms > self.config.max_invocation_ms {
            return Err(RuntimeError::OverLimit {
                field: "limits.invocation-ms",
                asked: invocation_ms,
                limit: self.config.max_invocation_ms,
            });
        }
        Ok((memory_mib, invocation_ms))
    }

    /// What can be checked of a component without compiling it (quick): its limits within the
    /// operator's and its footprint within the pool's cap. [`Runtime::load_prechecked`] compiles
    /// it later without reading it again.
    pub fn precheck(
        &self,
        wasm: &[u8],
        memory_mib: Option<u64>,
        invocation_ms: Option<u64>,
    ) -> Result<Prechecked, RuntimeError> {
        let (memory_mib, invocation_ms) = self.limits(memory_mib, invocation_ms)?;
        Ok(Prechecked {
            footprint: Self::footprint_of(wasm)?,
            memory_mib,
            invocation_ms,
        })
    }

    /// Load a component from its bytes.
    pub fn load_bytes(
        &self,
        wasm: &[u8],
        memory_mib: Option<u64>,
        invocation_ms: Option<u64>,
    ) -> Result<PartnerCode, RuntimeError> {
        let checked = self.precheck(wasm, memory_mib, invocation_ms)?;
        self.load_prechecked(wasm, &checked)
    }

    /// Compile (or take from the compiled cache) and link a component [`Runtime::precheck`]
    /// checked.
    pub fn load_prechecked(
        &self,
        wasm: &[u8],
        checked: &Prechecked,
    ) -> Result<PartnerCode, RuntimeError> {
        let component = cache::load_or_compile(&self.engine, &self.cache_dir, wasm)
            .map_err(RuntimeError::Invalid)?;
        self.link(
            &component,
            checked.footprint,
            checked.memory_mib,
            checked.invocation_ms,
        )
    }

    /// What one instance of the component takes from the pool, counted from its binary without
    /// compiling it; a component over [`FOOTPRINT_CAP`] is refused.
    pub fn footprint_of(wasm: &[u8]) -> Result<Footprint, RuntimeError> {
        if !is_component(wasm) {
            return Err(RuntimeError::Invalid(wasmtime::Error::msg(
                "the file is not a WebAssembly component (a core module or something else)",
            )));
        }
        let footprint = footprint::footprint_of(wasm)
            .map_err(|e| RuntimeError::Invalid(wasmtime::Error::msg(e.to_string())))?;
        match footprint.over(FOOTPRINT_CAP) {
            Some((what, needed, cap)) => Err(RuntimeError::TooBig { what, needed, cap }),
            None => Ok(footprint),
        }
    }

    /// Compile and link a component without caching anything (publishing validates first and
    /// keeps only what it accepts; its imports are checked before, with [`Runtime::imports_of`]).
    pub fn check(
        &self,
        wasm: &[u8],
        memory_mib: Option<u64>,
        invocation_ms: Option<u64>,
    ) -> Result<Checked, RuntimeError> {
        let (memory_mib, invocation_ms) = self.limits(memory_mib, invocation_ms)?;
        let footprint = Self::footprint_of(wasm)?;
        let component = Component::new(&self.engine, wasm).map_err(RuntimeError::Invalid)?;
        let code = self.link(&component, footprint, memory_mib, invocation_ms)?;
        Ok(Checked { component, code })
    }

    /// The names of a component's own imports (`wasi:cli/environment@0.2.6`, ...), read from its
    /// binary without compiling it: a publish the import policy refuses costs no compile
    /// (seconds of CPU and hundreds of MB for a large component).
    pub fn imports_of(wasm: &[u8]) -> Result<Vec<String>, RuntimeError> {
        use wasmparser::{Parser, Payload};
        let invalid = |e: wasmparser::BinaryReaderError| {
            RuntimeError::Invalid(wasmtime::Error::msg(format!(
                "the component cannot be read: {e}"
            )))
        };
        if !is_component(wasm) {
            return Err(RuntimeError::Invalid(wasmtime::Error::msg(
                "the file is not a WebAssembly component (a core module or something else)",
            )));
        }
        let mut names = Vec::new();
        // Nested modules and components come inline, each from its `Version` to its `End`:
        // only the outermost component's imports are the partner's.
        let mut depth = 0usize;
        for payload in Parser::new(0).parse_all(wasm) {
            match payload.map_err(invalid)? {
                Payload::Version { .. } => depth += 1,
                Payload::End(_) => depth = depth.saturating_sub(1),
                Payload::ComponentImportSection(reader) if depth == 1 => {
                    for import in reader {
                        names.push(import.map_err(invalid)?.name.name.to_string());
                    }
                }
                _ => {}
            }
        }
        Ok(names)
    }

    /// Cache the compiled form of a component [`Runtime::check`] accepted.
    pub fn keep(&self, wasm: &[u8], checked: &Checked) -> Result<(), RuntimeError> {
        cache::keep(&self.cache_dir, wasm, &checked.component).map_err(RuntimeError::Engine)
    }

    /// Delete the cached compiled form of the component whose SHA-256 is `sha256` (hex).
    pub fn forget_compiled(&self, sha256: &str) -> std::io::Result<()> {
        cache::forget(&self.cache_dir, sha256)
    }

    fn link(
        &self,
        component: &Component,
        counted: Footprint,
        memory_mib: u64,
        invocation_ms: u64,
    ) -> Result<PartnerCode, RuntimeError> {
        // wasmtime's own count of memories and tables, where it can tell, in case the binary
        // hides some from ours.
        let footprint = match component.resources_required() {
            Some(required) => counted.max(Footprint {
                core_instances: 0,
                memories: required.num_memories,
                tables: required.num_tables,
            }),
            None => counted,
        };
        let exports: Vec<String> = component
            .component_type()
            .exports(&self.engine)
            .map(|(name, _)| name.to_string())
            .collect();
        let contract = Contract::of(exports.iter().map(String::as_str))
            .map_err(|e| RuntimeError::World(wasmtime::Error::msg(e)))?;
        let instance_pre = self
            .linker
            .instantiate_pre(component)
            .map_err(RuntimeError::World)?;
        let pre = match contract {
            Contract::V0_1 => {
                Pre::V0_1(v0_1::PartnerPre::new(instance_pre).map_err(RuntimeError::World)?)
            }
            Contract::V0_2 => {
                Pre::V0_2(v0_2::PartnerPre::new(instance_pre).map_err(RuntimeError::World)?)
            }
        };
        Ok(PartnerCode {
            pre,
            footprint,
            memory_bytes: usize::try_from(memory_mib << 20).unwrap_or(usize::MAX),
            deadline: Duration::from_millis(invocation_ms),
            capabilities: Arc::new(Capabilities::none(self.config.outbound.clone())),
            log: Arc::new(log_sink::TracingSink),
        })
    }

    /// Run one invocation of `code` in a fresh instance (see the module doc for where).
    ///
    /// `holds` (the caller's permits: a partner's turn, a tenant's quota) are kept until the
    /// instance is gone, like the pool slot: a cancelled guest stops at its next yield, and until
    /// then it still holds what it was granted.
    pub async fn invoke(
        &self,
        code: &PartnerCode,
        reporter: Arc<dyn Reporter>,
        store: Store,
        owner: KvOwner<'_>,
        invocation: Invocation,
        holds: Vec<Hold>,
    ) -> InvocationEnd {
        let Some(taken) = self.pool.take(code.footprint).await else {
            return InvocationEnd::Trapped("the runtime is shutting down".into());
        };
        let Some(guests) = &self.guests else {
            return InvocationEnd::Trapped("the runtime is shutting down".into());
        };
        let busy = Arc::new(AtomicBool::new(false));
        let run = run_guest(
            self.engine.clone(),
            code.clone(),
            reporter,
            store,
            (owner.agent.to_string(), owner.task.to_string()),
            invocation,
            busy.clone(),
        );
        let run = async move {
            let end = run.await;
            // The instance is gone: now its share of the pool and the caller's permits may go.
            drop((taken, holds));
            end
        };
        Migrating {
            place: Place::Here(Box::pin(run)),
            busy,
            guests: guests.handle().clone(),
        }
        .await
    }
}

/// One invocation of `code` in a fresh instance (the part that runs on a guest thread).
async fn run_guest(
    engine: Engine,
    code: PartnerCode,
    reporter: Arc<dyn Reporter>,
    store: Store,
    (agent, task): (String, String),
    invocation: Invocation,
    busy: Arc<AtomicBool>,
) -> InvocationEnd {
    let output = MemoryOutputPipe::new(GUEST_OUTPUT_BYTES);
    let wasi = wasmtime_wasi::WasiCtx::builder()
        .stdout(output.clone())
        .stderr(output.clone())
        .build();
    let limits = limits::InstanceLimits::new(code.memory_bytes);
    let state = InvocationState {
        wasi,
        table: ResourceTable::new(),
        limits,
        reporter,
        kv: KvAccess {
            store,
            agent: agent.clone(),
            task,
        },
        http: WasiHttpCtx::new(),
        outbound: OutboundHooks {
            caps: code.capabilities.clone(),
            agent: agent.clone(),
        },
        log: code.log.clone(),
    };
    let mut wstore = wasmtime::Store::new(&engine, state);
    wstore.limiter(|s| &mut s.limits);
    // Yield at every epoch tick, so guests take turns; after BUSY_TICKS, move to the guest
    // threads (at the next yield).
    wstore.set_epoch_deadline(1);
    let mut ticks = 0u32;
    wstore.epoch_deadline_callback(move |_| {
        ticks = ticks.saturating_add(1);
        if ticks >= BUSY_TICKS {
            busy.store(true, Ordering::Relaxed);
        }
        Ok(wasmtime::UpdateDeadline::Yield(1))
    });
    let run = async {
        match &code.pre {
            Pre::V0_1(pre) => {
                let partner = pre.instantiate_async(&mut wstore).await?;
                partner
                    .aiphost_partner_handler()
                    .call_handle(&mut wstore, &v0_1::to_guest(&invocation))
                    .await
            }
            Pre::V0_2(pre) => {
                let partner = pre.instantiate_async(&mut wstore).await?;
                partner
                    .aiphost_partner_handler()
                    .call_handle(&mut wstore, &v0_2::to_guest(&invocation))
                    .await
            }
        }
    };
    let end = match tokio::time::timeout(code.deadline, run).await {
        Err(_) => InvocationEnd::DeadlineExceeded(code.deadline),
        Ok(Ok(Ok(()))) => InvocationEnd::Returned,
        Ok(Ok(Err(message))) => InvocationEnd::PartnerError(message),
        Ok(Err(trap)) => InvocationEnd::Trapped(describe_trap(&trap, code.memory_bytes, &output)),
    };
    let printed = output.contents();
    if !printed.is_empty() {
        tracing::debug!(target: "partner", agent, task = %invocation.task_id, output = %String::from_utf8_lossy(&printed), "partner output");
    }
    end
}

fn is_component(wasm: &[u8]) -> bool {
    // A component's preamble: magic, then version 0x0d with layer 1.
    wasm.len() >= 8 && wasm[0..4] == *b"\0asm" && wasm[4..8] == [0x0d, 0x00, 0x01, 0x00]
}

/// A readable reason for a trap, naming the limit that was hit where there is one.
fn describe_trap(err: &wasmtime::Error, memory_bytes: usize, output: &MemoryOutputPipe) -> String {
    let printed = String::from_utf8_lossy(&output.contents()).into_owned();
    let panic_line = printed
        .lines()
        .skip_while(|l| !l.contains("panicked"))
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    let chain = format!("{err:#}");
    if let Some(trap) = err.downcast_ref::<wasmtime::Trap>() {
        match trap {
            wasmtime::Trap::StackOverflow => {
                return "the partner exhausted its stack (unbounded recursion?)".to_string();
            }
            wasmtime::Trap::UnreachableCodeReached if !panic_line.is_empty() => {
                return format!("the partner panicked: {}", panic_line.trim());
            }
            // Rust keeps its stack in linear memory below the data; running off its bottom is
            // an out-of-bounds access rather than a wasm stack overflow.
            wasmtime::Trap::MemoryOutOfBounds => {
                return "the partner accessed memory out of bounds (its stack overflowed, or it has a memory bug)"
                    .to_string();
            }
            other => return format!("the partner trapped: {other}"),
        }
    }
    if chain.contains("growing memory")
        || chain.contains("memory allocation")
        || printed.contains("memory allocation")
    {
        return format!(
            "the partner exceeded its memory limit of {} MiB",
            memory_bytes >> 20
        );
    }
    if !panic_line.is_empty() {
        return format!("the partner panicked: {}", panic_line.trim());
    }
    format!("the partner trapped: {chain}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract is read from the handler export: exactly one version's.
    #[test]
    fn the_contract_is_the_exported_handlers_version() {
        let of = |names: &[&str]| Contract::of(names.iter().copied());
        assert_eq!(of(&["aiphost:partner/handler@0.1.0"]), Ok(Contract::V0_1));
        assert_eq!(
            of(&["wasi:cli/run@0.2.6", "aiphost:partner/handler@0.2.0"]),
            Ok(Contract::V0_2)
        );
        let neither = of(&["aiphost:partner/handler@0.3.0"]).unwrap_err();
        assert!(
            neither.contains("exports no aiphost:partner handler"),
            "{neither}"
        );
        let both = of(&[
            "aiphost:partner/handler@0.1.0",
            "aiphost:partner/handler@0.2.0",
        ])
        .unwrap_err();
        assert!(both.contains("more than one version"), "{both}");
    }

    /// A component that exports no handler is refused when it is linked, with the reason.
    #[test]
    fn a_component_without_a_handler_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("temp dir");
        let runtime = Runtime::new(RuntimeConfig::with_data_dir(dir.path())).expect("runtime");
        let wasm = wat::parse_str("(component)").expect("a component");
        let err = runtime.check(&wasm, None, None).err().expect("refused");
        let text = err.to_string();
        assert!(
            text.contains("aiphost:partner world (0.1.0 or 0.2.0)")
                && text.contains("exports no aiphost:partner handler"),
            "{text}"
        );
    }

    /// The imports read from the binary are the ones wasmtime finds compiling it: the outer
    /// component's, not those of the modules and components nested in it.
    #[test]
    fn imports_are_read_without_compiling_and_match_the_compiled_ones() {
        let wasm = wat::parse_str(
            r#"(component
                (import "wasi:cli/environment@0.2.6" (instance))
                (import "wasi:sockets/tcp@0.2.6" (instance))
                (core module (import "inner" "f" (func)))
                (component (import "nested:only/inner" (instance)))
            )"#,
        )
        .expect("a component");
        let read = Runtime::imports_of(&wasm).expect("readable");
        assert_eq!(
            read,
            ["wasi:cli/environment@0.2.6", "wasi:sockets/tcp@0.2.6"]
        );
        let engine = Engine::default();
        let compiled: Vec<String> = Component::new(&engine, &wasm)
            .expect("compiles")
            .component_type()
            .imports(&engine)
            .map(|(name, _)| name.to_string())
            .collect();
        assert_eq!(read, compiled);
        assert!(Runtime::imports_of(b"\0asm\x0d\0\x01\0garbage").is_err());
        let core_module = Runtime::imports_of(b"\0asm\x01\0\0\0").unwrap_err();
        assert!(
            core_module
                .to_string()
                .contains("not a WebAssembly component"),
            "{core_module}"
        );
    }
}
