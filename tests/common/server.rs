//! `cottas-tui serve` as a real process on a free loopback port, and curl
//! to talk to it (shared by the endpoint tests and the W3C protocol suite).

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    pub child: Child,
    pub port: u16,
}

impl Server {
    /// Starts `serve STORE ARGS` on a free port and waits until it answers.
    pub fn start(store: &Path, args: &[&str]) -> Server {
        Server::start_with_env(store, args, &[])
    }

    /// [`Server::start`] with extra environment variables.
    pub fn start_with_env(store: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        let port = free_port();
        let child = super::bin()
            .envs(env.iter().copied())
            .arg("serve")
            .arg(store)
            .args(["--bind", &format!("127.0.0.1:{port}"), "--quiet"])
            .args(args)
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let server = Server { child, port };
        let waited = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(waited.elapsed() < Duration::from_secs(20), "the server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        server
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

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
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
