//! The `cottas-tui` binary: a thin shell over the library's `cli` module.

fn main() -> std::process::ExitCode {
    cottas_tui::cli::main()
}
