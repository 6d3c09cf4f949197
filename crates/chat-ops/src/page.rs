//! The inspector's HTML, server-rendered with maud (escaped by default; no
//! JavaScript: the page reloads itself with a `refresh` meta tag).

use std::time::Duration;

use chat_core::{EntryView, HolderView, ScopeView};
use chat_runtime::{OutcomeRecord, RunInfo};
use maud::{DOCTYPE, Markup, html};

use crate::{human, scope_text};

/// What the page shows.
pub(crate) struct Snapshot {
    pub(crate) scopes: Result<Vec<ScopeView>, String>,
    pub(crate) runs: Vec<RunInfo>,
    pub(crate) outcomes: Vec<OutcomeRecord>,
    pub(crate) expiring: Duration,
}

/// What the last release did, shown once above the page.
pub(crate) struct Flash {
    pub(crate) outcome: String,
    pub(crate) scope: String,
    pub(crate) fence: String,
}

const STYLE: &str = "
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d1d1f; }
h1 { font-size: 1.3rem; } h2 { font-size: 1.05rem; margin-top: 1.6rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #ddd; vertical-align: top; }
th { background: #f4f4f6; font-weight: 600; }
code { font-size: 12px; }
.muted { color: #777; }
.expiring { color: #b35c00; font-weight: 600; }
.flash { padding: .6rem .8rem; border-radius: 4px; margin: .8rem 0; }
.released { background: #e4f6e8; } .stale, .failed { background: #fde8e8; }
form.inline { display: inline; }
button { font: inherit; padding: .15rem .6rem; cursor: pointer; }
";

/// The page's head; `refresh`: reload every so often, at `url`.
fn head(title: &str, refresh: Option<(Duration, &str)>) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                @if let Some((every, url)) = refresh {
                    meta http-equiv="refresh" content={ (every.as_secs().max(1)) "; url=" (url) };
                }
                title { (title) }
                style { (STYLE) }
            }
        }
    }
}

/// The login form.
pub(crate) fn login(base: &str, error: Option<&str>) -> String {
    html! {
        (head("chat-rs inspector: log in", None))
        body {
            h1 { "chat-rs inspector" }
            @if let Some(error) = error {
                p.flash.failed id="login-error" { (error) }
            }
            form method="post" action={ (base) "/login" } {
                label for="token" { "Token " }
                input type="password" id="token" name="token" autocomplete="current-password" required;
                " "
                button type="submit" id="login" { "Log in" }
            }
        }
    }
    .into_string()
}

fn entries(label: &str, list: &[EntryView]) -> Markup {
    html! {
        @for e in list {
            div.entry data-kind=(label) {
                span.muted { (label) " " }
                code { (e.event_id.as_str()) }
                span.muted { " thread " (e.thread) ", " (human(e.age)) " ago" }
            }
        }
    }
}

fn release(base: &str, csrf: &str, view: &ScopeView, h: &HolderView) -> Markup {
    html! {
        form.inline.release method="post" action={ (base) "/release" } {
            input type="hidden" name="scope" value=(scope_text(&view.scope));
            input type="hidden" name="fence" value=(h.fence);
            input type="hidden" name="csrf" value=(csrf);
            button type="submit" { "Force-release" }
        }
    }
}

fn holder(base: &str, csrf: &str, view: &ScopeView, h: &HolderView, expiring: Duration) -> Markup {
    html! {
        div.holder {
            code { (h.holder) }
            " fence " code.fence { (h.fence) }
            " · "
            @if h.expires_in < expiring {
                span.expiring { "expires in " (human(h.expires_in)) }
            } @else {
                span { "expires in " (human(h.expires_in)) }
            }
            " "
            (release(base, csrf, view, h))
        }
    }
}

fn scopes_table(base: &str, csrf: &str, views: &[ScopeView], expiring: Duration) -> Markup {
    html! {
        @if views.is_empty() {
            p.muted { "No scope is held and nothing waits." }
        } @else {
            table id="scopes" {
                tr { th { "scope" } th { "holder" } th { "in its care" } }
                @for view in views {
                    tr.scope data-scope=(scope_text(&view.scope)) {
                        td { code { (scope_text(&view.scope)) } }
                        td {
                            @if let Some(h) = &view.holder {
                                (holder(base, csrf, view, h, expiring))
                            }
                            @for s in &view.slots {
                                (holder(base, csrf, view, s, expiring))
                            }
                            @if view.holder.is_none() && view.slots.is_empty() {
                                span.muted { "none: waiting for the sweep" }
                            }
                        }
                        td {
                            (entries("in-flight", &view.in_flight))
                            (entries("queued", &view.queued))
                            (entries("pending", &view.pending))
                            (entries("burst", &view.burst))
                        }
                    }
                }
            }
        }
    }
}

/// The page.
pub(crate) fn inspector(
    base: &str,
    csrf: &str,
    refresh: Duration,
    s: &Snapshot,
    flash: Option<Flash>,
) -> String {
    let expiring: Vec<(&ScopeView, &HolderView)> = s
        .scopes
        .as_ref()
        .map(|views| {
            views
                .iter()
                .flat_map(|v| v.holder.iter().chain(&v.slots).map(move |h| (v, h)))
                .filter(|(_, h)| h.expires_in < s.expiring)
                .collect()
        })
        .unwrap_or_default();
    html! {
        // Reloading drops a release's message: it is shown once.
        (head("chat-rs inspector", Some((refresh, base))))
        body {
            h1 { "chat-rs inspector" }
            form method="post" action={ (base) "/logout" } {
                input type="hidden" name="csrf" value=(csrf);
                button type="submit" { "Log out" }
            }
            p.muted { "Every replica's scopes, from the shared state; this process's runs and outcomes. Reloads every " (human(refresh)) "." }
            @if let Some(f) = flash {
                p.flash.(f.outcome) id="flash" {
                    @match f.outcome.as_str() {
                        "released" => { "Released " code { (f.scope) } " (fence " (f.fence) "): its work goes to the next holder." }
                        "stale" => { "Not released: " code { (f.scope) } " is no longer held with fence " (f.fence) ". Nothing changed." }
                        _ => { "The release of " code { (f.scope) } " failed; see the bot's log." }
                    }
                }
            }
            h2 { "Busy scopes" }
            @match &s.scopes {
                Ok(views) => { (scopes_table(base, csrf, views, s.expiring)) }
                Err(e) => { p.flash.failed { "The state backend did not answer: " (e) } }
            }
            h2 { "Leases about to expire (under " (human(s.expiring)) ")" }
            @if expiring.is_empty() {
                p.muted { "None." }
            } @else {
                table id="expiring" {
                    tr { th { "scope" } th { "holder" } th { "fence" } th { "expires in" } }
                    @for (v, h) in &expiring {
                        tr { td { code { (scope_text(&v.scope)) } } td { code { (h.holder) } } td { (h.fence) } td.expiring { (human(h.expires_in)) } }
                    }
                }
            }
            h2 { "Runs in this process" }
            @if s.runs.is_empty() {
                p.muted { "None." }
            } @else {
                table id="runs" {
                    tr { th { "scope" } th { "event" } th { "running for" } }
                    @for r in &s.runs {
                        tr { td { code { (scope_text(&r.scope)) } } td { code { (r.event_id.as_str()) } } td { (human(r.running_for)) } }
                    }
                }
            }
            h2 { "Last outcomes" }
            @if s.outcomes.is_empty() {
                p.muted { "None yet." }
            } @else {
                table id="outcomes" {
                    tr { th { "outcome" } th { "reason" } th { "event" } th { "thread" } th { "ran for" } }
                    @for o in &s.outcomes {
                        tr {
                            td { (o.outcome.name()) }
                            td { (o.reason) }
                            td { code { (o.event_id.as_str()) } }
                            td { @if let Some(t) = &o.thread { code { (t.to_string()) } } }
                            td { @if let Some(d) = o.ran_for { (human(d)) } }
                        }
                    }
                }
            }
        }
    }
    .into_string()
}
