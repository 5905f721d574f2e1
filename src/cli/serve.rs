//! `cottas-tui serve STORE`: the flags, read into [`crate::serve::Config`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::serve::{Config, Limits};

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
    /// A named origin (not `*`) may also write from its pages.
    #[arg(long, value_name = "ORIGIN", num_args = 1..)]
    pub cors: Vec<String>,
    /// Another host name clients may use in `Host` (the bound address and
    /// localhost, 127.0.0.1 and [::1] are always allowed; any other is 421,
    /// against DNS rebinding); repeatable, `*` for any.
    #[arg(long, value_name = "NAME", num_args = 1..)]
    pub allow_host: Vec<String>,
    /// Cancel a query after this many seconds (503, or a cut stream).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Cut results after N rows (a 200 with `Cottas-Truncated: max-rows=N`).
    #[arg(long, value_name = "N")]
    pub max_rows: Option<usize>,
    /// Largest request body accepted (413 beyond).
    #[arg(long, value_name = "BYTES", default_value = "16M", value_parser = super::store_cmds::parse_size)]
    pub max_body: usize,
    /// Largest request head, request line and fields (431 beyond; at least 8K).
    #[arg(long, value_name = "BYTES", default_value = "16K", value_parser = super::store_cmds::parse_size)]
    pub max_head: usize,
    /// A request head must arrive within this of the connection's start or
    /// of the last response; an idle connection is closed then.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub head_timeout: f64,
    /// A request body must arrive within this of its head (408 beyond).
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    pub body_timeout: f64,
    /// A client that reads nothing of its response for this long is dropped.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    pub send_timeout: f64,
    /// Connections open at once; past it a connection gets 503 and `Retry-After`.
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub max_connections: usize,
    /// Requests evaluated at once, each on a worker thread; the others wait
    /// (without a thread) up to --queue-wait, then get 503.
    #[arg(long, value_name = "N", default_value_t = 64, alias = "threads")]
    pub max_queries: usize,
    /// How long a request waits for a free worker before 503.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub queue_wait: f64,
    /// Make the default graph the union of all graphs.
    #[arg(long)]
    pub union_default_graph: bool,
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
    let limits = Limits {
        head_timeout: seconds(args.head_timeout, "--head-timeout")?,
        body_timeout: seconds(args.body_timeout, "--body-timeout")?,
        send_timeout: seconds(args.send_timeout, "--send-timeout")?,
        max_body: args.max_body,
        max_head: args.max_head.max(8 << 10),
        connections: args.max_connections.max(1),
        workers: args.max_queries.max(1),
        queue_wait: seconds(args.queue_wait, "--queue-wait")?,
    };
    let config = Config {
        token,
        cors: args.cors.clone(),
        allow_hosts: args.allow_host.clone(),
        timeout: args.timeout.map(|t| seconds(t, "--timeout")).transpose()?,
        max_rows: args.max_rows,
        limits,
        union_default_graph: args.union_default_graph,
        bind: args.bind,
        write: args.write,
        quiet: args.quiet,
        cache_bytes: args.memory_limit,
        lock_wait: seconds(args.lock_wait, "--lock-wait")?,
        allow_load,
        ..Config::new(args.target.clone())
    };
    crate::serve::serve(config)?;
    Ok(ExitCode::SUCCESS)
}
