//! What one instance of a component takes from the pool, counted from its binary before it is
//! compiled.
//!
//! A Rust partner is one core module with the WASI adapter: 3 core instances, 1 memory. A
//! componentize-py partner links CPython and its C library as a dozen modules (14 core
//! instances); QuickJS and StarlingMonkey ones carry two memories. The pool is shared by every
//! partner, so each invocation takes what its instance needs (see `pool.rs`), and a component
//! that needs more than one instance may have is refused before the costly compile.

use wasmparser::{
    ComponentAlias, ComponentExternalKind, ComponentInstance, ComponentOuterAliasKind,
    ComponentTypeRef, Encoding, Instance, Parser, Payload,
};

/// The pool resources one instance of a component takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Core module instances.
    pub core_instances: u32,
    /// Linear memories the instantiated modules define (imported ones are counted where they are
    /// defined).
    pub memories: u32,
    /// Tables the instantiated modules define.
    pub tables: u32,
}

impl Footprint {
    fn add(&mut self, other: Footprint) {
        self.core_instances = self.core_instances.saturating_add(other.core_instances);
        self.memories = self.memories.saturating_add(other.memories);
        self.tables = self.tables.saturating_add(other.tables);
    }

    /// The larger of each count.
    pub fn max(self, other: Footprint) -> Footprint {
        Footprint {
            core_instances: self.core_instances.max(other.core_instances),
            memories: self.memories.max(other.memories),
            tables: self.tables.max(other.tables),
        }
    }

    /// The first count above `cap`'s, as (what, needed, cap).
    pub fn over(self, cap: Footprint) -> Option<(&'static str, u32, u32)> {
        [
            ("core instances", self.core_instances, cap.core_instances),
            ("linear memories", self.memories, cap.memories),
            ("tables", self.tables, cap.tables),
        ]
        .into_iter()
        .find(|(_, needed, cap)| needed > cap)
    }
}

/// Why a component's footprint cannot be counted.
#[derive(Debug, thiserror::Error)]
pub enum Uncountable {
    /// The binary does not parse.
    #[error("the component cannot be read: {0}")]
    Malformed(#[from] wasmparser::BinaryReaderError),
    /// It instantiates a module or component it does not contain (imported, or exported by an
    /// instance), whose size only the importer knows.
    #[error(
        "the component instantiates a {0} it imports; aiphost runs only self-contained components"
    )]
    Imported(&'static str),
}

/// What one definition in a component's module or component index space instantiates to.
type Known = Option<Footprint>;

/// A component being read: its index spaces and what its own instantiations add up to.
#[derive(Default)]
struct ComponentScope {
    modules: Vec<Known>,
    components: Vec<Known>,
    total: Footprint,
}

enum Scope {
    Module(Footprint),
    Component(ComponentScope),
}

/// Count what one instance of the component `wasm` takes from the pool.
///
/// Each core instantiation counts one core instance plus the memories and tables its module
/// defines; a nested component counts what its own instantiations count, each time it is
/// instantiated. wasmtime adds a core instance of its own between two nested component instances
/// that call each other (fused adapters, not in the binary), so each nested component instance
/// counts one more core instance.
pub fn footprint_of(wasm: &[u8]) -> Result<Footprint, Uncountable> {
    let mut scopes: Vec<Scope> = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::Version { encoding, .. } => scopes.push(match encoding {
                Encoding::Module => Scope::Module(Footprint {
                    core_instances: 1,
                    ..Footprint::default()
                }),
                Encoding::Component => Scope::Component(ComponentScope::default()),
            }),
            Payload::MemorySection(reader) => {
                if let Some(Scope::Module(module)) = scopes.last_mut() {
                    module.memories = module.memories.saturating_add(reader.count());
                }
            }
            Payload::TableSection(reader) => {
                if let Some(Scope::Module(module)) = scopes.last_mut() {
                    module.tables = module.tables.saturating_add(reader.count());
                }
            }
            Payload::End(_) => {
                let done = match scopes.pop() {
                    Some(Scope::Module(module)) => Definition::Module(module),
                    Some(Scope::Component(component)) => Definition::Component(component.total),
                    None => continue,
                };
                match (scopes.last_mut(), done) {
                    (Some(Scope::Component(parent)), Definition::Module(m)) => {
                        parent.modules.push(Some(m))
                    }
                    (Some(Scope::Component(parent)), Definition::Component(c)) => {
                        parent.components.push(Some(c))
                    }
                    (None, Definition::Component(total)) => return Ok(total),
                    // A core module on its own, or nested in a module (not valid wasm): no
                    // component to count.
                    _ => return Ok(Footprint::default()),
                }
            }
            other => component_payload(other, &mut scopes)?,
        }
    }
    Ok(Footprint::default())
}

enum Definition {
    Module(Footprint),
    Component(Footprint),
}

/// One section of the component at the top of `scopes`.
fn component_payload(payload: Payload<'_>, scopes: &mut [Scope]) -> Result<(), Uncountable> {
    let Some((Scope::Component(scope), outer)) = scopes.split_last_mut() else {
        return Ok(());
    };
    match payload {
        Payload::InstanceSection(reader) => {
            for instance in reader {
                if let Instance::Instantiate { module_index, .. } = instance? {
                    let module = known(&scope.modules, module_index, "core module")?;
                    scope.total.add(module);
                }
            }
        }
        Payload::ComponentInstanceSection(reader) => {
            for instance in reader {
                if let ComponentInstance::Instantiate {
                    component_index, ..
                } = instance?
                {
                    let mut component = known(&scope.components, component_index, "component")?;
                    component.core_instances = component.core_instances.saturating_add(1);
                    scope.total.add(component);
                }
            }
        }
        Payload::ComponentAliasSection(reader) => {
            for alias in reader {
                match alias? {
                    ComponentAlias::Outer { kind, count, index } => {
                        let from = outer
                            .iter()
                            .rev()
                            .filter_map(|s| match s {
                                Scope::Component(c) => Some(c),
                                Scope::Module(_) => None,
                            })
                            .nth((count as usize).saturating_sub(1));
                        let pick = |space: &[Known]| space.get(index as usize).copied().flatten();
                        match kind {
                            ComponentOuterAliasKind::CoreModule => {
                                let got = from.and_then(|c| pick(&c.modules));
                                scope.modules.push(got)
                            }
                            ComponentOuterAliasKind::Component => {
                                let got = from.and_then(|c| pick(&c.components));
                                scope.components.push(got)
                            }
                            ComponentOuterAliasKind::CoreType | ComponentOuterAliasKind::Type => {}
                        }
                    }
                    ComponentAlias::InstanceExport { kind, .. } => push_unknown(scope, kind),
                    ComponentAlias::CoreInstanceExport { .. } => {}
                }
            }
        }
        Payload::ComponentImportSection(reader) => {
            for import in reader {
                match import?.ty {
                    ComponentTypeRef::Module(_) => scope.modules.push(None),
                    ComponentTypeRef::Component(_) => scope.components.push(None),
                    _ => {}
                }
            }
        }
        Payload::ComponentExportSection(reader) => {
            // An export is a new index in its space, for the same definition.
            for export in reader {
                let export = export?;
                match export.kind {
                    ComponentExternalKind::Module => {
                        let same = scope.modules.get(export.index as usize).copied().flatten();
                        scope.modules.push(same)
                    }
                    ComponentExternalKind::Component => {
                        let same = scope
                            .components
                            .get(export.index as usize)
                            .copied()
                            .flatten();
                        scope.components.push(same)
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn push_unknown(scope: &mut ComponentScope, kind: ComponentExternalKind) {
    match kind {
        ComponentExternalKind::Module => scope.modules.push(None),
        ComponentExternalKind::Component => scope.components.push(None),
        _ => {}
    }
}

fn known(space: &[Known], index: u32, what: &'static str) -> Result<Footprint, Uncountable> {
    space
        .get(index as usize)
        .copied()
        .flatten()
        .ok_or(Uncountable::Imported(what))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(text: &str) -> Result<Footprint, Uncountable> {
        footprint_of(&wat::parse_str(text).expect("a component"))
    }

    /// Every core instantiation counts, with what its module defines; nested components count
    /// each time they are instantiated, plus wasmtime's adapter between them.
    #[test]
    fn instantiations_are_counted_with_what_their_modules_define() {
        let counted = count(
            r#"(component
                (core module $big (memory 1) (table 1 funcref) (table 1 externref))
                (core module $small (memory (import "m" "memory") 1))
                (core instance $a (instantiate $big))
                (core instance $b (instantiate $big))
                (core instance $c (instantiate $small (with "m" (instance (export "memory" (memory $a "memory"))))))
                (core instance (export "x" (memory $a "memory")))
                (component $inner
                    (core module $m (memory 1))
                    (core instance (instantiate $m))
                )
                (instance (instantiate $inner))
                (instance (instantiate $inner))
                (component $never (core module $m) (core instance (instantiate $m)))
            )"#,
        )
        .expect("countable");
        assert_eq!(
            counted,
            Footprint {
                // $a, $b, $c, and twice $inner's one plus an adapter.
                core_instances: 3 + 2 * 2,
                // Two of $big's, and one per $inner; $small only imports one.
                memories: 2 + 2,
                tables: 4,
            }
        );
        assert_eq!(counted.over(crate::pool::CAP), None);
    }

    #[test]
    fn a_module_from_outside_cannot_be_counted() {
        let imported = count(
            r#"(component
                (import "m" (core module $m))
                (core instance (instantiate $m))
            )"#,
        )
        .unwrap_err();
        assert!(
            matches!(imported, Uncountable::Imported("core module")),
            "{imported}"
        );
        assert!(
            imported.to_string().contains("self-contained"),
            "{imported}"
        );
    }

    /// A module aliased from an outer component is the outer one's.
    #[test]
    fn outer_aliases_count_the_outer_definition() {
        let counted = count(
            r#"(component
                (core module $m (memory 1) (table 1 funcref))
                (component $inner
                    (alias outer 1 $m (core module $n))
                    (core instance (instantiate $n))
                    (core instance (instantiate $n))
                )
                (instance (instantiate $inner))
            )"#,
        )
        .expect("countable");
        assert_eq!(
            counted,
            Footprint {
                core_instances: 3,
                memories: 2,
                tables: 2
            }
        );
    }

    #[test]
    fn over_names_the_first_count_above_the_cap() {
        let big = Footprint {
            core_instances: 65,
            memories: 1,
            tables: 1,
        };
        assert_eq!(big.over(crate::pool::CAP), Some(("core instances", 65, 64)));
    }
}
