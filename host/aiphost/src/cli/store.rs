//! `aiphost store check|accept-loss`: the operator's tools for the store of a stopped host.
//!
//! Why a command to accept a loss, not a flag of `serve`: a flag written once into a service's
//! unit would accept every later loss too, without a word; the command accepts the loss found
//! now, once, and the next `serve` is checked again.

use aiphost::store::{Store, StoreError};
use aiphost::task::TaskRecord;
use anyhow::Context;
use clap::Subcommand;
use std::path::{Path, PathBuf};

#[derive(Subcommand, Debug)]
pub enum StoreCommand {
    /// Verify the store of a stopped host: every entry reads back, index entries point at stored
    /// tasks, events, history, chunks and outbox entries belong to stored tasks, large values are
    /// whole. Prints what it holds and the problems found; exits with 1 when it is damaged.
    Check {
        /// The host's data directory (its `serve --data`).
        #[arg(default_value = "./aiphost-data", env = "AIPHOST_DATA")]
        data: PathBuf,
    },
    /// Accept what a damaged store lost and start from what is left, so that `serve` opens it
    /// again. Files sled cannot read are moved aside, never deleted.
    AcceptLoss {
        /// The host's data directory (its `serve --data`).
        #[arg(default_value = "./aiphost-data", env = "AIPHOST_DATA")]
        data: PathBuf,
    },
}

pub async fn run(cmd: StoreCommand) -> anyhow::Result<()> {
    match cmd {
        StoreCommand::Check { data } => check(&data),
        StoreCommand::AcceptLoss { data } => accept_loss(&data),
    }
}

fn check(data: &Path) -> anyhow::Result<()> {
    let dir = data.join("store");
    // Task records as the engine reads them; every other kind the store itself knows.
    let checked = Store::check(&dir, |record| record.decode::<TaskRecord>().map(drop))
        .with_context(|| format!("checking the store in {}", dir.display()))?;
    println!("store {}", dir.display());
    let width = checked.counts.keys().map(|k| k.len()).max().unwrap_or(0);
    for (kind, count) in &checked.counts {
        println!("  {kind:<width$}  {count}");
    }
    if checked.is_whole() {
        println!("no problems found");
        return Ok(());
    }
    let found = checked.problems.len() as u64 + checked.unlisted;
    println!("{found} problem(s) found:");
    for problem in &checked.problems {
        println!("  - {problem}");
    }
    if checked.unlisted > 0 {
        println!("  … and {} more", checked.unlisted);
    }
    anyhow::bail!(
        "the store in {} is damaged ({found} problem(s)); restore it from a backup, or start from what is left: aiphost store accept-loss {}",
        dir.display(),
        data.display()
    )
}

fn accept_loss(data: &Path) -> anyhow::Result<()> {
    let dir = data.join("store");
    let lost = Store::accept_loss(&dir).map_err(|e| match e {
        StoreError::Locked { .. } => anyhow::Error::new(e).context("stop the host first"),
        e => e.into(),
    })?;
    if lost.is_empty() {
        println!("the store in {} is whole: nothing to accept", dir.display());
        return Ok(());
    }
    println!("accepted the loss of the store in {}:", dir.display());
    for what in &lost {
        println!("  - {what}");
    }
    println!("`aiphost serve --data {}` opens it again", data.display());
    Ok(())
}
