//! What Slack can do beyond posting: one capability trait each.

use super::*;

#[async_trait]
impl chat_core::Modals for SlackAdapter {
    /// `views.open`.
    async fn open_modal(
        &self,
        tenant: &TenantId,
        trigger: &str,
        view: &chat_core::view::View,
    ) -> Result<String, AdapterError> {
        let view = crate::views::render(view)?;
        let answer = self
            .client_for(tenant)
            .await?
            .open_view(trigger, &view)
            .await?;
        view_id(&answer)
    }

    /// `views.update`.
    async fn update_modal(
        &self,
        tenant: &TenantId,
        view_id: &str,
        view: &chat_core::view::View,
    ) -> Result<(), AdapterError> {
        let view = crate::views::render(view)?;
        self.client_for(tenant)
            .await?
            .update_view(view_id, &view)
            .await
            .map(drop)
    }

    /// `views.push`.
    async fn push_modal(
        &self,
        tenant: &TenantId,
        trigger: &str,
        view: &chat_core::view::View,
    ) -> Result<String, AdapterError> {
        let view = crate::views::render(view)?;
        let answer = self
            .client_for(tenant)
            .await?
            .push_view(trigger, &view)
            .await?;
        view_id(&answer)
    }
}

#[async_trait]
impl chat_core::Streams for SlackAdapter {
    /// `chat.startStream` in the thread (a thread is required: a message
    /// outside one is [`AdapterError::Unsupported`], and the runtime falls
    /// back to a post and edits), for `recipient` in the thread's workspace.
    async fn start_stream(
        &self,
        thread: &ThreadRef,
        text: &str,
        recipient: Option<&str>,
    ) -> Result<MessageRef, AdapterError> {
        require_channel(&thread.channel)?;
        if thread.thread.is_empty() {
            return Err(AdapterError::Unsupported(
                "Slack streams only into a thread",
            ));
        }
        let recipient = recipient
            .filter(|u| !u.is_empty())
            .map(|user| (user, thread.tenant.as_str()));
        let posted = self
            .client_for(&thread.tenant)
            .await?
            .start_stream(&thread.channel, &thread.thread, text, recipient)
            .await?;
        Ok(MessageRef {
            thread: thread.clone(),
            id: posted.ts,
        })
    }

    /// `chat.appendStream`.
    async fn append_stream(&self, stream: &MessageRef, text: &str) -> Result<(), AdapterError> {
        self.client_for(&stream.thread.tenant)
            .await?
            .append_stream(&stream.thread.channel, &stream.id, text)
            .await
    }

    /// `chat.stopStream` (what was appended is the message).
    async fn stop_stream(&self, stream: &MessageRef, full_text: &str) -> Result<(), AdapterError> {
        let _ = full_text;
        self.client_for(&stream.thread.tenant)
            .await?
            .stop_stream(&stream.thread.channel, &stream.id)
            .await
    }

    /// 12,000 characters: Slack's limit on `markdown_text` of
    /// `chat.startStream` and `chat.appendStream`
    /// (<https://docs.slack.dev/reference/methods/chat.appendStream>).
    fn max_stream_text_len(&self) -> Option<usize> {
        Some(crate::client::STREAM_TEXT_MAX)
    }

    /// Four minutes: Slack ends a stream after about five.
    fn stream_lifetime(&self) -> Option<Duration> {
        Some(Duration::from_secs(4 * 60))
    }
}

#[async_trait]
impl chat_core::History for SlackAdapter {
    /// `conversations.replies` (needs the `*:history` scope of the
    /// conversation's type), following Slack's cursor; a message is the bot's
    /// when its `user` or `bot_id` is the bot's. A channel (no thread part)
    /// reads newest first only ([`history_in`](chat_core::History::history_in)).
    async fn history(
        &self,
        thread: &ThreadRef,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, AdapterError> {
        self.history_in(thread, HistoryOrder::OldestFirst, cursor, limit)
            .await
    }

    /// A thread oldest first (`conversations.replies`), a channel newest
    /// first (`conversations.history`); the other orders are Slack's to
    /// refuse, and the runtime turns the native order around.
    async fn history_in(
        &self,
        thread: &ThreadRef,
        order: HistoryOrder,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, AdapterError> {
        require_channel(&thread.channel)?;
        let channel_level = thread.thread.is_empty();
        match (channel_level, order) {
            (false, HistoryOrder::OldestFirst) | (true, HistoryOrder::NewestFirst) => {}
            (false, _) => return Err(AdapterError::Unsupported("newest-first thread history")),
            (true, _) => return Err(AdapterError::Unsupported("oldest-first channel history")),
        }
        let (client, me) = tokio::try_join!(
            self.client_for(&thread.tenant),
            self.identity_of(&thread.tenant)
        )?;
        let answer = if channel_level {
            client.history(&thread.channel, cursor, limit).await?
        } else {
            client
                .replies(&thread.channel, &thread.thread, cursor, limit)
                .await?
        };
        let messages = answer
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| history_message(m, &me))
            .collect();
        let next = answer
            .pointer("/response_metadata/next_cursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        Ok(HistoryPage::new(messages, next))
    }

    /// One call: `conversations.replies` (or `conversations.history` for a
    /// channel) bounded to the message's `ts`.
    async fn message(
        &self,
        thread: &ThreadRef,
        id: &str,
    ) -> Result<Option<HistoryMessage>, AdapterError> {
        require_channel(&thread.channel)?;
        let (client, me) = tokio::try_join!(
            self.client_for(&thread.tenant),
            self.identity_of(&thread.tenant)
        )?;
        let thread_ts = Some(thread.thread.as_str()).filter(|t| !t.is_empty());
        let found = client.message(&thread.channel, thread_ts, id).await?;
        Ok(history_message(&found, &me))
    }
}

#[async_trait]
impl chat_core::Users for SlackAdapter {
    /// `users.info` (needs `users:read`; the email needs `users:read.email`).
    async fn user(&self, tenant: &TenantId, id: &str) -> Result<UserInfo, AdapterError> {
        let user = self.client_for(tenant).await?.user_info(id).await?;
        let profile = &user["profile"];
        let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        let real_name = text(&profile["real_name"]).or_else(|| text(&user["real_name"]));
        let display_name = text(&profile["display_name"])
            .or_else(|| real_name.clone())
            .or_else(|| text(&user["name"]))
            .unwrap_or_else(|| id.to_owned());
        let mut info = UserInfo::new(id, display_name)
            .with_bot(user["is_bot"].as_bool().unwrap_or(false) || id == "USLACKBOT")
            .with_mention(format!("<@{id}>"));
        if let Some(real) = real_name {
            info = info.with_real_name(real);
        }
        if let Some(handle) = text(&user["name"]) {
            info = info.with_handle(handle);
        }
        if let Some(avatar) = ["image_192", "image_72", "image_512", "image_48"]
            .into_iter()
            .find_map(|size| text(&profile[size]))
        {
            info = info.with_avatar_url(avatar);
        }
        if let Some(email) = text(&profile["email"]) {
            info = info.with_email(email);
        }
        Ok(info)
    }
}

#[async_trait]
impl chat_core::Uploads for SlackAdapter {
    /// Slack's external upload (`files.getUploadURLExternal`, the bytes,
    /// `files.completeUploadExternal`) into the thread; needs `files:write`.
    async fn upload(
        &self,
        thread: &ThreadRef,
        name: &str,
        content: Bytes,
        comment: Option<&str>,
    ) -> Result<String, AdapterError> {
        require_channel(&thread.channel)?;
        let thread_ts = Some(thread.thread.as_str()).filter(|t| !t.is_empty());
        self.client_for(&thread.tenant)
            .await?
            .upload_file(&thread.channel, thread_ts, name, content, comment)
            .await
    }

    /// Every file uploaded, then one `files.completeUploadExternal`: one
    /// message with them all.
    async fn upload_files(
        &self,
        thread: &ThreadRef,
        files: Vec<chat_core::FileUpload>,
        comment: Option<&str>,
    ) -> Result<Vec<String>, AdapterError> {
        require_channel(&thread.channel)?;
        let thread_ts = Some(thread.thread.as_str()).filter(|t| !t.is_empty());
        let files = files
            .iter()
            .map(|f| (f.name.as_str(), f.content.clone()))
            .collect();
        self.client_for(&thread.tenant)
            .await?
            .upload_files(&thread.channel, thread_ts, files, comment)
            .await
    }
}

#[async_trait]
impl chat_core::DirectMessages for SlackAdapter {
    /// `conversations.open` (needs `im:write`): the DM channel, without a
    /// thread part.
    async fn open_dm(&self, tenant: &TenantId, user: &str) -> Result<ThreadRef, AdapterError> {
        let channel = self
            .client_for(tenant)
            .await?
            .open_conversation(user)
            .await?;
        Ok(ThreadRef::new(
            Platform::SLACK,
            tenant.as_str(),
            channel,
            "",
        ))
    }
}

#[async_trait]
impl chat_core::Scheduling for SlackAdapter {
    /// `chat.scheduleMessage` in the thread (a card as Block Kit). Slack
    /// refuses a time in the past (`time_in_past`), more than 120 days
    /// ahead (`time_too_far`), and more than 30 messages due within five
    /// minutes in one channel (`restricted_too_many`).
    async fn schedule(
        &self,
        thread: &ThreadRef,
        post_at: u64,
        message: &OutboundMessage,
    ) -> Result<chat_core::ScheduledMessage, AdapterError> {
        require_channel(&thread.channel)?;
        let thread_ts = Some(thread.thread.as_str()).filter(|t| !t.is_empty());
        let (id, at) = self
            .client_for(&thread.tenant)
            .await?
            .schedule_message(&thread.channel, thread_ts, post_at, render(message)?)
            .await?;
        Ok(chat_core::ScheduledMessage::new(id, thread.clone(), at))
    }

    /// `chat.deleteScheduledMessage`.
    async fn cancel_scheduled(
        &self,
        scheduled: &chat_core::ScheduledMessage,
    ) -> Result<(), AdapterError> {
        require_channel(&scheduled.thread.channel)?;
        self.client_for(&scheduled.thread.tenant)
            .await?
            .delete_scheduled_message(&scheduled.thread.channel, &scheduled.id)
            .await
    }
}

#[async_trait]
impl chat_core::Downloads for SlackAdapter {
    /// The file's private URL with the tenant's bot token (needs
    /// `files:read`); see [`SlackClient::download`](crate::SlackClient::download).
    async fn download(
        &self,
        tenant: &TenantId,
        file: &chat_core::Attachment,
        limit: u64,
    ) -> Result<chat_core::Download, AdapterError> {
        self.client_for(tenant)
            .await?
            .download(&file.source, limit)
            .await
    }
}

#[async_trait]
impl chat_core::Ephemeral for SlackAdapter {
    /// `chat.postEphemeral` in the thread (a card as Block Kit).
    async fn post_ephemeral(
        &self,
        thread: &ThreadRef,
        user: &str,
        message: &OutboundMessage,
    ) -> Result<(), AdapterError> {
        require_channel(&thread.channel)?;
        let content = render(message)?;
        let thread_ts = Some(thread.thread.as_str()).filter(|t| !t.is_empty());
        self.client_for(&thread.tenant)
            .await?
            .post_ephemeral(&thread.channel, user, thread_ts, content)
            .await
    }
}

#[async_trait]
impl chat_core::Status for SlackAdapter {
    /// `assistant.threads.setStatus` (assistant threads only); `None` clears
    /// it. A channel-level thread has no status: nothing is sent.
    async fn set_status(
        &self,
        thread: &ThreadRef,
        status: Option<&str>,
    ) -> Result<(), AdapterError> {
        if thread.channel.is_empty() || thread.thread.is_empty() {
            return Ok(());
        }
        self.client_for(&thread.tenant)
            .await?
            .set_assistant_status(&thread.channel, &thread.thread, status.unwrap_or(""))
            .await
    }
}

#[async_trait]
impl chat_core::Unreact for SlackAdapter {
    /// `reactions.remove`; a reaction that is not there is success.
    async fn unreact(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError> {
        require_channel(&message.thread.channel)?;
        self.client_for(&message.thread.tenant)
            .await?
            .remove_reaction(&message.thread.channel, &message.id, emoji)
            .await
    }
}

/// A message of `conversations.replies` / `conversations.history` as a
/// history entry, normalized as a delivery's message is (`None` for an entry
/// without a `ts`).
fn history_message(m: &Value, me: &BotIdentity) -> Option<HistoryMessage> {
    let ts = m.get("ts")?.as_str()?;
    let user = m["user"].as_str().unwrap_or_default();
    let bot_id = m["bot_id"].as_str();
    let is_me = (!user.is_empty() && me.user_id.as_deref() == Some(user))
        || (bot_id.is_some() && me.bot_id.as_deref() == bot_id);
    let mut author = Author::new(if user.is_empty() {
        bot_id.unwrap_or_default()
    } else {
        user
    });
    author.is_bot = bot_id.is_some() || m["subtype"] == "bot_message";
    author.is_me = is_me;
    if let Some(name) = m["user_profile"]["display_name"]
        .as_str()
        .or(m["username"].as_str())
        .filter(|n| !n.is_empty())
    {
        author.name = Some(name.to_owned());
    }
    let text = m["text"].as_str().unwrap_or_default();
    let files: Vec<crate::inbound::payload::SlackFile> = m
        .get("files")
        .and_then(|f| serde_json::from_value(f.clone()).ok())
        .unwrap_or_default();
    let mine: Vec<&str> = me.user_id.as_deref().into_iter().collect();
    let message = crate::inbound::normalized(ts.to_owned(), author, text, &files, &mine);
    Some(HistoryMessage::from_message(message, ts_millis(ts)))
}

/// A Slack `ts` (`seconds.micros`) in milliseconds since the epoch.
fn ts_millis(ts: &str) -> u64 {
    let (secs, frac) = ts.split_once('.').unwrap_or((ts, ""));
    let secs: u64 = secs.parse().unwrap_or(0);
    let millis: u64 = frac.get(..3).and_then(|f| f.parse().ok()).unwrap_or(0);
    secs.saturating_mul(1000).saturating_add(millis)
}

/// The id of the view a `views.*` call answered.
fn view_id(answer: &Value) -> Result<String, AdapterError> {
    answer
        .pointer("/view/id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| AdapterError::Decode("a views answer without view.id".into()))
}
