//! Slack's own surfaces on the adapter: the App Home tab and the AI
//! assistant's panel (suggested prompts, title). The portable calls are on
//! the runtime's `Thread`; these are Slack's alone.

use chat_core::card::Card;

use super::*;

/// The most suggested prompts Slack shows in an assistant thread.
pub const MAX_SUGGESTED_PROMPTS: usize = 4;

/// One suggested prompt of an assistant thread: the `title` shown, and the
/// `message` sent as the user's when they pick it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Prompt {
    /// What the button says.
    pub title: String,
    /// What it sends.
    pub message: String,
}

impl Prompt {
    /// A prompt titled `title` that sends `message`.
    pub fn new(title: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            message: message.into(),
        }
    }
}

impl SlackAdapter {
    /// Publishes `user`'s App Home tab (`views.publish`): the card rendered
    /// as Block Kit, checked against Slack's limits before the call. Call it
    /// from a handler of [`routes::app_home_opened`](crate::routes::app_home_opened)
    /// (and whenever what it shows changes).
    ///
    /// # Errors
    /// [`AdapterError::Invalid`] for a card Slack cannot show; Slack's.
    pub async fn publish_home(
        &self,
        tenant: &TenantId,
        user: &str,
        card: &Card,
    ) -> Result<(), AdapterError> {
        let blocks = crate::blocks::render(card)?;
        let view = serde_json::json!({ "type": "home", "blocks": blocks });
        self.client_for(tenant)
            .await?
            .publish_view(user, &view)
            .await
            .map(drop)
    }

    /// Sets the suggested prompts of an assistant thread
    /// (`assistant.threads.setSuggestedPrompts`): at most
    /// [`MAX_SUGGESTED_PROMPTS`], under an optional `title`.
    ///
    /// # Errors
    /// [`AdapterError::Invalid`] for none or more than four prompts, or an
    /// empty title or message (checked before the call); Slack's.
    pub async fn set_suggested_prompts(
        &self,
        thread: &ThreadRef,
        title: Option<&str>,
        prompts: &[Prompt],
    ) -> Result<(), AdapterError> {
        require_channel(&thread.channel)?;
        if prompts.is_empty() || prompts.len() > MAX_SUGGESTED_PROMPTS {
            return Err(AdapterError::Invalid(format!(
                "an assistant thread takes 1 to {MAX_SUGGESTED_PROMPTS} suggested prompts, not {}",
                prompts.len()
            )));
        }
        if prompts
            .iter()
            .any(|p| p.title.trim().is_empty() || p.message.trim().is_empty())
        {
            return Err(AdapterError::Invalid(
                "a suggested prompt needs a title and a message".to_owned(),
            ));
        }
        let pairs: Vec<(String, String)> = prompts
            .iter()
            .map(|p| (p.title.clone(), p.message.clone()))
            .collect();
        self.client_for(&thread.tenant)
            .await?
            .set_suggested_prompts(&thread.channel, &thread.thread, title, &pairs)
            .await
    }

    /// Sets the title of an assistant thread (`assistant.threads.setTitle`),
    /// shown in the app's history of threads.
    ///
    /// # Errors
    /// [`AdapterError::Invalid`] for an empty title; Slack's.
    pub async fn set_title(&self, thread: &ThreadRef, title: &str) -> Result<(), AdapterError> {
        require_channel(&thread.channel)?;
        if title.trim().is_empty() {
            return Err(AdapterError::Invalid(
                "an assistant thread's title cannot be empty".to_owned(),
            ));
        }
        self.client_for(&thread.tenant)
            .await?
            .set_thread_title(&thread.channel, &thread.thread, title)
            .await
    }
}
