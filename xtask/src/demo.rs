//! `cargo xtask demo [args]`: the demo in the examples crate — fake Slack and
//! Linear APIs, echo-bot on in-memory state, and a scripted conversation of
//! signed webhooks printed as a timeline. `cargo xtask demo --help` lists its
//! options (`--strategy NAME`, `--redis URL`, `--database-url URL`).

use crate::cmd::{self, cargo};

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    // `cargo run` builds only the binary it runs, and the demo starts the
    // echo-bot binary that sits next to it: build both first.
    let mut build = cargo();
    build.args([
        "build", "--quiet", "-p", "examples", "--bin", "echo-bot", "--bin", "demo",
    ]);
    if !cmd::run(build).0 {
        return Err("building echo-bot and the demo failed".to_owned());
    }
    let mut demo = cargo();
    demo.args(["run", "--quiet", "-p", "examples", "--bin", "demo", "--"])
        .args(args);
    if cmd::run(demo).0 {
        Ok(())
    } else {
        Err("the demo failed".to_owned())
    }
}
