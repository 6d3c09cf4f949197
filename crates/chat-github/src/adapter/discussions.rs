//! Discussions, which the REST API cannot write: comments, edits,
//! deletions, reactions, the status and the history through GraphQL
//! ([Using the GraphQL API for Discussions](https://docs.github.com/en/graphql/guides/using-the-graphql-api-for-discussions)).
//! A discussion comment's [`MessageRef`] id is its node id (`DC_…`).

use chat_core::{AdapterError, HistoryMessage, HistoryPage, MessageRef, Secret, ThreadRef};
use serde_json::{Value, json};

use super::GitHubAdapter;

/// GraphQL's name of each of GitHub's reactions.
pub(crate) fn graphql_reaction(content: &str) -> &'static str {
    match content {
        "+1" => "THUMBS_UP",
        "-1" => "THUMBS_DOWN",
        "laugh" => "LAUGH",
        "confused" => "CONFUSED",
        "heart" => "HEART",
        "hooray" => "HOORAY",
        "rocket" => "ROCKET",
        _ => "EYES",
    }
}

fn owner_name(thread: &ThreadRef) -> Result<(&str, &str), AdapterError> {
    thread
        .channel
        .split_once('/')
        .filter(|(o, n)| !o.is_empty() && !n.is_empty())
        .ok_or_else(|| AdapterError::Invalid(format!("not a repository: {:?}", thread.channel)))
}

fn field<'a>(v: &'a Value, pointer: &str) -> Result<&'a Value, AdapterError> {
    v.pointer(pointer)
        .filter(|v| !v.is_null())
        .ok_or_else(|| AdapterError::Decode(format!("a GraphQL answer without {pointer}").into()))
}

impl GitHubAdapter {
    /// Discussion `number`'s node id.
    async fn discussion_id(
        &self,
        thread: &ThreadRef,
        number: u64,
        token: &Secret,
    ) -> Result<String, AdapterError> {
        let (owner, name) = owner_name(thread)?;
        let data = self
            .client
            .graphql(
                token,
                "query($owner:String!,$name:String!,$number:Int!){repository(owner:$owner,name:$name){discussion(number:$number){id}}}",
                json!({ "owner": owner, "name": name, "number": number }),
            )
            .await?;
        field(&data, "/repository/discussion/id")?
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| AdapterError::Decode("a discussion id that is not text".into()))
    }

    /// Posts `body` in discussion `number`; the comment's node id.
    pub(crate) async fn discussion_post(
        &self,
        thread: &ThreadRef,
        number: u64,
        body: &str,
    ) -> Result<String, AdapterError> {
        let token = self.token_for(&thread.tenant).await?;
        let id = self.discussion_id(thread, number, &token).await?;
        let data = self
            .client
            .graphql(
                &token,
                "mutation($id:ID!,$body:String!){addDiscussionComment(input:{discussionId:$id,body:$body}){comment{id}}}",
                json!({ "id": id, "body": body }),
            )
            .await?;
        field(&data, "/addDiscussionComment/comment/id")?
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| AdapterError::Decode("a comment id that is not text".into()))
    }

    /// Replaces a discussion comment's body.
    pub(crate) async fn discussion_edit(
        &self,
        message: &MessageRef,
        body: &str,
    ) -> Result<(), AdapterError> {
        let token = self.token_for(&message.thread.tenant).await?;
        self.client
            .graphql(
                &token,
                "mutation($id:ID!,$body:String!){updateDiscussionComment(input:{commentId:$id,body:$body}){comment{id}}}",
                json!({ "id": message.id, "body": body }),
            )
            .await
            .map(drop)
    }

    /// Deletes a discussion comment.
    pub(crate) async fn discussion_delete(&self, message: &MessageRef) -> Result<(), AdapterError> {
        let token = self.token_for(&message.thread.tenant).await?;
        self.client
            .graphql(
                &token,
                "mutation($id:ID!){deleteDiscussionComment(input:{id:$id}){comment{id}}}",
                json!({ "id": message.id }),
            )
            .await
            .map(drop)
    }

    /// Adds (or with `add` false, removes) the bot's reaction `content`
    /// (REST's name) on node `subject`.
    pub(crate) async fn node_reaction(
        &self,
        thread: &ThreadRef,
        subject: &str,
        content: &str,
        add: bool,
    ) -> Result<(), AdapterError> {
        let token = self.token_for(&thread.tenant).await?;
        let query = if add {
            "mutation($id:ID!,$content:ReactionContent!){addReaction(input:{subjectId:$id,content:$content}){reaction{content}}}"
        } else {
            "mutation($id:ID!,$content:ReactionContent!){removeReaction(input:{subjectId:$id,content:$content}){reaction{content}}}"
        };
        self.client
            .graphql(
                &token,
                query,
                json!({ "id": subject, "content": graphql_reaction(content) }),
            )
            .await
            .map(drop)
    }

    /// The status on discussion `number`: the bot's `eyes` on it.
    pub(crate) async fn discussion_status(
        &self,
        thread: &ThreadRef,
        number: u64,
        on: bool,
    ) -> Result<(), AdapterError> {
        let token = self.token_for(&thread.tenant).await?;
        let id = self.discussion_id(thread, number, &token).await?;
        self.node_reaction(thread, &id, "eyes", on).await
    }

    /// A page of discussion `number`'s comments, oldest first (`cursor`:
    /// GraphQL's `endCursor`).
    pub(crate) async fn discussion_history(
        &self,
        thread: &ThreadRef,
        number: u64,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, AdapterError> {
        let (owner, name) = owner_name(thread)?;
        let token = self.token_for(&thread.tenant).await?;
        let data = self
            .client
            .graphql(
                &token,
                "query($owner:String!,$name:String!,$number:Int!,$first:Int!,$after:String){repository(owner:$owner,name:$name){discussion(number:$number){comments(first:$first,after:$after){pageInfo{hasNextPage endCursor} nodes{id body createdAt author{login}}}}}}",
                json!({ "owner": owner, "name": name, "number": number,
                        "first": limit.clamp(1, 100), "after": cursor }),
            )
            .await?;
        let comments = field(&data, "/repository/discussion/comments")?;
        let messages = comments["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| {
                let id = c["id"].as_str()?;
                let login = c["author"]["login"].as_str().unwrap_or_default();
                let author = chat_core::Author::new(login)
                    .with_name(login)
                    .with_me(self.identity.is_login(login));
                let body = c["body"].as_str().unwrap_or_default();
                let at_ms = c["createdAt"]
                    .as_str()
                    .and_then(crate::app_auth::unix_secs)
                    .map_or(0, |s| s.saturating_mul(1000));
                let message = chat_core::Message::new(id, author, body).with_markdown(body);
                Some(HistoryMessage::from_message(message, at_ms))
            })
            .collect();
        let next = (comments["pageInfo"]["hasNextPage"] == json!(true))
            .then(|| {
                comments["pageInfo"]["endCursor"]
                    .as_str()
                    .map(str::to_owned)
            })
            .flatten();
        Ok(HistoryPage::new(messages, next))
    }

    /// The bot's comment in discussion `number` carrying `marker`, if any
    /// (its first thousand comments read, oldest first).
    pub(crate) async fn discussion_earlier(
        &self,
        thread: &ThreadRef,
        number: u64,
        marker: &str,
    ) -> Result<Option<String>, AdapterError> {
        let mut cursor: Option<String> = None;
        for _ in 0..super::messaging::MAX_PAGES {
            let page = self
                .discussion_history(thread, number, cursor.as_deref(), 100)
                .await?;
            if let Some(m) = page
                .messages
                .iter()
                .find(|m| m.is_from_bot() && m.text.contains(marker))
            {
                return Ok(Some(m.id.clone()));
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Ok(None)
    }
}
