//! The inspector service in process: its token (bearer, login form and
//! session cookie, CSRF), what the page shows of a scope held by a slow
//! handler with a queued event, and the fenced force-release: a stale fence
//! changes nothing, the current one hands the queued event to a new holder.

// Assertions are what these tests are for; setup failures propagate with `?`.
#![allow(clippy::panic_in_result_fn)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use chat_core::{Concurrency, Event, ScopeFilter};
use chat_ops::Inspector;
use chat_runtime::{Bot, Ctx, DispatchOptions, Outcome, OutcomeRecord, RuntimeOptions};
use chat_state_memory::MemoryState;
use chat_testkit::ScriptedAdapter;
use http::{Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use tower::ServiceExt;

type TestResult = Result<(), Box<dyn std::error::Error>>;
type Outcomes = Arc<Mutex<Vec<OutcomeRecord>>>;

const TOKEN: &str = "inspector-test-token-0123456789";

struct Answer {
    status: StatusCode,
    headers: http::HeaderMap,
    body: String,
}

async fn call(
    inspector: &Inspector,
    request: Request<Full<Bytes>>,
) -> Result<Answer, Box<dyn std::error::Error>> {
    let response = inspector.clone().oneshot(request).await?;
    let (parts, body) = response.into_parts();
    let body = String::from_utf8(body.collect().await?.to_bytes().to_vec())?;
    Ok(Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}

fn get(path: &str, auth: Option<(&str, &str)>) -> Result<Request<Full<Bytes>>, http::Error> {
    let mut r = Request::get(path);
    if let Some((k, v)) = auth {
        r = r.header(k, v);
    }
    r.body(Full::default())
}

fn post(
    path: &str,
    form: &[(&str, &str)],
    auth: Option<(&str, &str)>,
) -> Result<Request<Full<Bytes>>, Box<dyn std::error::Error>> {
    let mut r =
        Request::post(path).header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some((k, v)) = auth {
        r = r.header(k, v);
    }
    Ok(r.body(Full::new(Bytes::from(serde_urlencoded::to_string(form)?)))?)
}

/// A bot whose handler blocks the first run of event `slow` until cancelled;
/// every other run returns at once. Outcomes are collected.
fn bot(adapter: &ScriptedAdapter) -> Result<(Bot, Outcomes), Box<dyn std::error::Error>> {
    bot_on(adapter, Arc::new(MemoryState::new()))
}

fn bot_on(
    adapter: &ScriptedAdapter,
    state: Arc<dyn chat_core::StateBackend>,
) -> Result<(Bot, Outcomes), Box<dyn std::error::Error>> {
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&outcomes);
    let bot = Bot::builder()
        .state_arc(state)
        .adapter(adapter.clone())
        .options(
            RuntimeOptions::default()
                .dispatch(DispatchOptions::deferred(Duration::from_secs(60)))
                .concurrency(Concurrency::queue()),
        )
        .observer(move |r: &OutcomeRecord| {
            seen.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(r.clone());
        })
        .on_new_mention(|ctx: Ctx, e: Event| async move {
            if e.id.as_str() == "slow" && ctx.attempt() == 1 {
                ctx.cancelled().await;
            }
            Ok::<_, chat_runtime::BoxError>(())
        })
        .on_subscribed_message(
            |_ctx: Ctx, _e: Event| async move { Ok::<_, chat_runtime::BoxError>(()) },
        )
        .build()?;
    Ok((bot, outcomes))
}

fn ran(outcomes: &Mutex<Vec<OutcomeRecord>>, id: &str) -> bool {
    outcomes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|r| r.event_id.as_str() == id && r.outcome == Outcome::Ran)
}

/// Waits (up to 10 s) until event `id` has run, else fails with `why`.
async fn wait_ran(outcomes: &Mutex<Vec<OutcomeRecord>>, id: &str, why: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !ran(outcomes, id) {
        assert!(tokio::time::Instant::now() < deadline, "{why}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn the_token_guards_every_route_and_the_login_sets_a_strict_cookie() -> TestResult {
    let adapter = ScriptedAdapter::new("scripted");
    let (bot, _) = bot(&adapter)?;
    assert!(Inspector::builder(bot.clone(), "short").build().is_err());
    let inspector = Inspector::builder(bot.clone(), TOKEN).build()?;

    let page = call(&inspector, get("/", None)?).await?;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("name=\"token\""), "{}", page.body);
    assert!(!page.body.contains("Busy scopes"));
    for path in ["/scopes.json", "/nothing"] {
        assert_eq!(
            call(&inspector, get(path, None)?).await?.status,
            StatusCode::UNAUTHORIZED
        );
    }
    let wrong = call(
        &inspector,
        post("/login", &[("token", "not-the-token-at-all")], None)?,
    )
    .await?;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.headers.get(header::SET_COOKIE).is_none());

    let login = call(&inspector, post("/login", &[("token", TOKEN)], None)?).await?;
    assert_eq!(login.status, StatusCode::SEE_OTHER);
    let cookie = login
        .headers
        .get(header::SET_COOKIE)
        .ok_or("no cookie")?
        .to_str()?;
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/inspect"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(
        !cookie.contains(TOKEN),
        "the cookie is not the token: {cookie}"
    );
    let session = cookie.split(';').next().ok_or("empty cookie")?;
    let page = call(&inspector, get("/", Some(("cookie", session)))?).await?;
    assert!(page.body.contains("Busy scopes"), "{}", page.body);
    assert!(page.body.contains("http-equiv=\"refresh\""));
    let forged = call(&inspector, get("/", Some(("cookie", "chat_inspect=00ff")))?).await?;
    assert!(!forged.body.contains("Busy scopes"));

    let bearer = format!("Bearer {TOKEN}");
    let json = call(
        &inspector,
        get("/scopes.json", Some(("authorization", &bearer)))?,
    )
    .await?;
    assert_eq!(json.status, StatusCode::OK);
    assert_eq!(json.body, "[]");
    // A form from a page that is not ours (no CSRF value) does nothing.
    let csrf_less = call(
        &inspector,
        post(
            "/release",
            &[("scope", "scripted:T1:C1:t:1"), ("fence", "1")],
            Some(("cookie", session)),
        )?,
    )
    .await?;
    assert_eq!(csrf_less.status, StatusCode::FORBIDDEN);
    Ok(())
}

/// Logs in; returns the `Set-Cookie` value and the `name=value` part.
async fn login(
    inspector: &Inspector,
    headers: &[(&str, &str)],
) -> Result<(String, String), Box<dyn std::error::Error>> {
    let mut r = post("/login", &[("token", TOKEN)], None)?;
    for (k, v) in headers {
        r.headers_mut().insert(
            header::HeaderName::from_bytes(k.as_bytes())?,
            header::HeaderValue::from_str(v)?,
        );
    }
    let answer = call(inspector, r).await?;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    let cookie = answer
        .headers
        .get(header::SET_COOKIE)
        .ok_or("no cookie")?
        .to_str()?
        .to_owned();
    let session = cookie.split(';').next().ok_or("empty cookie")?.to_owned();
    Ok((cookie, session))
}

async fn signed_in(
    inspector: &Inspector,
    session: &str,
) -> Result<bool, Box<dyn std::error::Error>> {
    let page = call(inspector, get("/", Some(("cookie", session)))?).await?;
    Ok(page.body.contains("Busy scopes"))
}

/// Every login gets a session of its own, which expires with its TTL and
/// ends at logout (on every replica sharing the state), with the page's CSRF
/// value its own too; the cookie is `Secure` behind a proxy that says the
/// request came over https.
#[tokio::test(start_paused = true)]
async fn each_login_is_a_session_of_its_own_that_expires_and_logs_out() -> TestResult {
    let adapter = ScriptedAdapter::new("scripted");
    let (bot, _) = bot(&adapter)?;
    let inspector = Inspector::builder(bot.clone(), TOKEN)
        .session_ttl(Duration::from_secs(3600))
        .build()?;
    let (cookie_a, a) = login(&inspector, &[]).await?;
    let (_, b) = login(&inspector, &[]).await?;
    assert_ne!(a, b, "two logins, two sessions");
    assert!(cookie_a.contains("Max-Age=3600"), "{cookie_a}");
    assert!(!cookie_a.contains("Secure"), "plain http: {cookie_a}");
    let (secure, _) = login(&inspector, &[("x-forwarded-proto", "https")]).await?;
    assert!(secure.contains("; Secure"), "{secure}");
    assert!(signed_in(&inspector, &a).await? && signed_in(&inspector, &b).await?);
    // Another replica's inspector on the same state knows the session.
    let other = Inspector::builder(bot.clone(), TOKEN).build()?;
    assert!(signed_in(&other, &a).await?);

    // Logout needs the session's own CSRF value; then the session is gone.
    let page = call(&inspector, get("/", Some(("cookie", &a)))?).await?;
    let csrf = page
        .body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .ok_or("no csrf field")?
        .to_owned();
    let page_b = call(&inspector, get("/", Some(("cookie", &b)))?).await?;
    assert!(
        !page_b.body.contains(&csrf),
        "a session's CSRF value is its own"
    );
    let logout = call(
        &inspector,
        post("/logout", &[("csrf", &csrf)], Some(("cookie", &a)))?,
    )
    .await?;
    assert!(
        logout
            .headers
            .get(header::SET_COOKIE)
            .and_then(|c| c.to_str().ok())
            .is_some_and(|c| c.contains("Max-Age=0")),
        "the cookie is cleared"
    );
    assert!(!signed_in(&inspector, &a).await?);
    assert!(signed_in(&inspector, &b).await?);

    // A session lasts its TTL.
    tokio::time::advance(Duration::from_secs(3601)).await;
    assert!(!signed_in(&inspector, &b).await?);
    Ok(())
}

/// Past ten wrong tokens in a minute, logins are refused (even with the
/// right token) until the minute ends; bearer tools are unaffected.
#[tokio::test]
async fn wrong_tokens_past_the_limit_refuse_logins_for_the_minute() -> TestResult {
    let adapter = ScriptedAdapter::new("scripted");
    let (bot, _) = bot(&adapter)?;
    let inspector = Inspector::builder(bot, TOKEN)
        .max_failed_logins(3)
        .build()?;
    for _ in 0..3 {
        let wrong = call(
            &inspector,
            post("/login", &[("token", "wrong-token-xxxxxxxx")], None)?,
        )
        .await?;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    }
    let right = call(&inspector, post("/login", &[("token", TOKEN)], None)?).await?;
    assert_eq!(right.status, StatusCode::TOO_MANY_REQUESTS);
    let bearer = format!("Bearer {TOKEN}");
    let json = call(
        &inspector,
        get("/scopes.json", Some(("authorization", &bearer)))?,
    )
    .await?;
    assert_eq!(json.status, StatusCode::OK);
    Ok(())
}

#[tokio::test]
async fn a_stale_fence_is_refused_and_the_current_one_hands_the_queue_over() -> TestResult {
    let adapter = ScriptedAdapter::new("scripted");
    let (bot, outcomes) = bot(&adapter)?;
    let inspector = Inspector::builder(bot.clone(), TOKEN).build()?;
    let bearer = format!("Bearer {TOKEN}");
    let auth = Some(("authorization", bearer.as_str()));

    let slow = adapter.mention("T1", "C1", "100.1", "slow", "take your time");
    let next = adapter.mention("T1", "C1", "100.1", "next", "and then me");
    for event in [&slow, &next] {
        let answer = bot.handle("scripted", adapter.request(event)).await;
        assert_eq!(answer.status(), StatusCode::OK);
    }
    let scope = slow.thread.thread_scope();
    let view = bot
        .state()
        .busy_scopes(&ScopeFilter::all(), 10)
        .await?
        .into_iter()
        .next()
        .ok_or("no busy scope")?;
    let fence = view.holder.as_ref().ok_or("not held")?.fence;

    let page = call(&inspector, get("/", auth)?).await?;
    for shown in [
        scope.to_string(),
        fence.to_string(),
        "slow".to_owned(),
        "next".to_owned(),
        "queued".to_owned(),
    ] {
        assert!(
            page.body.contains(&shown),
            "{shown} not on the page:\n{}",
            page.body
        );
    }
    assert!(page.body.contains("Runs in this process"));

    let scope_text = scope.to_string();
    let stale = (fence + 1).to_string();
    let refused = call(
        &inspector,
        post(
            "/release",
            &[("scope", &scope_text), ("fence", &stale)],
            auth,
        )?,
    )
    .await?;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert_eq!(
        bot.state()
            .inspect_scope(&scope)
            .await?
            .and_then(|v| v.holder)
            .map(|h| h.fence),
        Some(fence)
    );
    assert!(!ran(&outcomes, "next"));

    let current = fence.to_string();
    let released = call(
        &inspector,
        post(
            "/release",
            &[("scope", &scope_text), ("fence", &current)],
            auth,
        )?,
    )
    .await?;
    assert_eq!(released.status, StatusCode::OK, "{}", released.body);
    wait_ran(&outcomes, "next", "the queued event never ran").await;
    // The stuck event ran again under the new holder.
    assert!(ran(&outcomes, "slow"));
    bot.shutdown(Duration::from_secs(1)).await;
    Ok(())
}

/// Two replicas on one Redis: the inspector of the one that holds nothing
/// sees the scope the other holds, and its force-release moves the work to
/// itself at once.
#[tokio::test]
async fn an_inspector_sees_and_releases_another_replicas_scope_on_redis() -> TestResult {
    let Some(url) = chat_test_redis::single_url() else {
        return Ok(());
    };
    let prefix = chat_test_redis::unique_prefix();
    let redis = || async {
        chat_state_redis::RedisState::builder()
            .url(url.as_str())
            .prefix(prefix.as_str())
            .build()
            .await
    };
    let adapter = ScriptedAdapter::new("scripted");
    let (holder, _) = bot_on(&adapter, Arc::new(redis().await?))?;
    let (other, outcomes) = bot_on(&adapter, Arc::new(redis().await?))?;
    let inspector = Inspector::builder(other.clone(), TOKEN).build()?;
    let bearer = format!("Bearer {TOKEN}");
    let auth = Some(("authorization", bearer.as_str()));

    let tenant = format!("T{}", &prefix[prefix.len() - 6..]);
    let slow = adapter.mention(&tenant, "C1", "7.1", "slow", "take your time");
    let next = adapter.mention(&tenant, "C1", "7.1", "next", "and then me");
    for event in [&slow, &next] {
        let answer = holder.handle("scripted", adapter.request(event)).await;
        assert_eq!(answer.status(), StatusCode::OK);
    }
    let query = format!("/scopes.json?platform=scripted&tenant={tenant}");
    let listed = call(&inspector, get(&query, auth)?).await?;
    let listed: serde_json::Value = serde_json::from_str(&listed.body)?;
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["queued"][0]["event_id"], "next");
    let fence = listed[0]["holder"]["fence"].as_u64().ok_or("no fence")?;
    let scope = slow.thread.thread_scope().to_string();
    assert!(other.runs().is_empty(), "the other replica runs nothing");

    let released = call(
        &inspector,
        post(
            "/release",
            &[("scope", &scope), ("fence", &fence.to_string())],
            auth,
        )?,
    )
    .await?;
    assert_eq!(released.status, StatusCode::OK, "{}", released.body);
    wait_ran(
        &outcomes,
        "next",
        "the queued event never ran on the releasing replica",
    )
    .await;
    assert!(ran(&outcomes, "slow"), "the stuck event ran again there");
    other.shutdown(Duration::from_secs(1)).await;
    holder.shutdown(Duration::from_millis(100)).await;
    Ok(())
}
