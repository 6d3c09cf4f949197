//! Posting: post, edit, delete, react.

use super::*;

#[async_trait]
impl chat_core::Messaging for SlackAdapter {
    /// `chat.postMessage` in the thread (`thread_ts`), or as a new message
    /// when the thread part is empty (then the returned reference's thread is
    /// the new message).
    ///
    /// A reply of a handler run ([`PostKey`](chat_core::PostKey)) carries
    /// message metadata (`chat_rs_reply`: the event id and the reply's
    /// position). On a repeated run (attempt above 1) the adapter first reads
    /// the thread (`conversations.replies` with `include_all_metadata`, which
    /// needs the history scopes; for a post into the channel itself, its
    /// latest 1,000 messages with `conversations.history`) and returns the
    /// reply an earlier attempt posted instead of posting it again; if it
    /// cannot be read, it posts (at least once).
    async fn post(
        &self,
        thread: &ThreadRef,
        message: &OutboundMessage,
    ) -> Result<MessageRef, AdapterError> {
        require_channel(&thread.channel)?;
        let content = render(message)?;
        let thread_ts = Some(thread.thread.as_str()).filter(|t| !t.is_empty());
        let client = self.client_for(&thread.tenant).await?;
        if let Some(key) = message.post_key.as_ref().filter(|k| k.attempt > 1) {
            let earlier = match thread_ts {
                Some(ts) => client.find_reply(&thread.channel, ts, key).await,
                None => client.find_channel_reply(&thread.channel, key).await,
            };
            match earlier {
                Ok(Some(earlier)) => {
                    let mut thread = thread.clone();
                    if thread.thread.is_empty() {
                        thread.thread.clone_from(&earlier.ts);
                    }
                    return Ok(MessageRef {
                        thread,
                        id: earlier.ts,
                    });
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "slack: could not read the thread for an earlier reply; posting");
                }
            }
        }
        let post = async {
            match &message.post_key {
                Some(key) => {
                    client
                        .post_reply(&thread.channel, thread_ts, content.clone(), key)
                        .await
                }
                None => {
                    client
                        .post_message(&thread.channel, thread_ts, content.clone())
                        .await
                }
            }
        };
        let ((), posted) = tokio::join!(self.learn_identity(), post);
        let posted = posted?;
        let mut thread = thread.clone();
        if thread.thread.is_empty() {
            thread.thread.clone_from(&posted.ts);
        }
        Ok(MessageRef {
            thread,
            id: posted.ts,
        })
    }

    /// `chat.update`.
    async fn edit(
        &self,
        message: &MessageRef,
        content: &OutboundMessage,
    ) -> Result<(), AdapterError> {
        require_channel(&message.thread.channel)?;
        self.client_for(&message.thread.tenant)
            .await?
            .update_message(&message.thread.channel, &message.id, render(content)?)
            .await
    }

    /// `chat.delete`.
    async fn delete(&self, message: &MessageRef) -> Result<(), AdapterError> {
        require_channel(&message.thread.channel)?;
        self.client_for(&message.thread.tenant)
            .await?
            .delete_message(&message.thread.channel, &message.id)
            .await
    }

    /// `<@U…>`: Slack's mention, which notifies the user.
    fn mention(&self, user_id: &str) -> Option<String> {
        Some(format!("<@{user_id}>"))
    }

    /// `reactions.add`; already having reacted is success.
    async fn react(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError> {
        require_channel(&message.thread.channel)?;
        self.client_for(&message.thread.tenant)
            .await?
            .add_reaction(&message.thread.channel, &message.id, emoji)
            .await
    }
}
