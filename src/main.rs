//! The `cottas-tui` binary: a thin shell over the library's `cli` module.

/// Import allocates a few small strings per RDF term on two threads; mimalloc
/// handles that pattern far better than the system allocator (measured in
/// docs/benchmarks-history.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    cottas_tui::store::read::held::on_heap_over_budget(give_freed_memory_back);
    exit_without_teardown(cottas_tui::cli::main())
}

extern "C" {
    /// mimalloc's own (linked in through `libmimalloc-sys`; declared here
    /// rather than through its `extended` feature, which adds a crate).
    fn mi_collect(force: bool);
}

/// Returns the memory this thread's heap freed to the kernel now, not
/// after mimalloc's purge delay: under `--memory-limit`, a column cache
/// giving way to a query's tables frees hundreds of megabytes at once.
/// (Purging at once on every free instead cost 0.1 s on a 0.13 s query.)
fn give_freed_memory_back() {
    // SAFETY: mi_collect takes no pointers and may be called at any time.
    unsafe { mi_collect(true) }
}

/// Ends the process with `code` once stdout is flushed, without the C
/// runtime's exit handlers. Everything the command wrote is durable or
/// flushed by the time `cli::main` returns, and every value it owned has
/// been dropped; what is left is mimalloc's exit handler, which hands all
/// freed memory back to the kernel page range by page range (`madvise`)
/// just before the kernel takes the whole address space back anyway: 20 ms
/// at the end of a 1M-quad import, on one core with nothing else to do
/// (`perf`: `mi_process_done` → `_mi_os_purge_ex`).
fn exit_without_teardown(code: std::process::ExitCode) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // `ExitCode` hides its number; it is one of the 256 a process can return.
    let status = (0..=u8::MAX).find(|&n| std::process::ExitCode::from(n) == code).map_or(1, i32::from);
    // SAFETY: `_exit` ends the process; no Rust code runs after it.
    unsafe { libc::_exit(status) }
}

/// Runs [`no_transparent_huge_pages`] from the ELF initialisers, before the
/// Rust runtime's first allocation: called from `main`, the flag came after
/// mimalloc had already touched its first arena page, and the kernel zeroed
/// a whole 2 MiB huge page for it (about a third of a short query's wall
/// time, measured with `perf record`).
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static NO_THP_BEFORE_FIRST_ALLOCATION: extern "C" fn() = {
    extern "C" fn run() {
        no_transparent_huge_pages();
    }
    run
};

/// mimalloc asks for transparent huge pages on its arenas, and the kernel
/// then zeroes 2 MiB for each first touch of memory that import and
/// compaction allocate and free by the hundred megabytes: on the 1M-quad
/// import that was 2.3 s of system time out of 4.6 s wall (`perf stat`;
/// 0.5 s and 3.1 s without). Opting this process out costs nothing else.
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with these arguments only sets a flag on this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}
