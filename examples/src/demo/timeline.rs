//! The timeline: deliveries, decisions and calls, printed in time order.

use std::time::Duration;

use chat_runtime::BoxError;

use super::Demo;
use super::records::{
    github_detail, linear_detail, slack_detail, telegram_detail, whatsapp_detail,
};
use crate::drive::{Answer, Delivery};

/// One line of the timeline.
pub(super) struct Entry {
    pub(super) at: Duration,
    pub(super) lane: &'static str,
    pub(super) name: String,
    pub(super) id: String,
    pub(super) detail: String,
}

impl Demo<'_> {
    /// The two workspaces' answers in two columns.
    #[allow(clippy::type_complexity)]
    pub(super) fn side_by_side(
        &mut self,
        columns: &[(String, Option<(String, String, String)>)],
    ) -> std::io::Result<()> {
        writeln!(self.out)?;
        let cell = |c: &Option<(String, String, String)>, row: usize| -> String {
            match c {
                Some((place, text, token)) => match row {
                    0 => place.clone(),
                    1 => text.clone(),
                    _ => token.clone(),
                },
                None => "(nothing posted)".to_owned(),
            }
        };
        let mut line = format!("    {:<10}", "");
        for (title, _) in columns {
            line.push_str(&format!(" {title:<38}"));
        }
        writeln!(self.out, "{}", line.trim_end())?;
        for (row, label) in ["posted in", "text", "token"].iter().enumerate() {
            let mut line = format!("    {label:<10}");
            for (_, c) in columns {
                line.push_str(&format!(" {:<38}", cell(c, row)));
            }
            writeln!(self.out, "{}", line.trim_end())?;
        }
        Ok(())
    }

    pub(super) fn entry(
        &mut self,
        at: Duration,
        lane: &'static str,
        name: &str,
        id: &str,
        detail: String,
    ) {
        self.sent.push(Entry {
            at,
            lane,
            name: name.to_owned(),
            id: id.to_owned(),
            detail,
        });
    }

    pub(super) fn heading(
        &mut self,
        n: impl std::fmt::Display,
        title: &str,
    ) -> std::io::Result<()> {
        writeln!(self.out)?;
        writeln!(self.out, "{n}. {title}")
    }
    pub(super) async fn deliver(
        &mut self,
        name: &str,
        event_id: &str,
        text: &str,
        delivery: Delivery,
    ) -> Result<Answer, BoxError> {
        self.deliver_as("slack in", name, event_id, &format!("{text:?}"), delivery)
            .await
    }

    pub(super) async fn deliver_as(
        &mut self,
        lane: &'static str,
        name: &str,
        event_id: &str,
        shown: &str,
        delivery: Delivery,
    ) -> Result<Answer, BoxError> {
        let at = self.t0.elapsed();
        self.delivered.insert(event_id.to_owned(), at);
        let answer = self.bot.deliver(&delivery).await?;
        let mut detail = format!("{shown} -> {}", answer.status);
        if let Some(reply) = answer.json().and_then(|v| v.get("text").cloned()) {
            detail.push_str(&format!(" {reply}"));
        }
        self.sent.push(Entry {
            at,
            lane,
            name: name.to_owned(),
            id: self.label(event_id),
            detail,
        });
        Ok(answer)
    }

    pub(super) fn label(&self, event_id: &str) -> String {
        self.labels
            .get(event_id)
            .cloned()
            .unwrap_or_else(|| event_id.to_owned())
    }

    /// Prints everything not shown yet, in time order.
    pub(super) fn flush(&mut self) -> std::io::Result<()> {
        let view = self.view(self.shown);
        self.shown.ledger += view.ledger.len();
        self.shown.slack += view.slack.len();
        self.shown.linear += view.linear.len();
        self.shown.telegram += view.telegram.len();
        self.shown.whatsapp += view.whatsapp.len();
        let mut entries = std::mem::take(&mut self.sent);
        for line in &view.ledger {
            let detail = match line.ran_ms() {
                Some(ms) => format!("handler ran {ms} ms"),
                None => line.reason.clone(),
            };
            // The ledger has whole milliseconds of the wall clock: never show
            // a decision before its delivery.
            let recorded = Duration::from_millis(line.end_ms.saturating_sub(self.wall0_ms));
            let delivered = self
                .delivered
                .get(&line.event_id)
                .copied()
                .unwrap_or_default();
            entries.push(Entry {
                at: recorded.max(delivered),
                lane: "runtime",
                name: line.outcome.clone(),
                id: self.label(&line.event_id),
                detail,
            });
        }
        for call in &view.slack {
            let mut detail = slack_detail(call);
            if self.show_tokens
                && let Some(token) = call
                    .authorization
                    .as_deref()
                    .and_then(|a| a.strip_prefix("Bearer "))
            {
                detail.push_str(&format!(" [{token}]"));
            }
            entries.push(Entry {
                at: call.at.saturating_duration_since(self.t0),
                lane: "slack out",
                name: call.method.clone(),
                id: String::new(),
                detail,
            });
        }
        for call in &view.linear {
            entries.push(Entry {
                at: call.at.saturating_duration_since(self.t0),
                lane: "linear out",
                name: call.operation.clone(),
                id: String::new(),
                detail: linear_detail(call),
            });
        }
        for call in &view.telegram {
            entries.push(Entry {
                at: call.at.saturating_duration_since(self.t0),
                lane: "tg out",
                name: call.method.clone(),
                id: String::new(),
                detail: telegram_detail(call),
            });
        }
        for call in &view.whatsapp {
            entries.push(Entry {
                at: call.at.saturating_duration_since(self.t0),
                lane: "wa out",
                name: call.endpoint.clone(),
                id: String::new(),
                detail: whatsapp_detail(call),
            });
        }
        for call in &view.github {
            entries.push(Entry {
                at: call.at.saturating_duration_since(self.t0),
                lane: "gh out",
                name: call.endpoint.clone(),
                id: String::new(),
                detail: github_detail(call),
            });
        }
        // At the same instant, what arrived comes first.
        entries.sort_by_key(|e| (e.at, !e.lane.ends_with(" in")));
        for e in entries {
            let line = format!(
                "  {:>8}  {:<10} {:<20} {:<5} {}",
                format!("+{:.3}s", e.at.as_secs_f64()),
                e.lane,
                e.name,
                e.id,
                e.detail
            );
            writeln!(self.out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}
