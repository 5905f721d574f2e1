//! `cottas-tui serve` as a real process on a free loopback port, and curl
//! to talk to it (shared by the endpoint tests and the W3C protocol suite).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub struct Server {
    pub child: Child,
    pub port: u16,
}

impl Server {
    /// Starts `serve STORE ARGS` on a free port and waits until it answers.
    pub fn start(store: &Path, args: &[&str]) -> Server {
        Server::start_with_env(store, args, &[])
    }

    /// [`Server::start`] with extra environment variables. The server binds
    /// port 0 and is ready once it prints the address it got: a port chosen
    /// here and probed until something answered could be taken by another
    /// test's server meanwhile, or answered by the probe's own socket (a TCP
    /// self-connect), and the first request then went nowhere.
    pub fn start_with_env(store: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = super::bin()
            .envs(env.iter().copied())
            .arg("serve")
            .arg(store)
            .args(["--bind", "127.0.0.1:0", "--quiet"])
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Lines before the "serving" line (warnings) pass through; at
            // the end of its stderr, what came is the reason it did not start.
            let mut line = String::new();
            while stderr.read_line(&mut line).is_ok_and(|n| n > 0) && !line.contains(" on http://") {
                eprint!("{line}");
                line.clear();
            }
            let _ = tx.send(line);
            // The rest of its stderr (errors, panics) goes where it went before.
            std::io::copy(&mut stderr, &mut std::io::stderr())
        });
        let line = rx.recv_timeout(std::time::Duration::from_secs(20)).unwrap_or_default();
        let port = line
            .split("http://127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("the server did not start: {line}"));
        eprint!("{line}");
        Server { child, port }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// SIGTERM, then the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Reply {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Runs curl with `args` and splits its `-i` output.
pub fn curl(args: &[&str]) -> Reply {
    let out =
        Command::new("curl").args(["-s", "-i", "--max-time", "60"]).args(args).output().unwrap_or_else(|e| {
            panic!("curl is needed for the endpoint tests: {e}");
        });
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (headers, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no response: {text:?}"));
    let status = headers.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap();
    Reply { status, headers: headers.to_owned(), body: body.to_owned() }
}

/// The number a `SELECT (COUNT(*) AS ?n)` query answers at `url`.
pub fn count_at(url: &str, query: &str) -> u64 {
    let r = curl(&["-H", "Accept: text/csv", "--data-urlencode", &format!("query={query}"), url]);
    assert_eq!(r.status, 200, "{}", r.body);
    r.body.lines().nth(1).unwrap().trim().parse().unwrap()
}

/// Sends `update(i)` for i = first, first + 1, … (one curl each) until one
/// is not answered 204; returns the numbers that were.
pub fn write_until_refused(port: u16, first: u64, update: impl Fn(u64) -> String) -> Vec<u64> {
    let url = format!("http://127.0.0.1:{port}/update");
    let mut answered = Vec::new();
    for i in first.. {
        let out = Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"])
            .args(["-H", "Content-Type: application/sparql-update", "--data-binary", &update(i), &url])
            .output()
            .unwrap();
        if out.stdout != b"204" || answered.len() >= 100_000 {
            break;
        }
        answered.push(i);
    }
    answered
}
