//! Loading many partners at start-up on every core: a partner not in the compiled cache takes
//! seconds of Cranelift (10–17 s of CPU for a Python one), and a host with a few of them would
//! otherwise start one after another.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `work` applied to each of `items` on up to one thread per CPU; the results in `items`' order.
pub fn map<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(2, usize::from)
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(work).collect();
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let result = work(item);
                    results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(result);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_items_order() {
        let items: Vec<u64> = (0..100).collect();
        let squares = super::map(&items, |i| {
            // Uneven work, so threads finish out of order.
            std::thread::sleep(std::time::Duration::from_micros(100 - i));
            i * i
        });
        assert_eq!(squares, items.iter().map(|i| i * i).collect::<Vec<_>>());
        assert!(super::map(&[] as &[u8], |_| 0).is_empty());
    }
}
