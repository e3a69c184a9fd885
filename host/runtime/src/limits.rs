//! The memory cap of one instance: its manifest's `memory-mib`, for all its linear memories
//! together.
//!
//! wasmtime's `StoreLimits` caps each memory on its own, so a component with two memories (a
//! QuickJS or StarlingMonkey partner) could hold twice what its manifest says. This limiter
//! counts every memory's growth, from its creation on, against one allowance.

use wasmtime::ResourceLimiter;

/// One instance's allowance of linear memory.
pub(crate) struct InstanceLimits {
    /// The cap, in bytes.
    cap: usize,
    /// Bytes all memories of the instance have taken so far.
    used: usize,
}

impl InstanceLimits {
    pub fn new(cap: usize) -> Self {
        InstanceLimits { cap, used: 0 }
    }
}

impl ResourceLimiter for InstanceLimits {
    /// Called when a memory is created (from 0 to its initial size) and whenever it grows.
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let more = desired.saturating_sub(current);
        match self.used.checked_add(more) {
            Some(used) if used <= self.cap => {
                self.used = used;
                Ok(true)
            }
            // A trap, not a failed `memory.grow`: a guest allocator that is refused memory
            // usually aborts anyway, and the trap names the limit (see `describe_trap`).
            _ => Err(wasmtime::Error::msg(format!(
                "growing memory to {} bytes in all, over the partner's limit of {} bytes",
                self.used.saturating_add(more),
                self.cap
            ))),
        }
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Tables are bounded by the pool's per-table element limit.
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::component::{Component, Linker};
    use wasmtime::{Engine, Store};

    /// Two memories of 3 MiB each fit a 6 MiB cap together, and not a 5 MiB one, although
    /// each alone is below it.
    #[test]
    fn all_memories_count_against_one_cap() {
        let engine = Engine::default();
        let pages = 48; // 3 MiB
        let wasm = wat::parse_str(format!(
            "(component
                (core module $a (memory {pages}))
                (core module $b (memory {pages}))
                (core instance (instantiate $a))
                (core instance (instantiate $b)))"
        ))
        .expect("a component");
        let component = Component::new(&engine, &wasm).expect("compiles");
        let run = |cap_mib: usize| {
            let mut store = Store::new(&engine, InstanceLimits::new(cap_mib << 20));
            store.limiter(|l| l);
            Linker::new(&engine).instantiate(&mut store, &component)
        };
        assert!(run(6).is_ok());
        let refused = run(5).expect_err("over the cap");
        assert!(
            format!("{refused:#}").contains("growing memory"),
            "{refused:#}"
        );
    }
}
