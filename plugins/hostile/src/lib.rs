//! Hostile: a TEST FIXTURE that misbehaves on purpose, to check that the host contains it.
//!
//! It accepts every task, then acts on its first text item:
//! - `loop`: spins forever (the invocation deadline must stop it);
//! - `alloc`: allocates and touches memory until allocation fails (the memory cap must stop it);
//! - `recurse`: recurses without bound (the stack must overflow into a trap);
//! - `panic`: panics with "hostile partner panicked on purpose";
//! - `flood`: streams 1 MiB chunks of the product `flood` until the host refuses one, then says
//!   it is done;
//! - `slow:MS`: busy-waits MS milliseconds, then produces the text "slept MS ms";
//! - `err`: reports the invalid change working -> completed, and returns the host's refusal as
//!   the invocation's error;
//! - `probe:PORT`: reaches for ambient authority (environment, arguments, the filesystem, a TCP
//!   connection to 127.0.0.1:PORT) and reports what it got as a `data` product;
//! - `plant`: marks a static and a fresh 1 MiB heap block (every byte 0xA5) and leaks the block;
//! - `seek`: reads the same static and a fresh, never-initialised 1 MiB heap block, and reports
//!   as a `data` product what it found: a host that let one invocation's memory reach the next
//!   (a pool slot reused without a reset) would show the marks;
//! - `deep:N`: produces a `data` item nested N levels deep (the host stores none deeper than 64);
//! - `chatty:N`: logs N lines as fast as it can (`chatty line I of N`, with the fields `step`,
//!   `total` and `command`, in that order), then says how many it logged;
//!
//! and, with the talking contract (`aiphost:partner@0.2.0`, see [`talk`]), reports the host's
//! answers to misbehaviour as the `data` item of a product `report`:
//! - `schema-huge`: asks with a form whose schema is 10 MiB;
//! - `schema-bad`: asks with schemas that are not JSON Schemas of an object (an invalid keyword,
//!   a top level that is not an object type, not JSON at all, nested too deep);
//! - `args-not-json`: reports tool calls whose arguments are not a JSON object;
//! - `deltas:N`: streams N one-byte deltas, stopping at the first refusal;
//! - `hammer:N`: streams N one-byte deltas, calling on after refusals and counting them;
//! - `after-end`: rests the task, then streams and reports tool activity anyway (the answers go to
//!   the agent kv, and the completion hook streams once more after the task ended);
//! - `kv-read:KEY`: reports the agent-kv entry KEY;
//! - anything else: echoes its input like the echo partner.

use std::alloc::Layout;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aiphost_sdk::{DataItem, EndReason, Outcome, Partner, Product, State, Task, log};

mod talk;

/// The hostile partner.
pub struct Hostile;

impl Partner for Hostile {
    fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
        let command = input
            .iter()
            .find_map(DataItem::as_text)
            .unwrap_or("")
            .trim()
            .to_owned();
        log::with_fields(
            log::Level::Info,
            "hostile partner at work",
            &[("command", &command)],
        );
        match command.as_str() {
            "loop" => spin(),
            "alloc" => hoard(),
            "recurse" => Outcome::Fail(format!("recursion returned {}", recurse(0))),
            "panic" => panic!("hostile partner panicked on purpose"),
            "flood" => flood(task),
            "err" => nonsense(task),
            "plant" => plant(),
            "seek" => seek(),
            "schema-huge" => talk::schema_huge(),
            "schema-bad" => talk::schema_bad(),
            "args-not-json" => talk::args_not_json(),
            "after-end" => talk::after_end(task),
            other => {
                if let Some(ms) = other.strip_prefix("slow:") {
                    slow(ms)
                } else if let Some(port) = other.strip_prefix("probe:") {
                    probe(port)
                } else if let Some(levels) = other.strip_prefix("deep:") {
                    deep(levels)
                } else if let Some(count) = other.strip_prefix("chatty:") {
                    chatty(count)
                } else if let Some(count) = other.strip_prefix("deltas:") {
                    talk::deltas(task, "deltas", count, false)
                } else if let Some(count) = other.strip_prefix("hammer:") {
                    talk::deltas(task, "hammer", count, true)
                } else if let Some(key) = other.strip_prefix("kv-read:") {
                    talk::kv_read(task, key)
                } else {
                    Outcome::Done(vec![Product::new("echo").named("echo").with_items(input)])
                }
            }
        }
    }

    fn completed(task: &Task, _reason: EndReason) {
        talk::completed(task);
    }
}

aiphost_sdk::export!(Hostile);

fn spin() -> ! {
    let mut n: u64 = 0;
    loop {
        n = black_box(n.wrapping_add(1));
    }
}

fn hoard() -> ! {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut block = vec![0u8; 1 << 20];
        block.iter_mut().step_by(4096).for_each(|b| *b = 1);
        hoard.push(black_box(block));
    }
}

/// Unbounded recursion: the stack frame holds a 4 KiB array the optimiser cannot drop, and the
/// work after the call defeats tail-call optimisation.
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth as u8; 4096]);
    if black_box(depth) == u64::MAX {
        return u64::from(frame[0]);
    }
    let below = recurse(black_box(depth + 1));
    below.wrapping_add(u64::from(frame[(depth % 4096) as usize]))
}

fn flood(task: &mut Task) -> Outcome {
    let chunk = "x".repeat(1 << 20);
    let mut sent: u64 = 0;
    while task
        .emit_chunk(
            Product::new("flood")
                .named("flood")
                .with_item(DataItem::text(chunk.clone())),
            true,
            false,
        )
        .is_ok()
    {
        sent += 1;
    }
    log::warn(&format!("flood stopped after {sent} MiB"));
    Outcome::Done(Vec::new())
}

/// A partner that logs far more than anyone could read: the host must keep its memory and its
/// own log bounded.
fn chatty(count: &str) -> Outcome {
    let Ok(count) = count.trim().parse::<u64>() else {
        return Outcome::Fail(format!("chatty:N needs a number of lines, got {count:?}"));
    };
    let total = count.to_string();
    for i in 1..=count {
        let step = i.to_string();
        log::with_fields(
            log::Level::Debug,
            &format!("chatty line {i} of {count}"),
            &[("step", &step), ("total", &total), ("command", "chatty")],
        );
    }
    Outcome::Done(vec![
        Product::new("chatty")
            .named("chatty")
            .with_item(DataItem::text(format!("logged {count} lines"))),
    ])
}

fn slow(ms: &str) -> Outcome {
    let Ok(ms) = ms.trim().parse::<u64>() else {
        return Outcome::Fail(format!(
            "slow:MS needs a number of milliseconds, got {ms:?}"
        ));
    };
    let start = Instant::now();
    let wait = Duration::from_millis(ms);
    while start.elapsed() < wait {
        black_box(());
    }
    Outcome::Done(vec![
        Product::new("slow")
            .named("slow")
            .with_item(DataItem::text(format!("slept {ms} ms"))),
    ])
}

/// What `plant` leaves behind, and `seek` looks for.
static MARKED: AtomicU64 = AtomicU64::new(0);
const MARK: u8 = 0xA5;
const BLOCK: usize = 1 << 20;

fn block_layout() -> Layout {
    Layout::from_size_align(BLOCK, 16).unwrap_or_else(|_| Layout::new::<u8>())
}

fn plant() -> Outcome {
    MARKED.store(u64::from_ne_bytes([MARK; 8]), Ordering::SeqCst);
    // SAFETY: the layout has a non-zero size; the block is written in full and then leaked.
    let at = unsafe {
        let block = std::alloc::alloc(block_layout());
        if block.is_null() {
            return Outcome::Fail("no memory for the block".into());
        }
        block.write_bytes(MARK, BLOCK);
        block as usize
    };
    Outcome::Done(vec![Product::new("plant").named("plant").with_item(
        DataItem::data(aiphost_sdk::serde_json::json!({"heapAt": at})),
    )])
}

fn seek() -> Outcome {
    let marked_static = MARKED.load(Ordering::SeqCst) != 0;
    // SAFETY: the layout has a non-zero size. Reading the block before writing it is the point:
    // a hostile partner looking for what an earlier invocation left in memory. Volatile reads
    // keep the compiler from assuming anything about the uninitialised bytes.
    let (at, marked_bytes) = unsafe {
        let block = std::alloc::alloc(block_layout());
        if block.is_null() {
            return Outcome::Fail("no memory for the block".into());
        }
        let marked = (0..BLOCK)
            .filter(|i| block.add(*i).read_volatile() == MARK)
            .count();
        (block as usize, marked)
    };
    Outcome::Done(vec![Product::new("seek").named("seek").with_item(
        DataItem::data(aiphost_sdk::serde_json::json!({
            "heapAt": at,
            "markedBytes": marked_bytes,
            "markedStatic": marked_static,
        })),
    )])
}

/// Tries everything a sandbox must deny and reports each outcome.
fn probe(port: &str) -> Outcome {
    let port: u16 = port.trim().parse().unwrap_or(1);
    let env: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
    let args: Vec<String> = std::env::args().collect();
    let outcome = |r: std::io::Result<String>| match r {
        Ok(what) => format!("allowed: {what}"),
        Err(e) => format!("denied: {e}"),
    };
    let read_root = outcome(std::fs::read_dir("/").map(|d| format!("{} entries", d.count())));
    let read_passwd =
        outcome(std::fs::read_to_string("/etc/passwd").map(|t| format!("{} bytes", t.len())));
    let write_tmp =
        outcome(std::fs::write("/tmp/aiphost-probe", b"x").map(|()| "written".to_string()));
    let connect = outcome(
        std::net::TcpStream::connect(("127.0.0.1", port))
            .map(|s| format!("connected from {:?}", s.local_addr())),
    );
    Outcome::Done(vec![Product::new("probe").named("probe").with_item(
        DataItem::data(aiphost_sdk::serde_json::json!({
            "env": env,
            "args": args,
            "readRoot": read_root,
            "readPasswd": read_passwd,
            "writeTmp": write_tmp,
            "connect": connect,
        })),
    )])
}

/// A product whose one `data` item nests `levels` levels (the item's object is the first).
fn deep(levels: &str) -> Outcome {
    let Ok(levels) = levels.parse::<usize>() else {
        return Outcome::Fail(format!("deep:{levels}: not a number"));
    };
    let mut value = aiphost_sdk::serde_json::json!("bottom");
    for i in 1..levels {
        value = if i % 2 == 0 {
            aiphost_sdk::serde_json::json!({ "k": value })
        } else {
            aiphost_sdk::serde_json::json!([value])
        };
    }
    Outcome::Done(vec![Product::new("deep").named("deep").with_item(
        DataItem::data(aiphost_sdk::serde_json::json!({ "k": value })),
    )])
}

/// Reports working -> completed, which the AIP state machine forbids, and hands the refusal back
/// as the invocation's error.
fn nonsense(task: &mut Task) -> Outcome {
    match task.set_status(
        State::Completed,
        vec![DataItem::text(
            "hostile partner claims the task is completed",
        )],
    ) {
        Ok(()) => Outcome::Abort("the host accepted working -> completed from a partner".into()),
        Err(e) => Outcome::Abort(format!("hostile partner reported nonsense: {e}")),
    }
}
