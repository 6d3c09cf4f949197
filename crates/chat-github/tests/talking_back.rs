//! Comments, review replies, edits, deletions and reactions against the
//! fake GitHub API; installation tokens fetched once for concurrent
//! callers; a repeated run's reply found instead of posted again; rate
//! limits waited out as GitHub asks and never sooner.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use chat_core::{
    AdapterError, EventId, MessageRef, Messaging, OutboundMessage, PostKey, ThreadRef,
};
use chat_github::{GITHUB, GitHubAdapter};
use chat_testkit::{FakeGitHub, GitHubReply};

const KEY: &str = include_str!("fixtures/test-app-key.pem");

async fn with_token() -> (FakeGitHub, GitHubAdapter) {
    let fake = FakeGitHub::start("triage-bot").await;
    let github = GitHubAdapter::builder()
        .webhook_secret("s")
        .token("github_pat_test")
        .login("triage-bot")
        .api_url(fake.api_url())
        .build()
        .unwrap();
    (fake, github)
}

fn thread(t: &str) -> ThreadRef {
    ThreadRef::new(GITHUB, "octo", "octo/hello", t)
}

#[tokio::test]
async fn a_reply_is_a_comment_that_can_be_edited_reacted_to_and_deleted() {
    let (fake, github) = with_token().await;
    let posted = github
        .post(&thread("42"), &OutboundMessage::text("on it"))
        .await
        .unwrap();
    assert_eq!(fake.comments("octo/hello", 42), ["on it"]);
    let call = &fake.calls_of("create_comment")[0];
    assert_eq!(call.token, "github_pat_test");

    github
        .edit(&posted, &OutboundMessage::text("done"))
        .await
        .unwrap();
    assert_eq!(fake.comments("octo/hello", 42), ["done"]);
    github.react(&posted, "eyes").await.unwrap();
    github.react(&posted, ":tada:").await.unwrap();
    // Twice is not an error (GitHub answers 200).
    github.react(&posted, "eyes").await.unwrap();
    assert_eq!(fake.reactions(&posted.id), ["eyes", "hooray"]);
    assert!(matches!(
        github.react(&posted, "party_parrot").await,
        Err(AdapterError::Invalid(_))
    ));

    github.delete(&posted).await.unwrap();
    assert!(fake.comments("octo/hello", 42).is_empty());
}

#[tokio::test]
async fn a_reply_in_a_review_thread_answers_the_threads_first_comment() {
    let (fake, github) = with_token().await;
    let posted = github
        .post(&thread("7/r500"), &OutboundMessage::text("line 3 is fine"))
        .await
        .unwrap();
    assert!(posted.id.starts_with('r'), "{posted:?}");
    let call = &fake.calls_of("reply_review")[0];
    assert_eq!(call.path, "/repos/octo/hello/pulls/7/comments/500/replies");
    github.react(&posted, "+1").await.unwrap();
    assert_eq!(fake.reactions(&posted.id), ["+1"]);
}

#[tokio::test]
async fn a_discussion_is_answered_edited_reacted_to_and_read_through_graphql() {
    use chat_core::{History, Status};
    let (fake, github) = with_token().await;
    let d = thread("d30");
    let key = |attempt| PostKey::new(EventId::new("delivery-d"), 0, attempt);
    let posted = github
        .post(&d, &OutboundMessage::text("thanks").with_post_key(key(1)))
        .await
        .unwrap();
    assert!(posted.id.starts_with("DC_"), "{posted:?}");
    assert_eq!(fake.discussion_comments("octo/hello", 30).len(), 1);
    // A repeated run finds it.
    let again = github
        .post(&d, &OutboundMessage::text("thanks").with_post_key(key(2)))
        .await
        .unwrap();
    assert_eq!(again, posted);
    assert_eq!(fake.calls_of("graphql:addDiscussionComment").len(), 1);

    github
        .edit(&posted, &OutboundMessage::text("thanks!"))
        .await
        .unwrap();
    assert!(fake.discussion_comments("octo/hello", 30)[0].starts_with("thanks!"));
    github.react(&posted, "heart").await.unwrap();
    assert_eq!(fake.reactions_of_node(&posted.id), ["heart"]);

    github.set_status(&d, Some("thinking")).await.unwrap();
    assert_eq!(fake.discussion_reactions(30), ["eyes"]);
    github.set_status(&d, None).await.unwrap();
    assert!(fake.discussion_reactions(30).is_empty());

    let page = github.history(&d, None, 10).await.unwrap();
    assert_eq!(page.messages.len(), 1);
    assert!(page.messages[0].is_from_bot());

    github.delete(&posted).await.unwrap();
    assert!(fake.discussion_comments("octo/hello", 30).is_empty());
}

#[tokio::test]
async fn a_repeated_runs_reply_is_found_instead_of_posted_again() {
    let (fake, github) = with_token().await;
    let key = |attempt| PostKey::new(EventId::new("delivery-1"), 0, attempt);
    let first = github
        .post(
            &thread("42"),
            &OutboundMessage::text("answer").with_post_key(key(1)),
        )
        .await
        .unwrap();
    let again = github
        .post(
            &thread("42"),
            &OutboundMessage::text("answer").with_post_key(key(2)),
        )
        .await
        .unwrap();
    assert_eq!(first, again);
    assert_eq!(fake.calls_of("create_comment").len(), 1);
    // Another reply of the same run is posted.
    github
        .post(
            &thread("42"),
            &OutboundMessage::text("more").with_post_key(PostKey::new(
                EventId::new("delivery-1"),
                1,
                2,
            )),
        )
        .await
        .unwrap();
    assert_eq!(fake.calls_of("create_comment").len(), 2);
}

#[tokio::test]
async fn concurrent_calls_of_an_installation_share_one_token_fetch() {
    let fake = FakeGitHub::start("triage-bot[bot]").await;
    let github = Arc::new(
        GitHubAdapter::builder()
            .webhook_secret("s")
            .app("12345", KEY)
            .app_slug("triage-bot")
            .api_url(fake.api_url())
            .build()
            .unwrap(),
    );
    assert_eq!(github.login(), "triage-bot[bot]");
    let mut tasks = Vec::new();
    for i in 0..8 {
        let github = Arc::clone(&github);
        tasks.push(tokio::spawn(async move {
            let t = ThreadRef::new(GITHUB, "77", "octo/hello", "42");
            github
                .post(&t, &OutboundMessage::text(format!("reply {i}")))
                .await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let fetches = fake.calls_of("access_tokens");
    assert_eq!(fetches.len(), 1);
    assert_eq!(fetches[0].path, "/app/installations/77/access_tokens");
    // The JWT, not an installation token, asks for it.
    assert_eq!(fetches[0].token.split('.').count(), 3);
    let comments = fake.calls_of("create_comment");
    assert_eq!(comments.len(), 8);
    assert!(
        comments.iter().all(|c| c.token == "ghs_77_1"),
        "{comments:?}"
    );
    // A tenant that is no installation is refused before any call.
    let t = ThreadRef::new(GITHUB, "octo", "octo/hello", "42");
    assert!(matches!(
        github.post(&t, &OutboundMessage::text("x")).await,
        Err(AdapterError::Invalid(_))
    ));
}

#[tokio::test]
async fn a_secondary_rate_limit_is_waited_out_for_as_long_as_github_asks() {
    let (fake, github) = with_token().await;
    fake.enqueue(
        "create_comment",
        GitHubReply::secondary_rate_limited(Duration::from_secs(1)),
    );
    github
        .post(&thread("42"), &OutboundMessage::text("patient"))
        .await
        .unwrap();
    let calls = fake.calls_of("create_comment");
    assert_eq!(calls.len(), 2);
    assert!(
        calls[1].at - calls[0].at >= Duration::from_secs(1),
        "{calls:?}"
    );
    assert_eq!(fake.comments("octo/hello", 42), ["patient"]);
}

#[tokio::test]
async fn a_spent_primary_limit_is_not_retried_before_its_reset() {
    let (fake, github) = with_token().await;
    fake.enqueue(
        "create_comment",
        GitHubReply::rate_limited(Duration::from_secs(3600)),
    );
    let r = github
        .post(&thread("42"), &OutboundMessage::text("later"))
        .await;
    assert!(
        matches!(r, Err(AdapterError::RateLimited { retry_after }) if retry_after > Duration::from_secs(3000)),
        "{r:?}"
    );
    assert_eq!(fake.calls_of("create_comment").len(), 1);
}

#[tokio::test]
async fn a_comment_past_githubs_limit_is_refused_before_any_call() {
    let (fake, github) = with_token().await;
    let r = github
        .post(&thread("42"), &OutboundMessage::text("x".repeat(70_000)))
        .await;
    assert!(matches!(r, Err(AdapterError::Invalid(_))), "{r:?}");
    assert!(fake.calls().is_empty());
    let bad = MessageRef {
        thread: thread("42"),
        id: "abc".to_owned(),
    };
    assert!(github.delete(&bad).await.is_err());
}

#[tokio::test]
async fn history_reads_a_conversations_comments_a_page_at_a_time() {
    use chat_core::History;
    let (_fake, github) = with_token().await;
    for i in 0..5 {
        github
            .post(&thread("42"), &OutboundMessage::text(format!("c{i}")))
            .await
            .unwrap();
    }
    github
        .post(&thread("7/r500"), &OutboundMessage::text("in review"))
        .await
        .unwrap();
    let first = github.history(&thread("42"), None, 3).await.unwrap();
    let texts: Vec<&str> = first.messages.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["c0", "c1", "c2"]);
    assert!(
        first
            .messages
            .iter()
            .all(|m| m.is_from_bot() && m.at_ms > 0)
    );
    let second = github
        .history(&thread("42"), first.next.as_deref(), 3)
        .await
        .unwrap();
    let texts: Vec<&str> = second.messages.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["c3", "c4"]);
    assert_eq!(second.next, None);
    let review = github.history(&thread("7/r500"), None, 10).await.unwrap();
    assert_eq!(review.messages.len(), 1);
    assert!(review.messages[0].id.starts_with('r'));
}

#[tokio::test]
async fn the_status_is_an_eyes_reaction_on_the_conversation_taken_back_when_cleared() {
    use chat_core::Status;
    let (fake, github) = with_token().await;
    github
        .set_status(&thread("42"), Some("working…"))
        .await
        .unwrap();
    assert_eq!(fake.issue_reactions(42), ["eyes"]);
    // Twice is one reaction.
    github
        .set_status(&thread("42"), Some("still working…"))
        .await
        .unwrap();
    assert_eq!(fake.issue_reactions(42), ["eyes"]);
    github.set_status(&thread("42"), None).await.unwrap();
    assert!(fake.issue_reactions(42).is_empty());
    // Clearing what is not there is nothing.
    github.set_status(&thread("42"), None).await.unwrap();

    // A review thread's status sits on its first comment.
    let first = github
        .post(&thread("7/r1"), &OutboundMessage::text("x"))
        .await
        .unwrap();
    let root = first.id.trim_start_matches('r').parse::<u64>().unwrap();
    let review = thread(&format!("7/r{root}"));
    github.set_status(&review, Some("reviewing")).await.unwrap();
    assert_eq!(fake.reactions(&first.id), ["eyes"]);
    github.set_status(&review, None).await.unwrap();
    assert!(fake.reactions(&first.id).is_empty());
}

#[tokio::test]
async fn a_check_run_is_created_on_the_pull_requests_head() {
    use chat_github::{CheckConclusion, CheckRun};
    let (fake, github) = with_token().await;
    let run = CheckRun::new("triage", "abc123")
        .completed(CheckConclusion::Success)
        .output("Looks good", "No issue found.");
    let id = github
        .create_check_run(&chat_core::TenantId::new("octo"), "octo/hello", &run)
        .await
        .unwrap();
    assert!(id > 0);
    let call = &fake.calls_of("check_run")[0];
    assert_eq!(call.path, "/repos/octo/hello/check-runs");
    assert_eq!(call.body["status"], "completed");
    assert_eq!(call.body["conclusion"], "success");
    assert_eq!(call.body["output"]["title"], "Looks good");
    let bad = github
        .create_check_run(&chat_core::TenantId::new("octo"), "hello", &run)
        .await;
    assert!(matches!(bad, Err(AdapterError::Invalid(_))));
}

/// An uninstall forgets the installation's token: after it, a call fetches
/// a new one.
#[tokio::test]
async fn an_uninstall_forgets_the_installations_token() {
    use chat_core::Webhook;
    use chat_testkit::signed::GitHubDeliveries;
    let fake = FakeGitHub::start("triage-bot[bot]").await;
    let github = GitHubAdapter::builder()
        .webhook_secret("s")
        .app("12345", KEY)
        .app_slug("triage-bot")
        .api_url(fake.api_url())
        .build()
        .unwrap();
    let t = ThreadRef::new(GITHUB, "77", "octo/hello", "42");
    github
        .post(&t, &OutboundMessage::text("one"))
        .await
        .unwrap();
    github
        .post(&t, &OutboundMessage::text("two"))
        .await
        .unwrap();
    assert_eq!(fake.calls_of("access_tokens").len(), 1);

    let uninstall = GitHubDeliveries::new("s").installation(77).event(
        "installation",
        "d-u",
        serde_json::json!({ "action": "deleted" }),
    );
    let (parts, body) = uninstall.into_parts();
    github.verify(&parts, &body).unwrap();
    let chat_core::Inbound::Event(mut event) = github.parse(&parts, &body).unwrap() else {
        panic!("an installation event");
    };
    assert!(matches!(
        github.resolve(&mut event).await.unwrap(),
        chat_core::Resolution::Uninstalled { .. }
    ));
    github
        .post(&t, &OutboundMessage::text("three"))
        .await
        .unwrap();
    assert_eq!(fake.calls_of("access_tokens").len(), 2);
}

/// As an App, the bot's discussion comments are its own though GraphQL
/// names it without `[bot]`: a repeated run's reply is found.
#[tokio::test]
async fn an_apps_discussion_reply_is_found_on_a_repeated_run() {
    let fake = FakeGitHub::start("triage-bot[bot]").await;
    let github = GitHubAdapter::builder()
        .webhook_secret("s")
        .app("12345", KEY)
        .app_slug("triage-bot")
        .api_url(fake.api_url())
        .build()
        .unwrap();
    let d = ThreadRef::new(GITHUB, "77", "octo/hello", "d30");
    let key = |attempt| PostKey::new(EventId::new("delivery-a"), 0, attempt);
    let first = github
        .post(&d, &OutboundMessage::text("hi").with_post_key(key(1)))
        .await
        .unwrap();
    let again = github
        .post(&d, &OutboundMessage::text("hi").with_post_key(key(2)))
        .await
        .unwrap();
    assert_eq!(first, again);
    assert_eq!(fake.calls_of("graphql:addDiscussionComment").len(), 1);
}
