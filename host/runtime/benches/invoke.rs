//! Criterion: one invocation of a trivial partner — a fresh instance from the `InstancePre`, the
//! `start` call, and the partner's reports (accepted, working, a product chunk,
//! awaiting-completion) to a reporter that takes them at once. This is the per-command cost the
//! runtime adds before any storage or HTTP.
//!
//! ```sh
//! bash scripts/build-plugins.sh && cargo bench -p aiphost-runtime --bench invoke
//! ```

use aiphost_model::activity::{Activity, Failure, InputRequest, TextDelta};
use aiphost_model::{DataItem, ProductChunk, TaskState};
use aiphost_runtime::{
    Invocation, InvocationEnd, KvOwner, PartnerEvent, ReportError, Reporter, Runtime, RuntimeConfig,
};
use aiphost_store::Store;
use criterion::{Criterion, criterion_group, criterion_main};
use futures::future::BoxFuture;
use std::path::PathBuf;
use std::sync::Arc;

/// Takes every report and forgets it.
struct Accepting;

impl Reporter for Accepting {
    fn set_status(
        &self,
        _state: TaskState,
        _items: Vec<DataItem>,
    ) -> BoxFuture<'_, Result<(), ReportError>> {
        Box::pin(async { Ok(()) })
    }

    fn emit_chunk(&self, _chunk: ProductChunk) -> BoxFuture<'_, Result<(), ReportError>> {
        Box::pin(async { Ok(()) })
    }

    fn current_state(&self) -> BoxFuture<'_, Option<TaskState>> {
        Box::pin(async { Some(TaskState::Working) })
    }

    fn stream_text(&self, _delta: TextDelta) -> BoxFuture<'_, Result<(), ReportError>> {
        Box::pin(async { Ok(()) })
    }

    fn activity(&self, _activity: Activity) -> BoxFuture<'_, Result<(), ReportError>> {
        Box::pin(async { Ok(()) })
    }

    fn ask(
        &self,
        _request: InputRequest,
        _items: Vec<DataItem>,
    ) -> BoxFuture<'_, Result<(), ReportError>> {
        Box::pin(async { Ok(()) })
    }

    fn fail(&self, _failure: Failure) -> BoxFuture<'_, Result<(), ReportError>> {
        Box::pin(async { Ok(()) })
    }

    fn reply(&self, _items: Vec<DataItem>) -> BoxFuture<'_, Result<(), ReportError>> {
        Box::pin(async { Ok(()) })
    }
}

fn echo_component() -> PathBuf {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../plugins/dist/echo/partner.wasm");
    assert!(
        path.is_file(),
        "{} is missing: run scripts/build-plugins.sh first",
        path.display()
    );
    path
}

fn invoke(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = RuntimeConfig::with_data_dir(dir.path());
    config.max_concurrent = 4;
    let runtime = Runtime::new(config).expect("runtime");
    let code = runtime
        .load(&echo_component(), None, None)
        .expect("the echo partner loads");
    let store = rt
        .block_on(async { Store::open(&dir.path().join("store")) })
        .expect("store");
    let reporter: Arc<dyn Reporter> = Arc::new(Accepting);
    let invocation = Invocation {
        event: PartnerEvent::Start,
        task_id: "bench".into(),
        session_id: None,
        leader_id: None,
        state: None,
        data_items: vec![DataItem::text("hello")],
        max_products_bytes: None,
        products_bytes: 0,
        command_params: Default::default(),
    };
    let owner = KvOwner {
        agent: "echo",
        task: "bench",
    };
    c.bench_function("instantiate + invoke echo (start)", |b| {
        b.iter(|| {
            let end = rt.block_on(runtime.invoke(
                &code,
                reporter.clone(),
                store.clone(),
                owner,
                invocation.clone(),
                Vec::new(),
            ));
            assert_eq!(end, InvocationEnd::Returned);
        })
    });
}

criterion_group!(benches, invoke);
criterion_main!(benches);
