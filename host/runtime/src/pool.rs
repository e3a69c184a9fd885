//! The share of wasmtime's pooling allocator each invocation takes.
//!
//! The pool is sized once, when the engine is built: so many component instances (one per
//! slot, `max_concurrent`), and so many core instances, memories and tables in all. Components
//! differ widely in what one instance takes (a Rust partner 3 core instances, a Python one 14),
//! so a slot alone does not say whether the next instantiation fits: with 8 core instances per
//! slot, 16 connections to a Python partner made 164 of 5 s of starts fail with "maximum
//! concurrent limit of 8 for core instances reached". Instead each invocation takes a slot *and*
//! its component's [`Footprint`] from counters the size of the pool, waiting until all are free;
//! the pool can then never run out under an instantiation.

use crate::footprint::Footprint;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::PoolingAllocationConfig;

/// What the pool holds per slot: room for the components the SDKs build at full concurrency
/// (componentize-py: 14 core instances; QuickJS and StarlingMonkey: 2 memories).
const PER_SLOT: Footprint = Footprint {
    core_instances: 16,
    memories: 4,
    tables: 16,
};

/// The most one instance of a component may take; a component above it is refused when it is
/// loaded or published, before it is compiled.
pub const CAP: Footprint = Footprint {
    core_instances: 64,
    memories: 16,
    tables: 64,
};

/// The pool's counters.
pub(crate) struct Pool {
    slots: Arc<Semaphore>,
    core_instances: Arc<Semaphore>,
    memories: Arc<Semaphore>,
    tables: Arc<Semaphore>,
}

/// What one invocation holds until its instance is gone.
pub(crate) struct Taken {
    _permits: [OwnedSemaphorePermit; 4],
}

impl Pool {
    /// A pool of `slots` component instances, and wasmtime's configuration for it.
    pub fn new(slots: u32) -> (Pool, PoolingAllocationConfig) {
        // At least one CAP in all, so any component within the cap runs, if one at a time.
        let total = |per_slot: u32, cap: u32| slots.saturating_mul(per_slot).max(cap);
        let totals = Footprint {
            core_instances: total(PER_SLOT.core_instances, CAP.core_instances),
            memories: total(PER_SLOT.memories, CAP.memories),
            tables: total(PER_SLOT.tables, CAP.tables),
        };
        let mut config = PoolingAllocationConfig::default();
        config
            .total_component_instances(slots)
            .total_stacks(slots)
            .total_core_instances(totals.core_instances)
            .total_memories(totals.memories)
            .total_tables(totals.tables)
            .max_core_instances_per_component(CAP.core_instances)
            .max_memories_per_component(CAP.memories)
            .max_tables_per_component(CAP.tables);
        let counter = |n: u32| Arc::new(Semaphore::new(n as usize));
        let pool = Pool {
            slots: counter(slots),
            core_instances: counter(totals.core_instances),
            memories: counter(totals.memories),
            tables: counter(totals.tables),
        };
        (pool, config)
    }

    /// Wait until a slot and `need` are free and take them; `None` once the pool is closed.
    ///
    /// Every invocation takes the counters in the same order, so two waiting invocations never
    /// hold what the other waits for.
    pub async fn take(&self, need: Footprint) -> Option<Taken> {
        let slot = self.slots.clone().acquire_owned().await.ok()?;
        let core_instances = self
            .core_instances
            .clone()
            .acquire_many_owned(need.core_instances)
            .await
            .ok()?;
        let memories = self
            .memories
            .clone()
            .acquire_many_owned(need.memories)
            .await
            .ok()?;
        let tables = self
            .tables
            .clone()
            .acquire_many_owned(need.tables)
            .await
            .ok()?;
        Some(Taken {
            _permits: [slot, core_instances, memories, tables],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use wasmtime::component::{Component, Linker};
    use wasmtime::{Config, Engine, InstanceAllocationStrategy, Store};

    /// A component of `n` core instances, as wide as a componentize-py partner is.
    fn wide(n: usize) -> Vec<u8> {
        let instances = "(core instance (instantiate $m))\n".repeat(n);
        wat::parse_str(format!(
            "(component (core module $m (memory 1) (table 1 funcref)) {instances})"
        ))
        .expect("a component")
    }

    /// With one slot, the pool still takes a component of 14 core instances (at 8 per slot, the
    /// instantiation failed: "maximum concurrent limit of 8 for core instances reached").
    #[test]
    fn one_slot_runs_a_component_wider_than_eight_core_instances() {
        let (_, pooling) = Pool::new(1);
        let mut config = Config::new();
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
        let engine = Engine::new(&config).expect("an engine");
        let wasm = wide(14);
        let need = crate::footprint::footprint_of(&wasm).expect("countable");
        assert_eq!(
            need,
            Footprint {
                core_instances: 14,
                memories: 14,
                tables: 14
            }
        );
        let component = Component::new(&engine, &wasm).expect("compiles");
        let mut store = Store::new(&engine, ());
        Linker::new(&engine)
            .instantiate(&mut store, &component)
            .expect("fits the pool");
    }

    /// The count from the binary is never below wasmtime's own: an engine that allows each
    /// component exactly what we counted instantiates it, adapters between nested components
    /// included.
    #[test]
    fn the_count_covers_what_wasmtime_instantiates() {
        let composed = r#"(component
            (component $a
                (core module $m (memory (export "memory") 1) (func (export "f")))
                (core instance $i (instantiate $m))
                (func (export "f") (canon lift (core func $i "f")))
            )
            (component $b
                (import "f" (func $f))
                (core func $lf (canon lower (func $f)))
                (core module $n (import "x" "f" (func)) (table 1 funcref))
                (core instance (instantiate $n (with "x" (instance (export "f" (func $lf))))))
            )
            (instance $ia (instantiate $a))
            (instance $ib (instantiate $b (with "f" (func $ia "f"))))
        )"#;
        for wasm in [wat::parse_str(composed).expect("a component"), wide(14)] {
            let need = crate::footprint::footprint_of(&wasm).expect("countable");
            let mut pooling = PoolingAllocationConfig::default();
            pooling
                .max_core_instances_per_component(need.core_instances)
                .max_memories_per_component(need.memories)
                .max_tables_per_component(need.tables);
            let mut config = Config::new();
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
            let engine = Engine::new(&config).expect("an engine");
            let component = Component::new(&engine, &wasm).expect("compiles");
            let mut store = Store::new(&engine, ());
            Linker::new(&engine)
                .instantiate(&mut store, &component)
                .unwrap_or_else(|e| panic!("{need:?} is below wasmtime's count: {e:#}"));
        }
    }

    /// A second invocation waits until the first has given back what it took, and then runs.
    #[tokio::test]
    async fn an_invocation_waits_for_what_it_needs() {
        let (pool, _) = Pool::new(4);
        let need = Footprint {
            core_instances: 40,
            memories: 1,
            tables: 1,
        };
        let first = pool.take(need).await.expect("free");
        let waiting = tokio::time::timeout(Duration::from_millis(50), pool.take(need)).await;
        assert!(waiting.is_err(), "64 core instances hold only one of 40");
        // A small one fits beside it.
        let small = Footprint {
            core_instances: 3,
            memories: 1,
            tables: 1,
        };
        assert!(pool.take(small).await.is_some());
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(5), pool.take(need)).await;
        assert!(matches!(second, Ok(Some(_))));
    }
}
