//! The report: figures as table cells, the tables, and the header's facts
//! (date, commit, machine).

use std::fmt::Write as _;
use std::fs;
use std::process::Command;

use super::{Backend, Figures};
use crate::cmd::root;

pub(super) fn fl(f: &Figures, key: &str) -> f64 {
    f.get(key)
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(0.0)
}

pub(super) fn int(f: &Figures, key: &str) -> String {
    group(fl(f, key).round())
}

pub(super) fn num(f: &Figures, key: &str, places: usize) -> String {
    match f.get(key).and_then(serde_json::Value::as_f64) {
        Some(x) if places == 0 => group(x.round()),
        Some(x) => format!("{x:.places$}"),
        None => "–".to_owned(),
    }
}

/// `12345` as `12,345`.
pub(super) fn group(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 { format!("-{out}") } else { out }
}

pub(super) fn ratio(a: &Figures, b: &Figures, key: &str) -> f64 {
    let d = fl(b, key);
    if d == 0.0 { 0.0 } else { fl(a, key) / d }
}

pub(super) fn at_least(got: f64, target: f64, unit: &str) -> String {
    if got >= target {
        format!("{}{unit} (met)", group(got))
    } else {
        format!(
            "{}{unit} (MISSED by {:.0}%)",
            group(got),
            100.0 * (1.0 - got / target)
        )
    }
}

pub(super) fn below(got: f64, target: f64, unit: &str) -> String {
    if got < target {
        format!("{got:.2}{unit} (met)")
    } else {
        format!("{got:.2}{unit} (MISSED: {:.1}× the target)", got / target)
    }
}

pub(super) fn latency_table(done: &[(String, Backend, Figures)]) -> String {
    let mut t = String::from(
        "| run | state | offered/s | achieved/s | ack p50 ms | p90 | p99 | p99.9 | max | 2xx | 503 | errors | handler runs | peak RSS MiB | CPU µs/delivery: bot | store | fake Slack | loadgen |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (label, backend, f) in done {
        let offered = match f.get("offered_rate").and_then(serde_json::Value::as_f64) {
            Some(r) => group(r),
            None => format!("max ({} conns)", int(f, "connections")),
        };
        let _ = writeln!(
            t,
            "| {label} | {} | {offered} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            backend.name(),
            num(f, "achieved_rate", 0),
            num(f, "ack_p50_ms", 2),
            num(f, "ack_p90_ms", 2),
            num(f, "ack_p99_ms", 2),
            num(f, "ack_p999_ms", 2),
            num(f, "ack_max_ms", 2),
            int(f, "acked"),
            int(f, "status_503"),
            group(fl(f, "errors") + fl(f, "timeouts")),
            int(f, "handler_runs"),
            num(f, "rss_max_mib", 1),
            num(f, "server_cpu_us_per_delivery", 0),
            num(f, "store_cpu_us_per_delivery", 0),
            num(f, "fake_slack_cpu_us_per_delivery", 0),
            num(f, "loadgen_cpu_us_per_delivery", 0),
        );
    }
    t
}

pub(super) fn outcome_table(done: &[(String, Backend, Figures)]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for (_, _, f) in done {
        for k in f.keys() {
            if let Some(n) = k.strip_prefix("outcome_")
                && !names.contains(&n)
            {
                names.push(n);
            }
        }
    }
    names.sort_unstable();
    let mut t = String::from("| run |");
    for n in &names {
        let _ = write!(t, " {n} |");
    }
    t.push_str(" retries sent | acknowledged | acknowledged without an outcome |\n|---|");
    for _ in &names {
        t.push_str("---:|");
    }
    t.push_str("---:|---:|---:|\n");
    for (label, _, f) in done {
        let _ = write!(t, "| {label} |");
        for n in &names {
            let _ = write!(t, " {} |", int(f, &format!("outcome_{n}")));
        }
        let _ = writeln!(
            t,
            " {} | {} | {} |",
            int(f, "retries_sent"),
            int(f, "acked"),
            int(f, "acked_without_outcome")
        );
    }
    t
}

pub(super) fn utc_now() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

pub(super) fn git_rev() -> String {
    let rev = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(root())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .current_dir(root())
        .output()
        .ok()
        .is_some_and(|o| !o.stdout.is_empty());
    if dirty {
        format!("{rev} (with local changes)")
    } else {
        rev
    }
}

/// CPU model, logical CPUs and memory, from /proc.
pub(super) fn machine() -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_owned())
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let mem_kib: u64 = fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{model}, {cpus} CPUs, {:.1} GiB memory, Linux {}",
        mem_kib as f64 / 1024.0 / 1024.0,
        kernel.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(group(0.0), "0");
        assert_eq!(group(999.0), "999");
        assert_eq!(group(1000.0), "1,000");
        assert_eq!(group(1234567.0), "1,234,567");
        assert_eq!(group(-20000.0), "-20,000");
    }
}
