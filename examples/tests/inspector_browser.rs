//! The inspector page in a real headless browser: Chromium driven through
//! chromedriver (WebDriver, by fantoccini), against the built echo-bot with
//! `INSPECT_TOKEN` set. A slow handler holds a thread with a second mention
//! queued behind it; the browser logs in, sees the scope with its holder and
//! the queued entry, has a force-release with a stale fence refused, then
//! force-releases with the fence the page shows — and the queued mention is
//! answered.
//!
//! Needs `chromium` and `chromedriver` on `PATH` (Debian: `chromium`,
//! `chromium-driver`; `.ci/run` installs them). Without them the test says so
//! and passes, except under `CI=true`, where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use chat_testkit::FakeSlack;
use examples::drive::{Delivery, EchoBotCommand, slack};
use fantoccini::{ClientBuilder, Locator};
use serde_json::json;

const TOKEN: &str = "browser-test-inspect-token";
const ROOT_TS: &str = "1700000000.000100";
const PATIENCE: Duration = Duration::from_secs(40);

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// chromedriver, killed on drop.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn start_driver(chromedriver: &Path) -> (Driver, String) {
    let port = free_port();
    let child = Command::new(chromedriver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting chromedriver");
    let driver = Driver(child);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "chromedriver never listened"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (driver, format!("http://127.0.0.1:{port}"))
}

/// Saves a screenshot in the test's scratch directory, and in
/// `INSPECTOR_SCREENSHOTS` when set (how docs/images/ gets them).
fn save(png: &[u8], name: &str) {
    let mut dirs = vec![PathBuf::from(env!("CARGO_TARGET_TMPDIR"))];
    if let Some(dir) = std::env::var_os("INSPECTOR_SCREENSHOTS") {
        dirs.push(PathBuf::from(dir));
    }
    for dir in dirs {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), png).unwrap();
    }
}

#[tokio::test]
async fn the_inspector_releases_a_stuck_scope_in_a_real_browser() {
    let (Some(chromedriver), Some(chromium)) = (on_path("chromedriver"), on_path("chromium"))
    else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "chromium and chromedriver are required under CI=true"
        );
        eprintln!("skipping: chromium / chromedriver not on PATH");
        return;
    };
    let fake = FakeSlack::start().await;
    let bot = EchoBotCommand::new(env!("CARGO_BIN_EXE_echo-bot"))
        .log_to(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("echo-bot-inspector.log"))
        .slack(fake.base_url())
        .env("INSPECT_TOKEN", TOKEN)
        .env("CHAT_DISPATCH", "deferred")
        .env("CHAT_CONCURRENCY", "queue")
        .env("ECHO_DELAY_MS", "6000")
        .spawn()
        .await
        .unwrap();
    let (_driver, webdriver) = start_driver(&chromedriver).await;
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".to_owned(),
        json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--window-size=1280,1000"],
        }),
    );
    let browser = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&webdriver)
        .await
        .expect("a browser session");

    // The browser is up before the slow handler starts its 6 s, so that a
    // loaded machine's slow browser start cannot eat into them.
    let first = slack::app_mention(
        "EvSlow",
        "1700000001.000100",
        Some(ROOT_TS),
        &slack::mentioning("stuck one"),
    );
    let second = slack::app_mention(
        "EvNext",
        "1700000002.000100",
        Some(ROOT_TS),
        &slack::mentioning("queued one"),
    );
    for body in [&first, &second] {
        assert_eq!(
            bot.deliver(&Delivery::slack_event(body))
                .await
                .unwrap()
                .status,
            200
        );
    }

    let run = async {
        // Not logged in: the login form.
        browser.goto(&bot.url("/inspect")).await?;
        browser
            .find(Locator::Css("input#token"))
            .await?
            .send_keys(TOKEN)
            .await?;
        browser
            .find(Locator::Css("button#login"))
            .await?
            .click()
            .await?;
        // The page: the held scope, its fence and the queued mention. The
        // click returns before the navigation it starts has finished, so the
        // login page may still be the one shown: wait for the inspector's.
        let row = browser
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css("tr.scope"))
            .await?;
        let fence = row.find(Locator::Css("code.fence")).await?.text().await?;
        let queued = row
            .find(Locator::Css(".entry[data-kind=\"queued\"] code"))
            .await?
            .text()
            .await?;
        assert_eq!(queued, "EvNext");
        let in_flight = row
            .find(Locator::Css(".entry[data-kind=\"in-flight\"] code"))
            .await?
            .text()
            .await?;
        assert_eq!(in_flight, "EvSlow");
        save(&browser.screenshot().await?, "inspector.png");

        // A release with a fence the scope no longer has: refused.
        let fence: u64 = fence.parse().expect("a numeric fence");
        browser
            .execute(
                "const f = document.querySelector('form.release'); \
                 f.querySelector('input[name=fence]').value = arguments[0]; f.submit();",
                vec![json!((fence - 1).to_string())],
            )
            .await?;
        // The answer page, not the page the form was on: wait for its flash.
        let flash = browser
            .wait()
            .for_element(Locator::Css("#flash.stale"))
            .await?;
        assert!(
            flash
                .attr("class")
                .await?
                .unwrap_or_default()
                .contains("stale")
        );
        assert!(flash.text().await?.contains("Nothing changed"));
        save(&browser.screenshot().await?, "inspector-stale.png");
        let still = browser
            .find(Locator::Css("tr.scope code.fence"))
            .await?
            .text()
            .await?;
        assert_eq!(
            still,
            fence.to_string(),
            "a refused release changed the holder"
        );

        // With the fence the page shows: released.
        browser
            .find(Locator::Css("tr.scope form.release button"))
            .await?
            .click()
            .await?;
        // The click navigates; until the answer page loads, the stale page's
        // flash is still there: wait for the new one.
        let flash = browser
            .wait()
            .for_element(Locator::Css("#flash.released"))
            .await?;
        assert!(
            flash
                .attr("class")
                .await?
                .unwrap_or_default()
                .contains("released")
        );
        Ok::<_, fantoccini::error::CmdError>(())
    };
    let result = run.await;
    let _ = browser.close().await;
    result.expect("the browser steps");

    // The queued mention runs under the new holder, after the stuck one ran
    // again there.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let answered = fake.posts().iter().any(|p| {
            p.body["text"]
                .as_str()
                .is_some_and(|t| t.contains("queued one"))
        });
        if answered {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the queued mention was never answered{}",
            bot.log_tail(30)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
