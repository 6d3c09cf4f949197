//! The echo handlers.

use std::sync::Arc;
use std::time::Duration;

use chat_core::card::{Button, Card};
use chat_core::view::{Input, ModalAnswer, View};
use chat_core::{AdapterError, Platform, Reply, TenantId};
use chat_runtime::{BoxError, Ctx, Event, EventKind};
use chat_slack::SlackAdapter;
use chat_slack::events::{AppHomeOpened, AssistantThread};

/// The `action_id` of a card's button: a click posts `again: <title>`.
pub const AGAIN_ACTION: &str = "echo-again";

/// `echo: <a> | <b> | <c>`: the skipped events' texts in join order, then the
/// event's own, each without a leading @-mention.
pub fn echo_text(event: &Event, skipped: &[Arc<Event>]) -> String {
    let texts: Vec<&str> = skipped
        .iter()
        .map(|e| e.as_ref())
        .chain(std::iter::once(event))
        .map(said)
        .collect();
    format!("echo: {}", texts.join(" | "))
}

/// What an event says to the bot: a message's plain text after its leading
/// mention (of the bot, or of whoever it names first when the bot's own id
/// is not known yet), another event's text as it came.
pub fn said(event: &Event) -> &str {
    let Some(m) = event.message() else {
        return strip_mention(event.text().unwrap_or_default());
    };
    let after = m.text_after_mention();
    if after.len() != m.text.trim_start().len() {
        return after;
    }
    if m.markup.trim_start().starts_with("<@")
        && let Some(first) = m.mentions.first()
    {
        let shown = first.name.as_deref().unwrap_or(&first.user_id);
        if let Some(rest) = after.strip_prefix('@').and_then(|r| r.strip_prefix(shown)) {
            return rest.trim_start();
        }
    }
    // A message built without its markup read (a test's, by hand).
    strip_mention(after)
}

/// Drops a leading Slack mention (`<@U0BOT> `).
fn strip_mention(text: &str) -> &str {
    let t = text.trim_start();
    match t.strip_prefix("<@").and_then(|rest| rest.split_once('>')) {
        Some((_, rest)) => rest.trim_start(),
        None => t,
    }
}

/// The most `attach:` downloads of one file.
pub const ATTACH_LIMIT: u64 = 20 * 1024 * 1024;

/// What a turn's text asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command<'a> {
    /// `card: <title>`.
    Card(&'a str),
    /// `stream: <words…>`.
    Stream(&'a str),
    /// `history:`.
    History,
    /// `file: <text>`.
    File(&'a str),
    /// `attach:`.
    Attach,
    /// Anything else: the echo.
    Echo,
}

/// Reads a turn's text (after its mention).
///
/// ```
/// use examples::echo::{Command, command};
/// assert_eq!(command("<@U1> card: Hello"), Command::Card("Hello"));
/// assert_eq!(command("@agent card: Hello"), Command::Card("Hello"));
/// assert_eq!(command("stream: a b c"), Command::Stream("a b c"));
/// assert_eq!(command("history:"), Command::History);
/// assert_eq!(command("file: notes"), Command::File("notes"));
/// assert_eq!(command("@U1 attach:"), Command::Attach);
/// assert_eq!(command("hello"), Command::Echo);
/// ```
pub fn command(text: &str) -> Command<'_> {
    let mut text = strip_mention(text);
    // A Linear mention: `@agent card: …`.
    if let Some(rest) = text.strip_prefix('@')
        && let Some((_, after)) = rest.split_once(char::is_whitespace)
    {
        text = after.trim_start();
    }
    let arg = |prefix: &str| text.strip_prefix(prefix).map(str::trim);
    if let Some(title) = arg("card:") {
        Command::Card(title)
    } else if let Some(words) = arg("stream:") {
        Command::Stream(words)
    } else if arg("history:").is_some() {
        Command::History
    } else if let Some(content) = arg("file:") {
        Command::File(content)
    } else if arg("attach:").is_some() {
        Command::Attach
    } else {
        Command::Echo
    }
}

/// How echo-bot answers a conversation turn.
#[derive(Debug, Clone, Copy, Default)]
pub struct Echo {
    /// Simulated work before the answer (cancellable).
    pub delay: Duration,
    /// The pause between a `stream:` answer's chunks.
    pub stream_delay: Duration,
    /// Do nothing at all (benchmarks).
    pub noop: bool,
}

impl Echo {
    /// A conversation turn (mention, DM, subscribed message, agent session):
    /// subscribe the thread, simulate `delay` of work (cancellable), then
    /// answer what the text asks for (see [`command`]), by default the echo.
    pub async fn turn(self, ctx: Ctx, event: Event) -> Result<(), BoxError> {
        if self.noop {
            return Ok(());
        }
        if !matches!(event.kind, EventKind::AgentSession(_)) {
            ctx.subscribe().await?;
        }
        if !self.work(&ctx).await {
            return Ok(());
        }
        let thread = ctx.thread();
        match command(said(&event)) {
            Command::Card(title) => {
                let name = author_name(&ctx, &event).await;
                let card = Card::new()
                    .header(title)
                    .section(name)
                    .actions([Button::new(AGAIN_ACTION, "Again").value(title).into()]);
                thread.post(card).await?;
            }
            Command::Stream(words) => {
                let mut chunks = vec!["echo:".to_owned()];
                chunks.extend(words.split_whitespace().map(|w| format!(" {w}")));
                let gap = self.stream_delay;
                let chunks = futures_util::stream::unfold(
                    (chunks.into_iter(), true),
                    move |(mut rest, first)| async move {
                        let chunk = rest.next()?;
                        if !first && !gap.is_zero() {
                            tokio::time::sleep(gap).await;
                        }
                        Some((chunk, (rest, false)))
                    },
                );
                thread.stream(chunks).await?;
            }
            Command::History => {
                let earlier = earlier_messages(&ctx, &event).await?;
                thread.post(format!("history: {earlier}")).await?;
            }
            Command::File(content) => {
                thread
                    .upload("echo.txt", content.as_bytes().to_vec(), None)
                    .await?;
            }
            Command::Attach => {
                let files = event.message().map(|m| m.attachments.as_slice());
                let files = files.unwrap_or_default();
                if files.is_empty() {
                    thread.post("attach: no file").await?;
                }
                for file in files {
                    let bytes = thread.download(file, ATTACH_LIMIT).await?.bytes().await?;
                    let sha = ring::digest::digest(&ring::digest::SHA256, &bytes);
                    let line = format!(
                        "attach: {} {} {}",
                        file.name,
                        bytes.len(),
                        hex::encode(sha.as_ref())
                    );
                    thread.post(line).await?;
                }
            }
            Command::Echo => {
                thread.post(echo_text(&event, ctx.skipped())).await?;
            }
        }
        if let Some(answered) = ctx.data::<Answered>() {
            answered.add(&event, 1 + ctx.skipped().len() as u64);
        }
        Ok(())
    }
}

impl Echo {
    /// The simulated work every handler does first: `delay`, cut short by
    /// the run's cancellation. Returns whether the handler goes on.
    async fn work(self, ctx: &Ctx) -> bool {
        if self.delay.is_zero() {
            return true;
        }
        tokio::select! {
            () = tokio::time::sleep(self.delay) => true,
            () = ctx.cancelled() => false,
        }
    }

    /// An edit of a message that mentions the bot (or of a DM, or in a
    /// thread it follows): `edited: <new text>` in its thread.
    pub async fn edited(self, ctx: Ctx, event: Event) -> Result<(), BoxError> {
        let Some(m) = event.message() else {
            return Ok(());
        };
        let triggers = m.is_mention || m.is_dm || ctx.is_subscribed().await.unwrap_or(false);
        if !triggers || !self.work(&ctx).await {
            return Ok(());
        }
        ctx.thread()
            .post(format!("edited: {}", said(&event)))
            .await?;
        Ok(())
    }

    /// A click on a card's `echo-again` button: `again: <title>` in its
    /// thread.
    pub async fn again(self, ctx: Ctx, event: Event) -> Result<(), BoxError> {
        if !self.work(&ctx).await {
            return Ok(());
        }
        let title = match &event.kind {
            EventKind::Action(a) => a.value.clone().unwrap_or_default(),
            _ => String::new(),
        };
        ctx.thread().post(format!("again: {title}")).await?;
        Ok(())
    }

    /// A reaction added to a message: `reaction: <emoji>` in the message's
    /// thread. A removed reaction is not answered.
    pub async fn reaction(self, ctx: Ctx, event: Event) -> Result<(), BoxError> {
        let EventKind::Reaction(r) = &event.kind else {
            return Ok(());
        };
        if !r.added || !self.work(&ctx).await {
            return Ok(());
        }
        ctx.thread().post(format!("reaction: {}", r.emoji)).await?;
        Ok(())
    }

    /// `/echo-form`: a modal with one text input, carrying the command's
    /// channel to its submission.
    pub async fn form_command(self, ctx: Ctx, event: Event) -> Result<(), BoxError> {
        if !self.work(&ctx).await {
            return Ok(());
        }
        let trigger = ctx
            .trigger()
            .ok_or("a slash command without a trigger_id")?
            .to_owned();
        let view = View::new(FORM_CALLBACK, "Echo form")
            .submit("Echo")
            .metadata(event.thread.channel.clone())
            .input(Input::text("form", "value", "What should I echo?"));
        ctx.thread().open_modal(&trigger, &view).await?;
        Ok(())
    }

    /// The form's submission: `form: <value>` in the channel the command came
    /// from; an empty value keeps the form open with an error.
    pub async fn form_submit(self, ctx: Ctx, event: Event) -> Result<(), BoxError> {
        let EventKind::ModalSubmit(modal) = &event.kind else {
            return Ok(());
        };
        if !self.work(&ctx).await {
            return Ok(());
        }
        let value = modal.value("form", "value").unwrap_or_default().trim();
        if value.is_empty() {
            ctx.answer_modal(&ModalAnswer::errors([("form", "Write something to echo")]))?;
            return Ok(());
        }
        let channel = modal
            .metadata
            .as_deref()
            .ok_or("a form without its channel")?;
        ctx.channel(channel).post(format!("form: {value}")).await?;
        Ok(())
    }

    /// Any slash command, whatever its name: `echo: <text>`, ephemeral — in
    /// the HTTP response, or through the command's `response_url` when the
    /// answer cannot go inline; where the platform shows nothing to one
    /// member only (a Telegram group), in the channel.
    pub async fn command(self, ctx: Ctx, event: Event) -> Result<(), BoxError> {
        if !self.work(&ctx).await {
            return Ok(());
        }
        let text = format!("echo: {}", event.text().unwrap_or_default());
        match ctx.reply_ephemeral(text.clone()).await {
            Err(AdapterError::Unsupported(_)) => {
                ctx.reply_in_channel(text).await?;
            }
            other => {
                other?;
            }
        }
        Ok(())
    }
}

impl Echo {
    /// An assistant thread opened (Slack's AI panel): suggested prompts
    /// ([`SUGGESTED_PROMPTS`]) under the title "Try echo-bot". Messages in
    /// the thread arrive as direct messages and are echoed like mentions.
    pub async fn assistant_started(self, ctx: Ctx, event: Event) -> Result<(), BoxError> {
        if !self.work(&ctx).await {
            return Ok(());
        }
        let Some(started) = AssistantThread::of(&event) else {
            return Ok(());
        };
        let slack = ctx.adapter::<SlackAdapter>().ok_or("not Slack")?;
        let prompts: Vec<chat_slack::Prompt> = SUGGESTED_PROMPTS
            .iter()
            .map(|(title, message)| chat_slack::Prompt::new(*title, *message))
            .collect();
        let thread = chat_core::ThreadRef::new(
            Platform::SLACK,
            event.tenant().as_str(),
            started.channel_id,
            started.thread_ts,
        );
        slack
            .set_suggested_prompts(&thread, Some("Try echo-bot"), &prompts)
            .await?;
        Ok(())
    }

    /// App Home opened: a Home view with how many messages this echo-bot
    /// has answered in the workspace since it started (`Messages answered:
    /// N`).
    pub async fn home(self, ctx: Ctx, event: Event) -> Result<(), BoxError> {
        if !self.work(&ctx).await {
            return Ok(());
        }
        let Some(opened) = AppHomeOpened::of(&event) else {
            return Ok(());
        };
        let slack = ctx.adapter::<SlackAdapter>().ok_or("not Slack")?;
        let count = ctx.data::<Answered>().map_or(0, |a| a.of(&event));
        let card = Card::new()
            .header("echo-bot")
            .section(format!("Messages answered: {count}"));
        slack
            .publish_home(event.tenant(), &opened.user_id, &card)
            .await?;
        Ok(())
    }

    /// `/echo-later <seconds> <text>`: `<text>` posted by the platform
    /// itself in the command's channel `<seconds>` from now; the command is
    /// answered `scheduled: <text> in <seconds>s` (or how to use it).
    pub async fn later(self, ctx: Ctx, event: Event) -> Result<(), BoxError> {
        if !self.work(&ctx).await {
            return Ok(());
        }
        let Some((seconds, text)) = later_args(event.text().unwrap_or_default()) else {
            ctx.reply(Reply::ephemeral(LATER_USAGE));
            return Ok(());
        };
        let at = std::time::SystemTime::now() + Duration::from_secs(seconds);
        let reply = match ctx.channel(&event.thread.channel).schedule(at, text).await {
            Ok(_) => format!("scheduled: {text} in {seconds}s"),
            Err(e) => format!("could not schedule: {e}"),
        };
        ctx.reply(Reply::ephemeral(reply));
        Ok(())
    }
}

/// The slash command that schedules a message.
pub const LATER_COMMAND: &str = "/echo-later";
/// What `/echo-later` answers when it cannot read its arguments.
pub const LATER_USAGE: &str = "usage: /echo-later <seconds> <text>";

/// The suggested prompts of an assistant thread: (title, message).
pub const SUGGESTED_PROMPTS: [(&str, &str); 3] = [
    ("Echo", "hello"),
    ("Card", "card: Hello"),
    ("Stream", "stream: one two three"),
];

/// `<seconds> <text>`, seconds from 1 to 120 days.
///
/// ```
/// use examples::echo::later_args;
/// assert_eq!(later_args("30 stand-up"), Some((30, "stand-up")));
/// assert_eq!(later_args(" 5   lunch  time "), Some((5, "lunch  time")));
/// assert_eq!(later_args("0 now"), None);
/// assert_eq!(later_args("soon later"), None);
/// assert_eq!(later_args("10"), None);
/// ```
pub fn later_args(text: &str) -> Option<(u64, &str)> {
    let (seconds, rest) = text.trim().split_once(char::is_whitespace)?;
    let seconds: u64 = seconds.parse().ok()?;
    let rest = rest.trim();
    ((1..=120 * 24 * 60 * 60).contains(&seconds) && !rest.is_empty()).then_some((seconds, rest))
}

/// How many messages echo-bot answered, per workspace, since it started:
/// registered with `BotBuilder::data`, counted by every conversation turn
/// (an answer to several skipped messages counts each), shown on App Home.
/// Kept in the process: counting in the shared state backend would cost
/// every answer a compare-and-set on one key per workspace.
#[derive(Debug, Default)]
pub struct Answered {
    counts: std::sync::Mutex<std::collections::HashMap<(Platform, TenantId), u64>>,
}

impl Answered {
    fn add(&self, event: &Event, n: u64) {
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *counts
            .entry((event.platform(), event.tenant().clone()))
            .or_default() += n;
    }

    /// The count of `event`'s workspace.
    pub fn of(&self, event: &Event) -> u64 {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&(event.platform(), event.tenant().clone()))
            .copied()
            .unwrap_or(0)
    }
}

/// The author's display name from the platform (`user()`), else the name
/// the event carried, else the id.
async fn author_name(ctx: &Ctx, event: &Event) -> String {
    let Some(author) = event.message().map(|m| &m.author) else {
        return "someone".to_owned();
    };
    match ctx.thread().user(&author.id).await {
        Ok(user) => user.display_name,
        Err(_) => author.name.clone().unwrap_or_else(|| author.id.clone()),
    }
}

/// How many of the thread's messages came before the event's.
async fn earlier_messages(ctx: &Ctx, event: &Event) -> Result<usize, BoxError> {
    let history = ctx.thread().history(10_000).await?;
    let own = event.message().map(|m| m.id.as_str());
    Ok(
        match history.iter().position(|m| Some(m.id.as_str()) == own) {
            Some(at) => at,
            None => history.len(),
        },
    )
}

/// The slash command that opens echo-bot's form.
pub const FORM_COMMAND: &str = "/echo-form";
/// The form's `callback_id`.
pub const FORM_CALLBACK: &str = "echo-form";
