//! Where a component's linear memories put their stack and data, read from its binary.
//!
//! An invocation's instance dirties its stack, its data and the first pages of its heap; the
//! pool keeps the first `RESIDENT_BYTES` of each memory resident between invocations and resets
//! them in place (`lib.rs`) instead of handing them back to the kernel and faulting them in
//! again. That only pays when what an invocation dirties lies in that range, so the SDKs build
//! partners with a small stack (Rust: 64 KiB, where rustc's default is 1 MiB placed below the
//! data, so that even an echo dirtied the top of a 1 MiB stack and the data above it).
//! [`layouts_of`] reads each memory-defining module's layout, for the tests that hold the SDKs'
//! builds to that.

use wasmparser::{ConstExpr, DataKind, Operator, Parser, Payload, TypeRef, ValType};

/// The layout of one core module's memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryLayout {
    /// The memory's initial size in bytes.
    pub initial_bytes: u64,
    /// The initial value of the module's stack pointer (its first global, a mutable `i32` set
    /// by a constant), when it has one: with the stack first in memory (as rustc and wasi-sdk
    /// place it), the stack's size.
    pub stack_top: Option<u32>,
    /// The end of the highest active data segment placed at a constant offset.
    pub data_end: u32,
}

/// The layout of every core module in `wasm` that defines its own memory, in binary order.
pub fn layouts_of(wasm: &[u8]) -> Result<Vec<MemoryLayout>, wasmparser::BinaryReaderError> {
    let mut layouts = Vec::new();
    // One per module being read (modules nest inside components, not inside each other).
    let mut current: Option<(bool, MemoryLayout)> = None;
    let mut imported_globals = 0u32;
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::Version {
                encoding: wasmparser::Encoding::Module,
                ..
            } => {
                current = Some((false, MemoryLayout::default()));
                imported_globals = 0;
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    if matches!(import?.ty, TypeRef::Global(_)) {
                        imported_globals += 1;
                    }
                }
            }
            Payload::MemorySection(reader) => {
                if let Some((defines, layout)) = current.as_mut()
                    && let Some(memory) = reader.into_iter().next()
                {
                    *defines = true;
                    layout.initial_bytes = memory?.initial.saturating_mul(64 * 1024);
                }
            }
            Payload::GlobalSection(reader) => {
                // Only a module whose first global is its own can say where its stack starts.
                if let Some((_, layout)) = current.as_mut()
                    && imported_globals == 0
                    && let Some(global) = reader.into_iter().next()
                {
                    let global = global?;
                    if global.ty.mutable && global.ty.content_type == ValType::I32 {
                        layout.stack_top = const_i32(&global.init_expr)?.map(|v| v as u32);
                    }
                }
            }
            Payload::DataSection(reader) => {
                if let Some((_, layout)) = current.as_mut() {
                    for data in reader {
                        let data = data?;
                        if let DataKind::Active {
                            memory_index: 0,
                            offset_expr,
                        } = data.kind
                            && let Some(offset) = const_i32(&offset_expr)?
                        {
                            let end = (offset as u32).saturating_add(data.data.len() as u32);
                            layout.data_end = layout.data_end.max(end);
                        }
                    }
                }
            }
            Payload::End(_) => {
                if let Some((defines, layout)) = current.take()
                    && defines
                {
                    layouts.push(layout);
                }
            }
            _ => {}
        }
    }
    Ok(layouts)
}

/// The value of a constant expression that is one `i32.const`.
fn const_i32(expr: &ConstExpr<'_>) -> Result<Option<i32>, wasmparser::BinaryReaderError> {
    let mut ops = expr.get_operators_reader();
    let value = match ops.read()? {
        Operator::I32Const { value } => value,
        _ => return Ok(None),
    };
    Ok(matches!(ops.read()?, Operator::End).then_some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_with_its_stack_first_is_read() {
        let wasm = wat::parse_str(
            r#"(module
                (memory 2)
                (global $sp (mut i32) (i32.const 65536))
                (data (i32.const 65536) "hello")
                (data (i32.const 70000) "world!"))"#,
        )
        .expect("a module");
        assert_eq!(
            layouts_of(&wasm).expect("readable"),
            vec![MemoryLayout {
                initial_bytes: 2 * 65536,
                stack_top: Some(65536),
                data_end: 70006,
            }]
        );
    }

    #[test]
    fn modules_without_a_memory_or_a_stack_pointer_say_so() {
        let wasm = wat::parse_str(
            r#"(component
                (core module (func))
                (core module (import "a" "g" (global (mut i32))) (memory 1) (global (mut i32) (i32.const 5))))"#,
        )
        .expect("a component");
        assert_eq!(
            layouts_of(&wasm).expect("readable"),
            vec![MemoryLayout {
                initial_bytes: 65536,
                stack_top: None,
                data_end: 0,
            }]
        );
    }
}
