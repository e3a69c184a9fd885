//! `sled-values`: what sled 0.34 itself keeps in memory for values of a given size, outside the
//! host. Rounds of 8 tasks each write sixteen values to two keys (an event and a product chunk,
//! as a flood does), one batch and one flush per write, `cache_capacity` 64 MiB; this process's
//! RSS after each round. `--split-kib` stores each value as parts of that size instead, as the
//! host's store does (`store/parts.rs`).

use crate::rss_mib;
use clap::Args;

#[derive(Args, Debug)]
pub struct SledValuesArgs {
    /// Size of each value, in KiB.
    #[arg(long, default_value_t = 1024)]
    value_kib: usize,
    /// Store each value as parts of this many KiB (0: whole).
    #[arg(long, default_value_t = 0)]
    split_kib: usize,
    /// Rounds of 8 tasks × 16 values × 2 keys.
    #[arg(long, default_value_t = 8)]
    rounds: usize,
}

pub fn run(args: SledValuesArgs) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let db = sled::Config::new()
        .path(dir.path())
        .cache_capacity(64 << 20)
        .open()?;
    let tree = db.open_tree("tasks")?;
    let value = vec![b'x'; args.value_kib * 1024];
    let split = args.split_kib * 1024;
    let pid = std::process::id();
    println!(
        "values of {} KiB{}; RSS in MiB after each round of {} MiB written",
        args.value_kib,
        if split > 0 {
            format!(" in parts of {} KiB", args.split_kib)
        } else {
            String::new()
        },
        8 * 16 * 2 * args.value_kib / 1024
    );
    println!(
        "| round | RSS |\n| ---: | ---: |\n| 0 | {:.0} |",
        rss_mib(pid)
    );
    for round in 0..args.rounds {
        for task in 0..8 {
            for chunk in 0..16u32 {
                let mut batch = sled::Batch::default();
                for tag in ["c", "e"] {
                    let key = format!("{tag}\0{round}-{task}\0{chunk:08}");
                    if split == 0 {
                        batch.insert(key.as_bytes(), value.as_slice());
                    } else {
                        for (i, part) in value.chunks(split).enumerate() {
                            batch.insert(format!("{key}\0{i:08}").as_bytes(), part);
                        }
                    }
                }
                tree.apply_batch(batch)?;
                db.flush()?;
            }
        }
        println!("| {} | {:.0} |", round + 1, rss_mib(pid));
    }
    Ok(())
}
