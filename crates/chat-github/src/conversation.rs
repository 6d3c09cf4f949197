//! Where a GitHub conversation lives, as a [`ThreadRef`](chat_core::ThreadRef):
//! the tenant is the App installation (`installation.id`; with a personal
//! token, the repository's owner), the channel the repository
//! (`owner/name`), the thread the conversation within it:
//!
//! | thread | conversation | replies go to |
//! |---|---|---|
//! | `42` | issue or pull request #42 (its conversation tab) | `POST /repos/{repo}/issues/42/comments` |
//! | `42/r1001` | the review thread on pull request #42 that comment 1001 opened | `POST /repos/{repo}/pulls/42/comments/1001/replies` |
//! | `d42` | discussion #42 | GraphQL `addDiscussionComment` |
//!
//! Issues, pull requests and discussions share one number sequence per
//! repository, so each number names one conversation.

/// A conversation within a repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversation {
    /// An issue's or a pull request's comments.
    Issue(u64),
    /// A review thread on a pull request's diff: the pull request and the
    /// thread's first comment.
    Review {
        /// The pull request's number.
        pull: u64,
        /// The id of the comment that opened the thread.
        root: u64,
    },
    /// A discussion's comments.
    Discussion(u64),
}

impl Conversation {
    /// Reads a thread id ([module docs](self)); `None` for anything else.
    pub fn parse(thread: &str) -> Option<Self> {
        if let Some(n) = thread.strip_prefix('d') {
            return number(n).map(Self::Discussion);
        }
        match thread.split_once("/r") {
            Some((pull, root)) => Some(Self::Review {
                pull: number(pull)?,
                root: number(root)?,
            }),
            None => number(thread).map(Self::Issue),
        }
    }

    /// The issue, pull request or discussion number.
    pub fn number(&self) -> u64 {
        match *self {
            Self::Issue(n) | Self::Discussion(n) | Self::Review { pull: n, .. } => n,
        }
    }
}

impl std::fmt::Display for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Issue(n) => write!(f, "{n}"),
            Self::Review { pull, root } => write!(f, "{pull}/r{root}"),
            Self::Discussion(n) => write!(f, "d{n}"),
        }
    }
}

/// A positive decimal number with no sign or leading zero.
fn number(s: &str) -> Option<u64> {
    if s.is_empty() || s.starts_with('0') || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_conversation_reads_back_from_its_thread_id() {
        for c in [
            Conversation::Issue(42),
            Conversation::Review {
                pull: 42,
                root: 1001,
            },
            Conversation::Discussion(7),
        ] {
            assert_eq!(Conversation::parse(&c.to_string()), Some(c));
        }
        for bad in [
            "", "0", "042", "-1", "d", "dx", "42/r", "/r1", "42/x1", "4 2", "+4",
        ] {
            assert_eq!(Conversation::parse(bad), None, "{bad:?}");
        }
    }
}
