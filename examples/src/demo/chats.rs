//! Step 8: Telegram and WhatsApp, where a chat is one conversation.

use std::path::Path;

use chat_runtime::BoxError;
use serde_json::json;

use super::records::Mark;
use super::script::{RAN, SUPERSEDED};
use super::{Demo, Options, SHUTDOWN_DEADLINE};
use crate::drive::{self, EchoBotCommand};

/// The WhatsApp messages of step 8: (wamid, text), sent in one breath.
const WHATSAPP: [(&str, &str); 3] = [
    ("wamid.demo1", "hey"),
    ("wamid.demo2", "quick question"),
    ("wamid.demo3", "how do I reset my password?"),
];
/// Telegram's bot id, of [`drive::TELEGRAM_BOT_TOKEN`].
const BOT_ID: &str = "777000";

impl Demo<'_> {
    pub(super) async fn chats(&mut self, options: &Options, dir: &Path) -> Result<(), BoxError> {
        self.heading(
            8,
            "Telegram and WhatsApp: a chat is one conversation (channel scope), debounced",
        )?;
        self.telegram.set_username(BOT_ID, "echo_bot");
        let ledger = dir.join("ledger-chats.jsonl");
        let command = EchoBotCommand::new(&options.echo_bot)
            .telegram(&self.telegram.api_url())
            .whatsapp(&self.whatsapp.api_url())
            .env("CHAT_DISPATCH", "deferred")
            .env("CHAT_CONCURRENCY", "debounce")
            .env("CHAT_DEBOUNCE_MS", options.window.as_millis().to_string())
            .env("ECHO_LEDGER", ledger.display().to_string())
            .env("REPLICA", "echo-bot-chats")
            .env(
                "SHUTDOWN_DEADLINE_MS",
                SHUTDOWN_DEADLINE.as_millis().to_string(),
            )
            .log_to(dir.join("echo-bot-chats.log"));
        let (command, _) = options.state.configure(command, "chat-demo-chats");
        let bot = command.spawn().await?;
        writeln!(
            self.out,
            "    echo-bot (pid {}) on http://{}: debounce {} ms",
            bot.pid(),
            bot.addr(),
            options.window.as_millis()
        )?;
        writeln!(
            self.out,
            "    fake Telegram Bot API {}",
            self.telegram.api_url()
        )?;
        writeln!(
            self.out,
            "    fake WhatsApp API     {}",
            self.whatsapp.api_url()
        )?;
        self.bot = bot;
        self.ledger = ledger;
        self.show_tokens = false;
        self.shown = Mark {
            ledger: 0,
            ..self.mark()
        };
        let played = self.whatsapp_chat().await;
        let played = match played {
            Ok(()) => self.telegram_group().await,
            Err(e) => Err(e),
        };
        let stopped = self.stop().await;
        played?;
        stopped
    }

    /// Three WhatsApp messages inside the debounce window: one answer.
    async fn whatsapp_chat(&mut self) -> Result<(), BoxError> {
        writeln!(
            self.out,
            "\n  8a. Ada writes three WhatsApp messages in a row"
        )?;
        let wa = drive::whatsapp();
        // Ada wrote: the 24-hour window is open.
        self.whatsapp.user_wrote(wa.phone(), wa.user_id());
        let mark = self.mark();
        let mut answers = Vec::new();
        for (i, (wamid, text)) in WHATSAPP.iter().enumerate() {
            self.labels
                .insert((*wamid).to_owned(), format!("wa{}", i + 1));
            let answer = self
                .deliver_as(
                    "wa in",
                    "text",
                    wamid,
                    &format!("{text:?}"),
                    wa.text(wamid, text).into(),
                )
                .await?;
            answers.push(answer);
        }
        let view = self
            .settle(mark, |v| {
                WHATSAPP.iter().all(|(id, _)| !v.outcomes(id).is_empty())
                    && !v.whatsapp_texts().is_empty()
            })
            .await;
        self.flush()?;
        self.check_status(&answers.iter().collect::<Vec<_>>(), 200)?;
        self.expect_outcomes(
            &view,
            &[
                (WHATSAPP[0].0, SUPERSEDED),
                (WHATSAPP[1].0, SUPERSEDED),
                (WHATSAPP[2].0, RAN),
            ],
        )?;
        let texts = view.whatsapp_texts();
        let wanted = format!("echo: {}", WHATSAPP[2].1);
        self.check(
            texts == [wanted.as_str()],
            &format!("one answer in the chat: {wanted:?}"),
            || format!("WhatsApp got {texts:?}"),
        )
    }

    /// Two users in one Telegram group: Ada mentions the bot, Bo adds to it
    /// inside the window — one conversation, one answer.
    async fn telegram_group(&mut self) -> Result<(), BoxError> {
        writeln!(
            self.out,
            "\n  8b. Ada mentions the bot in a Telegram group; Bo adds a line"
        )?;
        let ada = drive::telegram();
        let bo = drive::telegram().user(43, "bo");
        let mark = self.mark();
        let sent = [
            (&ada, 801, "ada", "@echo_bot is the deploy done?"),
            (&bo, 802, "bo", "and the migration?"),
        ];
        let mut answers = Vec::new();
        for (who, update, name, text) in sent {
            let id = format!("update:{update}");
            self.labels
                .insert(id.clone(), format!("tg{}", update - 800));
            let answer = self
                .deliver_as(
                    "tg in",
                    &format!("message ({name})"),
                    &id,
                    &format!("{text:?}"),
                    who.message(update, update, text).into(),
                )
                .await?;
            answers.push(answer);
        }
        let view = self
            .settle(mark, |v| {
                ["update:801", "update:802"]
                    .iter()
                    .all(|id| !v.outcomes(id).is_empty())
                    && !v.telegram_texts().is_empty()
            })
            .await;
        self.flush()?;
        self.check_status(&answers.iter().collect::<Vec<_>>(), 200)?;
        self.expect_outcomes(&view, &[("update:801", SUPERSEDED), ("update:802", RAN)])?;
        let texts = view.telegram_texts();
        let in_group = view
            .telegram
            .iter()
            .filter(|c| c.method == "sendMessage")
            .all(|c| c.body["chat_id"] == json!(ada.chat_id()));
        self.check(
            texts == ["echo: and the migration?"] && in_group,
            "one answer in the group, to the conversation both wrote in",
            || format!("Telegram got {texts:?}"),
        )
    }
}
