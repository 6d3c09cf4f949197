//! The table of what each `Thread` call is on each platform (chat-runtime's
//! `Thread` docs) agrees with what the adapters declare: a capability cell
//! says "unsupported" exactly where the adapter lacks it, and every
//! capability has a row.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chat_core::{Capability, PlatformAdapter};

const THREAD_DOCS: &str = include_str!("../../crates/chat-runtime/src/thread/mod.rs");

/// The rows of the table: (method, capability, Slack, Linear).
fn rows() -> Vec<[String; 4]> {
    THREAD_DOCS
        .lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("/// | ["))
        .map(|row| {
            let cells: Vec<String> = row
                .trim_end_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_owned())
                .collect();
            assert_eq!(cells.len(), 4, "a row has four cells: {row}");
            [
                cells[0].clone(),
                cells[1].clone(),
                cells[2].clone(),
                cells[3].clone(),
            ]
        })
        .collect()
}

fn slack() -> chat_slack::SlackAdapter {
    chat_slack::SlackAdapter::builder()
        .signing_secret("secret")
        .bot_token("xoxb-1")
        .build()
        .unwrap()
}

fn linear() -> chat_linear::LinearAdapter {
    chat_linear::LinearAdapter::builder()
        .signing_secret("secret")
        .access_token("lin_oauth")
        .build()
        .unwrap()
}

#[test]
fn the_thread_table_says_unsupported_exactly_where_an_adapter_lacks_the_capability() {
    let rows = rows();
    assert!(rows.len() >= 10, "the table was found: {rows:?}");
    let adapters: [(&str, Box<dyn PlatformAdapter>); 2] =
        [("slack", Box::new(slack())), ("linear", Box::new(linear()))];
    let mut named = Vec::new();
    for [method, capability, slack_cell, linear_cell] in &rows {
        if capability == "—" {
            continue;
        }
        let cap = Capability::ALL
            .iter()
            .copied()
            .find(|c| c.name() == capability)
            .unwrap_or_else(|| panic!("{method}: no capability named {capability}"));
        named.push(cap);
        for ((name, adapter), cell) in adapters.iter().zip([slack_cell, linear_cell]) {
            assert_eq!(
                cell == "unsupported",
                !adapter.capabilities().contains(cap),
                "{method} on {name}: the table says {cell:?}, the adapter declares {:?}",
                adapter.capabilities()
            );
        }
    }
    for cap in Capability::ALL {
        assert!(named.contains(cap), "the table has no row for {cap}");
    }
}
