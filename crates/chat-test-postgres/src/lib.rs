//! # chat-test-postgres
//!
//! The one place chat-rs's tests, benchmarks and chaos runs get their
//! PostgreSQL from. Blocking and dependency-free (std and the server's own
//! programs), so `xtask` can use it as well as async tests.
//!
//! * **Find** the server the environment names ([`database_url`]):
//!   `DATABASE_URL`. Without it a test skips with a loud notice, except under
//!   `CI=true`, where it fails.
//! * **Start** a throwaway one on a free loopback port ([`PostgresServer`]):
//!   `initdb` into a temporary directory (trust authentication on loopback,
//!   no fsync, so a commit survives the server's crash but not the
//!   machine's), `pg_ctl start`; stopped and removed when dropped. As root —
//!   PostgreSQL refuses to run as root — the server runs as the `postgres`
//!   user through `runuser`.
//! * Give each test a schema of its own ([`unique_schema`]): nothing is ever
//!   dropped on a server the caller did not start.
//!
//! ```no_run
//! # fn main() -> Result<(), chat_test_postgres::Error> {
//! let server = chat_test_postgres::PostgresServer::start()?;
//! println!("DATABASE_URL={}", server.url());
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]
// The skip notice is the point: a skipped PostgreSQL test must be seen.
#![allow(clippy::print_stderr)]

use std::collections::hash_map::RandomState;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

/// What went wrong starting or stopping a server.
#[derive(Debug)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<Error> for String {
    fn from(e: Error) -> Self {
        e.0
    }
}

fn err(what: impl std::fmt::Display, e: impl std::fmt::Display) -> Error {
    Error(format!("{what}: {e}"))
}

/// Whether `CI` is `true` or `1`: a missing server is then a failure.
pub fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// `DATABASE_URL`, or `None` after a loud notice (a panic under CI).
///
/// # Panics
/// When `DATABASE_URL` is unset and [`is_ci`].
pub fn database_url() -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(v) if !v.trim().is_empty() => Some(v),
        _ if is_ci() => {
            panic!("DATABASE_URL is not set and CI=true: the PostgreSQL tests must run in CI")
        }
        _ => {
            eprintln!(
                "\n!!! SKIPPED: DATABASE_URL is not set, so this PostgreSQL test did not run.\n\
                 !!! Run `cargo xtask ci` (it starts PostgreSQL itself) or set DATABASE_URL.\n"
            );
            None
        }
    }
}

/// A schema name no other test uses (`chat_test_<pid>_<n>_<hex>`).
pub fn unique_schema() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "chat_test_{}_{}_{:08x}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        RandomState::new().build_hasher().finish() as u32
    )
}

/// The directory of PostgreSQL's server programs (`initdb`, `pg_ctl`): on
/// the `PATH`, else Debian's `/usr/lib/postgresql/<version>/bin` (the
/// newest).
pub fn bin_dir() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
    });
    if on_path.is_some() {
        return on_path;
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// Whether `initdb` and `pg_ctl` are installed.
pub fn tools_installed() -> bool {
    bin_dir().is_some()
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A free loopback port.
fn free_port() -> Result<u16, Error> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(|e| err("finding a port", e))?;
    Ok(listener
        .local_addr()
        .map_err(|e| err("finding a port", e))?
        .port())
}

/// A PostgreSQL server of its own on a free loopback port, in a temporary
/// directory; stopped and removed when dropped.
#[derive(Debug)]
pub struct PostgresServer {
    port: u16,
    dir: PathBuf,
    bin: PathBuf,
    as_postgres: bool,
}

impl PostgresServer {
    /// `initdb` and `pg_ctl start` (waiting until it accepts connections).
    ///
    /// # Errors
    /// The tools are missing, or a step failed (its output in the message).
    pub fn start() -> Result<Self, Error> {
        let bin = bin_dir().ok_or_else(|| {
            Error("initdb and pg_ctl not found (apt-get install postgresql)".to_owned())
        })?;
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "chat-rs-postgres-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_err(|e| err(dir.display(), e))?;
        let as_postgres = running_as_root();
        let server = Self {
            port: free_port()?,
            dir,
            bin,
            as_postgres,
        };
        if as_postgres {
            run(Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&server.dir))?;
        }
        run(server.tool("initdb").arg("-D").arg(server.data()).args([
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ]))?;
        server.pg_start()?;
        Ok(server)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A command running PostgreSQL program `name` (as `postgres` when this
    /// process is root).
    fn tool(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The directory it lives in (data, log, socket).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops it at once (`pg_ctl stop -m immediate`): connections drop,
    /// nothing is flushed.
    ///
    /// # Errors
    /// `pg_ctl` failed.
    pub fn stop(&self) -> Result<(), Error> {
        run(self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"]))
    }

    /// SIGSTOP to the server and every process of it: it stops answering,
    /// its connections stay open (a stalled server).
    ///
    /// # Errors
    /// Its processes cannot be found or signalled.
    pub fn pause(&self) -> Result<(), Error> {
        self.signal("-STOP")
    }

    /// SIGCONT after [`pause`](Self::pause).
    ///
    /// # Errors
    /// Its processes cannot be found or signalled.
    pub fn resume(&self) -> Result<(), Error> {
        self.signal("-CONT")
    }

    /// Sends `sig` to every process of the server.
    fn signal(&self, sig: &str) -> Result<(), Error> {
        let pids: Vec<String> = self.pids()?.iter().map(u32::to_string).collect();
        run(Command::new("kill").arg(sig).args(&pids))
    }

    /// The server's processes: the postmaster (first line of
    /// `postmaster.pid`) and its children (from `/proc`), one per
    /// connection among them.
    ///
    /// # Errors
    /// It is not running, or `/proc` cannot be read.
    pub fn pids(&self) -> Result<Vec<u32>, Error> {
        let pidfile = self.data().join("postmaster.pid");
        let text = fs::read_to_string(&pidfile).map_err(|e| err(pidfile.display(), e))?;
        let master = text
            .lines()
            .next()
            .and_then(|l| l.trim().parse::<u32>().ok())
            .ok_or_else(|| Error(format!("{}: no pid", pidfile.display())))?;
        let mut pids = vec![master];
        for entry in fs::read_dir("/proc")
            .map_err(|e| err("/proc", e))?
            .flatten()
        {
            let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
            let parent = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            if parent == Some(master)
                && let Ok(pid) = entry.file_name().to_string_lossy().parse()
            {
                pids.push(pid);
            }
        }
        Ok(pids)
    }

    /// Runs `sql` with `psql` (unaligned, tuples only) as `postgres`;
    /// what it printed, trimmed.
    ///
    /// # Errors
    /// `psql` is missing or the statement failed (its output in the message).
    pub fn psql(&self, sql: &str) -> Result<String, Error> {
        // Beside the real initdb (the one found may be a link to it), or
        // on PATH.
        let beside = fs::canonicalize(self.bin.join("initdb"))
            .ok()
            .and_then(|initdb| Some(initdb.parent()?.join("psql")))
            .filter(|psql| psql.is_file());
        let out = Command::new(beside.unwrap_or_else(|| PathBuf::from("psql")))
            .args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "postgres"])
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-c")
            .arg(sql)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| err("psql", e))?;
        if !out.status.success() {
            return Err(Error(format!(
                "psql {sql:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Starts it again on the same port and data, after [`stop`](Self::stop).
    ///
    /// # Errors
    /// `pg_ctl` failed.
    pub fn restart(&self) -> Result<(), Error> {
        self.pg_start()
    }

    /// `pg_ctl start` on its port, socket directory and data, waiting until
    /// it accepts connections.
    fn pg_start(&self) -> Result<(), Error> {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off \
             -c max_connections=200",
            self.port,
            self.dir.display()
        );
        run(self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("postgres.log"))
            .args(["-o", &options, "-w", "-t", "30", "start"]))
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        let _ = self.stop();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Runs `c`, its output captured; a failure carries it.
fn run(c: &mut Command) -> Result<(), Error> {
    let out = c
        .stdin(Stdio::null())
        .output()
        .map_err(|e| err(format!("{c:?}"), e))?;
    if out.status.success() {
        return Ok(());
    }
    Err(Error(format!(
        "{c:?} exited with {}: {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_unique_and_plain_identifiers() {
        let (a, b) = (unique_schema(), unique_schema());
        assert_ne!(a, b);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        );
    }
}
