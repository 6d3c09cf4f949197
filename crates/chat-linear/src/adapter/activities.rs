//! Linear's own API on the adapter (the platform extension): agent
//! activities, session updates, comments and the app user's id.

use chat_core::{AdapterError, TenantId};
use serde_json::Value;
use tokio::time::Instant;

use super::LinearAdapter;
use crate::activity::{Activity, SessionUpdate};
use crate::operations;
use crate::thread::SessionTarget;

impl LinearAdapter {
    /// Sends an activity; `gated` activities first wait for the automatic
    /// thought of their session, so they land after it.
    pub(super) async fn send_activity(
        &self,
        tenant: Option<&TenantId>,
        deadline: Option<Instant>,
        session_id: &str,
        activity: &Activity,
        gated: bool,
    ) -> Result<String, AdapterError> {
        if activity.ephemeral && !activity.content.may_be_ephemeral() {
            return Err(AdapterError::Unsupported(
                "only thoughts and actions can be ephemeral",
            ));
        }
        let id = activity
            .id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        if gated {
            self.inner.first.before_activity(session_id).await;
        }
        let op = operations::agent_activity_create(session_id, activity, &id);
        let auth = self.auth(tenant).await?;
        let data = self
            .inner
            .client
            .execute(&auth, deadline.or(self.deadline), &op)
            .await?;
        Ok(data
            .pointer("/agentActivity/id")
            .and_then(Value::as_str)
            .unwrap_or(&id)
            .to_owned())
    }

    /// Sends an agent activity into a session; returns the activity's id.
    ///
    /// ```no_run
    /// # async fn f(linear: chat_linear::LinearAdapter, event: chat_core::Event) -> Result<(), chat_core::AdapterError> {
    /// use chat_linear::Activity;
    /// linear.activity(&event, &Activity::action("Reading", "src/lib.rs").ephemeral()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn activity(
        &self,
        session: &(impl SessionTarget + ?Sized),
        activity: &Activity,
    ) -> Result<String, AdapterError> {
        let id = session.session_id()?;
        self.send_activity(session.tenant(), None, id, activity, true)
            .await
    }

    /// Sends a `thought`.
    pub async fn thought(
        &self,
        session: &(impl SessionTarget + ?Sized),
        body: &str,
    ) -> Result<String, AdapterError> {
        self.activity(session, &Activity::thought(body)).await
    }

    /// Sends an `action`, with its result when known.
    pub async fn action(
        &self,
        session: &(impl SessionTarget + ?Sized),
        action: &str,
        parameter: &str,
        result: Option<&str>,
    ) -> Result<String, AdapterError> {
        let mut a = Activity::action(action, parameter);
        if let Some(r) = result {
            a = a.with_result(r);
        }
        self.activity(session, &a).await
    }

    /// Sends an `elicitation`: asks the user, and the session waits for input.
    pub async fn elicitation(
        &self,
        session: &(impl SessionTarget + ?Sized),
        body: &str,
    ) -> Result<String, AdapterError> {
        self.activity(session, &Activity::elicitation(body)).await
    }

    /// Sends a `response`: the answer, which completes the session.
    pub async fn response(
        &self,
        session: &(impl SessionTarget + ?Sized),
        body: &str,
    ) -> Result<String, AdapterError> {
        self.activity(session, &Activity::response(body)).await
    }

    /// Sends an `error`.
    pub async fn error(
        &self,
        session: &(impl SessionTarget + ?Sized),
        body: &str,
    ) -> Result<String, AdapterError> {
        self.activity(session, &Activity::error(body)).await
    }

    /// Updates a session: its external URLs, external link or plan. Setting
    /// an external URL also keeps a new session from being shown unresponsive.
    pub async fn update_session(
        &self,
        session: &(impl SessionTarget + ?Sized),
        update: &SessionUpdate,
    ) -> Result<(), AdapterError> {
        let id = session.session_id()?;
        if update.is_empty() {
            return Ok(());
        }
        self.execute(
            session.tenant(),
            &operations::agent_session_update(id, update),
        )
        .await
        .map(drop)
    }

    /// Creates a comment on an issue, as a reply to `parent_id` when given;
    /// returns the comment's id. Uses the credential of
    /// [`for_organization`](Self::for_organization), else the default one.
    pub async fn comment(
        &self,
        issue_id: &str,
        parent_id: Option<&str>,
        body: &str,
    ) -> Result<String, AdapterError> {
        self.create_comment(None, issue_id, parent_id, body, None)
            .await
    }

    pub(super) async fn create_comment(
        &self,
        tenant: Option<&TenantId>,
        issue_id: &str,
        parent_id: Option<&str>,
        body: &str,
        id: Option<String>,
    ) -> Result<String, AdapterError> {
        let id = id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let op = operations::comment_create(issue_id, parent_id, body, &id);
        let data = self.execute(tenant, &op).await?;
        Ok(data
            .pointer("/comment/id")
            .and_then(Value::as_str)
            .unwrap_or(&id)
            .to_owned())
    }

    /// The id of the user the credential acts as: the app user, for an agent
    /// installed with `actor=app`.
    pub async fn viewer_id(&self) -> Result<String, AdapterError> {
        let data = self.execute(None, &operations::viewer()).await?;
        data.get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| AdapterError::Decode("the viewer has no id".into()))
    }
}
