//! The `aiphost` binary: the server and the command-line tools.

mod cli;

use clap::Parser;

/// mimalloc instead of glibc's malloc: a profile of rpc `start` under load spent ~10 % of the
/// host's CPU in glibc's allocator (`_int_malloc`, `malloc_consolidate`, `unlink_chunk`).
/// Built without transparent huge pages (`no_thp`): with them an idle host was resident at
/// 165 MiB instead of 60.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// An error and its causes, each said once: a cause whose text its error already includes
/// (thiserror's `#[error("...: {0}")]` with `#[from]`) is not said again.
fn words(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let said = cause.to_string();
        if text.contains(&said) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&said);
    }
    text
}

fn main() -> std::process::ExitCode {
    let args = cli::Cli::parse();
    // Dropped after the runtime has stopped the host: the spans not yet exported are flushed.
    let _telemetry = match cli::init_logging(&args.log, &args.command) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // Written, not `eprintln!`ed: a closed stderr is no reason to panic on the way out.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "error: {}", words(&e));
            std::process::ExitCode::FAILURE
        }
    }
}
