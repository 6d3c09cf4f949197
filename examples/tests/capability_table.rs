//! The table of what each `Thread` call is on each platform (chat-runtime's
//! `Thread` docs) agrees with what the adapters declare: a capability cell
//! says "unsupported" exactly where the adapter lacks it, and every
//! capability has a row.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chat_core::{Capability, PlatformAdapter};

const THREAD_DOCS: &str = include_str!("../../crates/chat-runtime/src/thread/mod.rs");

/// The rows of the table: (method, capability, Slack, Linear, Telegram,
/// WhatsApp).
fn rows() -> Vec<[String; 6]> {
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
            assert_eq!(cells.len(), 6, "a row has six cells: {row}");
            std::array::from_fn(|i| cells[i].clone())
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

fn telegram() -> chat_telegram::TelegramAdapter {
    chat_telegram::TelegramAdapter::builder()
        .bot_token("1:AA")
        .secret_token("secret")
        .build()
        .unwrap()
}

fn whatsapp() -> chat_whatsapp::WhatsAppAdapter {
    chat_whatsapp::WhatsAppAdapter::builder()
        .app_secret("secret")
        .verify_token("verify")
        .access_token("EAAG")
        .phone_number_id("1")
        .build()
        .unwrap()
}

#[test]
fn the_thread_table_says_unsupported_exactly_where_an_adapter_lacks_the_capability() {
    let rows = rows();
    assert!(rows.len() >= 10, "the table was found: {rows:?}");
    let adapters: [(&str, Box<dyn PlatformAdapter>); 4] = [
        ("slack", Box::new(slack())),
        ("linear", Box::new(linear())),
        ("telegram", Box::new(telegram())),
        ("whatsapp", Box::new(whatsapp())),
    ];
    let mut named = Vec::new();
    for [method, capability, cells @ ..] in &rows {
        if capability == "—" {
            continue;
        }
        let cap = Capability::ALL
            .iter()
            .copied()
            .find(|c| c.name() == capability)
            .unwrap_or_else(|| panic!("{method}: no capability named {capability}"));
        named.push(cap);
        for ((name, adapter), cell) in adapters.iter().zip(cells) {
            assert_eq!(
                cell.starts_with("unsupported"),
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
