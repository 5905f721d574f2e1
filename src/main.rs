//! The `cottas-tui` binary: a thin shell over the library's `cli` module.

/// Import allocates a few small strings per RDF term on two threads; mimalloc
/// handles that pattern far better than the system allocator (measured in
/// docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cottas_tui::cli::main()
}
