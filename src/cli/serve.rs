//! `cottas-tui serve STORE`: the flags, read into [`crate::serve::Config`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::serve::Config;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The chunk dir to serve (its `current` version ⊕ its delta log).
    pub target: PathBuf,
    /// Address and port to listen on (port 0: one the system picks, named in
    /// the "serving" line on stderr).
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub bind: SocketAddr,
    /// Accept SPARQL updates (each request one fsynced log batch).
    #[arg(long)]
    pub write: bool,
    /// A file holding the token writes must send as `Authorization: Bearer …`
    /// (required with --write on a non-loopback address).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Origins allowed to call from a browser (`*` for any); repeatable.
    #[arg(long, value_name = "ORIGIN", num_args = 1..)]
    pub cors: Vec<String>,
    /// Cancel a query after this many seconds (503, or a cut stream).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Cut results after N rows, answering 206 with `Cottas-Truncated: max-rows=N`.
    #[arg(long, value_name = "N")]
    pub max_rows: Option<usize>,
    /// Largest request body accepted (413 beyond).
    #[arg(long, value_name = "BYTES", default_value = "16M", value_parser = super::store_cmds::parse_size)]
    pub max_body: usize,
    /// Make the default graph the union of all graphs.
    #[arg(long)]
    pub union_default_graph: bool,
    /// Connections served at once (one thread each).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub threads: usize,
    /// No request log on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Decoded-column cache of the served snapshot.
    #[arg(long, default_value = "512M", value_parser = super::store_cmds::parse_size)]
    pub memory_limit: usize,
    /// How long an update waits for the writer lock before answering 503.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub lock_wait: f64,
    /// Let `LOAD <file:…>` read files under this directory (and nowhere
    /// else; symlinks out of it are refused). Without it, LOAD answers 403.
    #[arg(long, value_name = "DIR", requires = "write")]
    pub allow_load: Option<PathBuf>,
}

pub fn run(args: &ServeArgs) -> Result<ExitCode> {
    let token = match &args.token_file {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            let token = text.trim().to_owned();
            anyhow::ensure!(!token.is_empty(), "{} holds no token", path.display());
            Some(token)
        }
        None => None,
    };
    let seconds = |s: f64, what: &str| {
        Duration::try_from_secs_f64(s).map_err(|_| anyhow::anyhow!("{what} must be a number of seconds ≥ 0"))
    };
    let allow_load = match &args.allow_load {
        Some(dir) => {
            let canonical = dir.canonicalize().with_context(|| format!("--allow-load {}", dir.display()))?;
            anyhow::ensure!(canonical.is_dir(), "--allow-load {}: not a directory", dir.display());
            Some(canonical)
        }
        None => None,
    };
    let config = Config {
        chunk: args.target.clone(),
        bind: args.bind,
        write: args.write,
        token,
        cors: args.cors.clone(),
        timeout: args.timeout.map(|t| seconds(t, "--timeout")).transpose()?,
        max_rows: args.max_rows,
        max_body: args.max_body,
        union_default_graph: args.union_default_graph,
        connections: args.threads.max(1),
        quiet: args.quiet,
        cache_bytes: args.memory_limit,
        lock_wait: seconds(args.lock_wait, "--lock-wait")?,
        drain: Duration::from_secs(10),
        allow_load,
    };
    crate::serve::serve(config)?;
    Ok(ExitCode::SUCCESS)
}
