//! How Linear conversations map onto [`ThreadRef`]s.
//!
//! Both kinds of conversation live on an issue, so the thread string says which
//! kind it is and therefore which API answers in it:
//!
//! | conversation | `tenant` | `channel` | `thread` | `post` sends |
//! |---|---|---|---|---|
//! | agent session | organization id | issue id (the session id when the session has no issue) | `session:{session id}` | a `response` activity |
//! | comment thread | organization id | issue id | `comment:{root comment id}` | a reply comment (`parentId` = root) |
//!
//! ```
//! use chat_linear::thread::{self, LinearThread};
//!
//! let t = thread::session_thread("org-1", Some("issue-1"), "session-1");
//! assert_eq!(t.to_string(), "linear:org-1:issue-1:session:session-1");
//! assert_eq!(LinearThread::of(&t), Some(LinearThread::AgentSession { session_id: "session-1" }));
//!
//! let c = thread::comment_thread("org-1", "issue-1", "comment-root");
//! assert_eq!(
//!     LinearThread::of(&c),
//!     Some(LinearThread::Comment { issue_id: "issue-1", root_comment_id: "comment-root" })
//! );
//! ```

use chat_core::{AdapterError, Event, Platform, TenantId, ThreadRef};

const SESSION_PREFIX: &str = "session:";
const COMMENT_PREFIX: &str = "comment:";

/// What a Linear [`ThreadRef`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinearThread<'a> {
    /// An agent session: answered with agent activities.
    AgentSession {
        /// The session's id.
        session_id: &'a str,
    },
    /// A comment thread on an issue: answered with reply comments.
    Comment {
        /// The issue's id.
        issue_id: &'a str,
        /// The id of the thread's root comment.
        root_comment_id: &'a str,
    },
}

impl<'a> LinearThread<'a> {
    /// Reads a thread reference; `None` when it is not a Linear thread in this
    /// encoding.
    pub fn of(thread: &'a ThreadRef) -> Option<Self> {
        if thread.platform != Platform::LINEAR {
            return None;
        }
        if let Some(id) = thread.thread.strip_prefix(SESSION_PREFIX) {
            return (!id.is_empty()).then_some(Self::AgentSession { session_id: id });
        }
        if let Some(id) = thread.thread.strip_prefix(COMMENT_PREFIX) {
            return (!id.is_empty() && !thread.channel.is_empty()).then_some(Self::Comment {
                issue_id: &thread.channel,
                root_comment_id: id,
            });
        }
        None
    }
}

/// The thread of an agent session. `issue_id` is the session's issue, when it
/// has one.
pub fn session_thread(
    organization_id: impl Into<TenantId>,
    issue_id: Option<&str>,
    session_id: &str,
) -> ThreadRef {
    let channel = issue_id.filter(|i| !i.is_empty()).unwrap_or(session_id);
    ThreadRef::new(
        Platform::LINEAR,
        organization_id,
        channel,
        format!("{SESSION_PREFIX}{session_id}"),
    )
}

/// The thread of a comment and its replies, on an issue.
pub fn comment_thread(
    organization_id: impl Into<TenantId>,
    issue_id: &str,
    root_comment_id: &str,
) -> ThreadRef {
    ThreadRef::new(
        Platform::LINEAR,
        organization_id,
        issue_id,
        format!("{COMMENT_PREFIX}{root_comment_id}"),
    )
}

/// Names an agent session for the activity methods of
/// [`LinearAdapter`](crate::LinearAdapter): a session's [`ThreadRef`] or
/// [`Event`], or the session id itself.
pub trait SessionTarget {
    /// The session's id; an error for a thread that is not an agent session.
    fn session_id(&self) -> Result<&str, AdapterError>;

    /// The workspace, when the target knows it (it picks the credential).
    fn tenant(&self) -> Option<&TenantId> {
        None
    }
}

impl SessionTarget for ThreadRef {
    fn session_id(&self) -> Result<&str, AdapterError> {
        match LinearThread::of(self) {
            Some(LinearThread::AgentSession { session_id }) => Ok(session_id),
            _ => Err(AdapterError::Unsupported(
                "the thread is not a Linear agent session",
            )),
        }
    }

    fn tenant(&self) -> Option<&TenantId> {
        Some(&self.tenant)
    }
}

impl SessionTarget for Event {
    fn session_id(&self) -> Result<&str, AdapterError> {
        self.thread.session_id()
    }

    fn tenant(&self) -> Option<&TenantId> {
        Some(&self.thread.tenant)
    }
}

impl SessionTarget for str {
    fn session_id(&self) -> Result<&str, AdapterError> {
        if self.is_empty() {
            return Err(AdapterError::Unsupported("an empty agent session id"));
        }
        Ok(self)
    }
}

impl SessionTarget for String {
    fn session_id(&self) -> Result<&str, AdapterError> {
        self.as_str().session_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_round_trip() {
        let s = session_thread("o", None, "s1");
        assert_eq!(s.channel, "s1");
        assert_eq!(s.session_id().ok(), Some("s1"));
        let c = comment_thread("o", "i", "c1");
        assert!(c.session_id().is_err());
        assert_eq!(
            LinearThread::of(&ThreadRef::new(Platform::SLACK, "o", "i", "session:s")),
            None
        );
        assert_eq!(
            LinearThread::of(&ThreadRef::new(Platform::LINEAR, "o", "i", "other")),
            None
        );
        assert_eq!(
            LinearThread::of(&ThreadRef::new(Platform::LINEAR, "o", "i", "session:")),
            None
        );
        assert_eq!(
            LinearThread::of(&ThreadRef::new(Platform::LINEAR, "o", "", "comment:c")),
            None
        );
        assert!("".session_id().is_err());
    }
}
