//! `cargo xtask first-day`: a bot author's first day, checked from outside. It
//! writes a new crate outside the workspace from the code blocks of
//! `docs/getting-started.md` (its `Cargo.toml` dependencies and its `main`) and
//! `docs/testing.md` (its tests), depending on this checkout by path as the guide
//! says; runs its tests; and starts its binary to answer one signed delivery and
//! stop cleanly on SIGTERM — so the guides cannot drift from what compiles and
//! runs.

use std::fs;
use std::path::{Path, PathBuf};

use crate::cmd::{self, cargo, root};

/// Where the guide tells a reader to put the checkout, relative to their crate.
const CHECKOUT: &str = "../chat-rs";

/// A fenced code block: its info string and its text.
#[derive(Debug, PartialEq, Eq)]
struct Block {
    info: String,
    text: String,
}

/// The fenced code blocks of a Markdown document, in order.
fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for line in markdown.lines() {
        let fence = line.trim_start().starts_with("```");
        match (&mut open, fence) {
            (None, true) => {
                open = Some(Block {
                    info: line.trim_start().trim_start_matches('`').trim().to_owned(),
                    text: String::new(),
                });
            }
            (Some(_), true) => out.extend(open.take()),
            (Some(b), false) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, false) => {}
        }
    }
    out
}

/// A doctest's text as plain Rust: rustdoc's hidden lines (`# …`) shown.
fn unhidden(text: &str) -> String {
    text.lines()
        .map(|l| {
            let t = l.trim_start();
            if t == "#" {
                ""
            } else if let Some(rest) = t.strip_prefix("# ") {
                rest
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The new crate's files from the two guides.
fn crate_files(
    getting_started: &str,
    testing: &str,
    checkout: &Path,
) -> Result<Vec<(&'static str, String)>, String> {
    let gs = blocks(getting_started);
    let deps = gs
        .iter()
        .find(|b| b.info == "toml" && b.text.contains("[dependencies]"))
        .ok_or("getting-started.md has no ```toml block with [dependencies]")?;
    let main = gs
        .iter()
        .find(|b| b.info.starts_with("rust") && b.text.contains("#[tokio::main]"))
        .ok_or("getting-started.md has no ```rust block with a #[tokio::main] main")?;
    let path = checkout.display().to_string().replace('\\', "/");
    let manifest = format!(
        "[package]\nname = \"first-day-bot\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
         # Not a member of the chat-rs workspace: a crate of its own.\n[workspace]\n\n{}",
        deps.text.replace(CHECKOUT, &path)
    );
    let mut tests = String::from(
        "//! The runnable examples of docs/testing.md, as this crate's tests.\n\n\
         #![allow(clippy::all, unused)]\n",
    );
    let all = blocks(testing);
    let runnable: Vec<&Block> = all.iter().filter(|b| b.info == "rust").collect();
    if runnable.is_empty() {
        return Err("testing.md has no runnable ```rust block".to_owned());
    }
    for (n, b) in runnable.iter().enumerate() {
        tests.push_str(&format!(
            "\n#[test]\nfn testing_guide_example_{}() {{\n{}\n}}\n",
            n + 1,
            unhidden(&b.text)
        ));
    }
    Ok(vec![
        ("Cargo.toml", manifest),
        ("src/main.rs", main.text.clone()),
        ("tests/testing_guide.rs", tests),
        ("tests/binary.rs", BINARY_TEST.to_owned()),
    ])
}

/// Starts the built binary, sends Slack's signed `url_verification`, expects
/// the challenge back, then SIGTERM and a clean exit.
const BINARY_TEST: &str = r#"//! The getting-started binary answers one signed delivery and stops on SIGTERM.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chat_testkit::signed::SlackDeliveries;

const SECRET: &str = "first-day-signing-secret";

#[test]
fn the_binary_answers_a_signed_delivery_and_stops_on_sigterm() -> Result<(), Box<dyn std::error::Error>> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_first-day-bot"))
        .env("SLACK_SIGNING_SECRET", SECRET)
        .env("SLACK_BOT_TOKEN", "xoxb-first-day")
        .env("PORT", port.to_string())
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        ?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut stream = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => {
                let _ = child.kill();
                return Err(format!("the bot never listened on {port}: {e}").into());
            }
        }
    };
    let body = serde_json::json!({"token": "x", "challenge": "first-day-challenge", "type": "url_verification"});
    let request = SlackDeliveries::new(SECRET).event(&body);
    let mut raw = format!("POST {} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\ncontent-length: {}\r\n", request.uri(), request.body().len());
    for (name, value) in request.headers() {
        raw.push_str(&format!("{name}: {}\r\n", value.to_str()?));
    }
    raw.push_str("\r\n");
    stream.write_all(raw.as_bytes())?;
    stream.write_all(request.body())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("first-day-challenge"), "{answer}");

    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status()?;
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(exit) = child.try_wait()? {
            assert!(exit.success(), "exited with {exit}");
            break;
        }
        assert!(Instant::now() < deadline, "no exit within 20 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}
"#;

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("`first-day` takes no arguments (got `{a}`)"));
    }
    let root = root();
    let read = |p: &str| fs::read_to_string(root.join(p)).map_err(|e| format!("{p}: {e}"));
    let files = crate_files(
        &read("docs/getting-started.md")?,
        &read("docs/testing.md")?,
        &root,
    )?;
    let dir = target_dir(&root).join("first-day").join("bot");
    let _ = fs::remove_dir_all(&dir);
    for (path, text) in &files {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    // The workspace's resolved versions: the new crate builds with what CI
    // already built and downloaded.
    fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))
        .map_err(|e| format!("Cargo.lock: {e}"))?;
    println!(
        "first-day: a new crate from the guides in {}",
        dir.display()
    );
    let mut test = cargo();
    test.current_dir(&dir)
        .args(["test", "--offline", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env(
            "CARGO_TARGET_DIR",
            target_dir(&root).join("first-day").join("target"),
        );
    if cmd::run(test).0 {
        Ok(())
    } else {
        Err("the bot built from docs/getting-started.md and docs/testing.md failed".to_owned())
    }
}

fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => {
            let p = PathBuf::from(d);
            if p.is_absolute() { p } else { root.join(p) }
        }
        _ => root.join("target"),
    }
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    type TestResult = Result<(), Box<dyn std::error::Error>>;

    use super::*;

    #[test]
    fn fenced_blocks_are_found_with_their_info() {
        let md = "text\n```toml\n[dependencies]\nx = 1\n```\n\n```rust,no_run\nfn main() {}\n```\n";
        let b = blocks(md);
        assert_eq!(b.len(), 2);
        assert_eq!(
            b[0],
            Block {
                info: "toml".into(),
                text: "[dependencies]\nx = 1\n".into()
            }
        );
        assert_eq!(b[1].info, "rust,no_run");
    }

    #[test]
    fn hidden_lines_are_shown() {
        assert_eq!(
            unhidden("# let x = 1;\nlet y = x;\n#\n#[test]"),
            "let x = 1;\nlet y = x;\n\n#[test]"
        );
    }

    #[test]
    fn the_guides_make_a_crate_that_depends_on_this_checkout() -> TestResult {
        let root = root();
        let gs = fs::read_to_string(root.join("docs/getting-started.md"))?;
        let testing = fs::read_to_string(root.join("docs/testing.md"))?;
        let files = crate_files(&gs, &testing, Path::new("/checkout"))?;
        let manifest = &files[0].1;
        assert!(
            manifest.contains("path = \"/checkout/crates/chat-runtime\""),
            "{manifest}"
        );
        assert!(!manifest.contains(CHECKOUT));
        assert!(files[1].1.contains("shutdown_signal"));
        assert!(files[2].1.contains("fn testing_guide_example_2()"));
        Ok(())
    }
}
