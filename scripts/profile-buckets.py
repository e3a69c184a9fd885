#!/usr/bin/env python3
"""Where a durable start's CPU goes, as a partition: every perf sample is counted once, in the
first bucket (in the order below) that one of its frames matches.

    perf script -i OUT.perf.data -F comm,ip,sym --no-inline | python3 scripts/profile-buckets.py US_PER_START

US_PER_START (the CPU per start measured without the profiler) turns shares into microseconds.
The order matters: a partner's host call runs the engine's transition, which hands the change
to the store, so the store is matched before the engine and the engine before the guest.
"""
import re
import sys

BUCKETS = [
    ("store: committer thread (sled apply, flush, fdatasync)", lambda comm, s: comm.startswith("aiphost-commit")),
    ("store: sled's I/O thread pool", lambda comm, s: comm.startswith("sled-io")),
    ("other threads (sled's flusher, the epoch ticker)", lambda comm, s: not comm.startswith("tokio") and not comm.startswith("aiphost-guest")),
    ("store: building a change on the request's thread (Store::write_task)", lambda comm, s: "aiphost_store::Store::write_task" in s or "aiphost_store::committer" in s),
    ("store: waiting for applied/durable (wakeups)", lambda comm, s: "PendingWrite" in s or "Store::durable" in s),
    ("wasm: instance teardown (Store drop, decommit)", lambda comm, s: "drop_in_place<wasmtime::runtime::store::Store" in s or "StoreOpaque as core::ops::drop::Drop" in s or "decommit" in s),
    ("engine: a partner's report (transition, journal, events)", lambda comm, s: "TaskReporter" in s or "report_status" in s),
    ("wasm: instantiate, run the guest, host calls", lambda comm, s: "aiphost_runtime" in s or "wasmtime" in s),
    ("engine: the command (admission, slot, create, wait for rest)", lambda comm, s: "aiphost_engine" in s),
    ("HTTP door: parse, dispatch, render (aip, a2a, jsonrpc, dialect)", lambda comm, s: "aiphost::transport::aip" in s or "aiphost::transport::a2a" in s or "aiphost_protocol" in s),
    ("HTTP: hyper, axum, connection, socket syscalls", lambda comm, s: "hyper" in s or "axum" in s or "aiphost::transport" in s or "tcp_" in s or "sock_" in s),
    # perf cannot unwind through the guest's JIT code: a page fault taken by the guest, or a
    # sample in its code, ends its stack there.
    ("wasm: guest code and its page faults (stack not unwound past JIT code)", lambda comm, s: "asm_exc_page_fault" in s or all(f.startswith("[unknown]") for f in s.split("\n") if f)),
    ("tokio scheduler, parking, timers, other", lambda comm, s: True),
]


def main():
    per_start = float(sys.argv[1]) if len(sys.argv) > 1 else None
    counts = [0] * len(BUCKETS)
    total = 0
    comm, frames = None, []

    def flush():
        nonlocal total
        if comm is None:
            return
        stack = "\n".join(frames)
        for i, (_, match) in enumerate(BUCKETS):
            if match(comm, stack):
                counts[i] += 1
                break
        total += 1

    for line in sys.stdin:
        if not line.strip():
            flush()
            comm, frames = None, []
        elif not line.startswith((" ", "\t")):
            comm = line.split()[0]
        else:
            frames.append(re.sub(r"^\s*[0-9a-f]+\s+", "", line.rstrip()))
    flush()
    print(f"| where | share of samples | µs per start |")
    print(f"| --- | ---: | ---: |")
    for (name, _), n in zip(BUCKETS, counts):
        share = 100.0 * n / max(total, 1)
        us = f"{per_start * share / 100:.0f}" if per_start else "-"
        print(f"| {name} | {share:.1f} % | {us} |")
    print(f"| all ({total} samples) | 100 % | {per_start:.0f} |" if per_start else f"| all ({total} samples) | 100 % | - |")


main()
