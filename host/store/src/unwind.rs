//! sled's panics, caught and kept quiet: sled 0.34 panics on some damage it meets while it
//! recovers (a `db` halved, bytes flipped) instead of returning an error. The store turns such a
//! panic into [`crate::StoreError::Damaged`], one error naming the file, and the person starting
//! the host should see that error alone, not a panic message and a backtrace before it.
//!
//! The panic hook is the process's, so it is wrapped once: while a thread runs [`quietly`], the
//! hook stays silent for that thread's panics; every other panic is reported as before.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

thread_local! {
    /// This thread runs sled's code under [`quietly`].
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Run `f`; a panic in it comes back as `Err` with its message, unreported.
pub(crate) fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static WRAP_HOOK: Once = Once::new();
    WRAP_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    // sled's state is dropped with the unwinding: nothing half-changed is used after a panic.
    let outcome = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    outcome.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_panic_comes_back_as_its_message() {
        assert_eq!(super::quietly(|| 7), Ok(7));
        let caught = super::quietly(|| -> u8 { panic!("sled says {}", 42) });
        assert_eq!(caught, Err("sled says 42".to_string()));
    }
}
