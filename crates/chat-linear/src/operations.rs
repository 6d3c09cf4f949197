//! The GraphQL operations the client sends: each document, and the function
//! that builds its variables. Tests validate both against Linear's schema.

use serde_json::{Value, json};

use crate::activity::{Activity, SessionUpdate};

/// One GraphQL request: a named operation and its variables.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Operation {
    pub(crate) name: &'static str,
    pub(crate) document: &'static str,
    pub(crate) variables: Value,
    /// Where the mutation's result sits in `data` (`agentActivityCreate`).
    pub(crate) field: &'static str,
}

impl Operation {
    /// The request body.
    pub(crate) fn body(&self) -> Value {
        json!({
            "query": self.document,
            "operationName": self.name,
            "variables": self.variables,
        })
    }
}

pub(crate) const AGENT_ACTIVITY_CREATE: &str =
    "mutation AgentActivityCreate($input: AgentActivityCreateInput!) {
  agentActivityCreate(input: $input) {
    success
    agentActivity {
      id
    }
  }
}";

pub(crate) const AGENT_SESSION_UPDATE: &str =
    "mutation AgentSessionUpdate($id: String!, $input: AgentSessionUpdateInput!) {
  agentSessionUpdate(id: $id, input: $input) {
    success
  }
}";

pub(crate) const COMMENT_CREATE: &str = "mutation CommentCreate($input: CommentCreateInput!) {
  commentCreate(input: $input) {
    success
    comment {
      id
    }
  }
}";

pub(crate) const COMMENT_UPDATE: &str =
    "mutation CommentUpdate($id: String!, $input: CommentUpdateInput!) {
  commentUpdate(id: $id, input: $input) {
    success
  }
}";

pub(crate) const COMMENT_DELETE: &str = "mutation CommentDelete($id: String!) {
  commentDelete(id: $id) {
    success
  }
}";

pub(crate) const REACTION_CREATE: &str = "mutation ReactionCreate($input: ReactionCreateInput!) {
  reactionCreate(input: $input) {
    success
  }
}";

pub(crate) const REACTION_DELETE: &str = "mutation ReactionDelete($id: String!) {
  reactionDelete(id: $id) {
    success
  }
}";

pub(crate) const COMMENT_REACTIONS: &str = "query CommentReactions($id: String!) {
  comment(id: $id) {
    reactions {
      id
      emoji
      user {
        id
        isMe
      }
    }
  }
}";

pub(crate) const AGENT_ACTIVITY: &str = "query AgentActivity($id: String!) {
  agentActivity(id: $id) {
    id
  }
}";

pub(crate) const COMMENT: &str = "query Comment($id: String!) {
  comment(id: $id) {
    id
  }
}";

pub(crate) const VIEWER: &str = "query Viewer {
  viewer {
    id
  }
}";

pub(crate) const VIEWER_ORGANIZATION: &str = "query ViewerOrganization {
  viewer {
    id
    organization {
      id
    }
  }
}";

/// `agentActivityCreate` for `activity` in `session_id`, with `id` as the
/// activity's client-supplied id.
pub(crate) fn agent_activity_create(session_id: &str, activity: &Activity, id: &str) -> Operation {
    let mut input = serde_json::Map::new();
    input.insert("agentSessionId".into(), json!(session_id));
    input.insert("content".into(), activity.content_json());
    input.insert("id".into(), json!(id));
    if activity.ephemeral {
        input.insert("ephemeral".into(), json!(true));
    }
    if let Some(signal) = activity.signal {
        input.insert("signal".into(), json!(signal.as_str()));
    }
    if let Some(meta) = &activity.signal_metadata {
        input.insert("signalMetadata".into(), meta.clone());
    }
    Operation {
        name: "AgentActivityCreate",
        document: AGENT_ACTIVITY_CREATE,
        variables: json!({ "input": Value::Object(input) }),
        field: "agentActivityCreate",
    }
}

/// `agentSessionUpdate` of `session_id`.
pub(crate) fn agent_session_update(session_id: &str, update: &SessionUpdate) -> Operation {
    Operation {
        name: "AgentSessionUpdate",
        document: AGENT_SESSION_UPDATE,
        variables: json!({ "id": session_id, "input": update.to_input() }),
        field: "agentSessionUpdate",
    }
}

/// `commentCreate` on `issue_id`, as a reply to `parent_id` when given.
pub(crate) fn comment_create(
    issue_id: &str,
    parent_id: Option<&str>,
    body: &str,
    id: &str,
) -> Operation {
    let mut input = json!({ "issueId": issue_id, "body": body, "id": id });
    if let (Some(parent), Some(map)) = (parent_id, input.as_object_mut()) {
        map.insert("parentId".into(), json!(parent));
    }
    Operation {
        name: "CommentCreate",
        document: COMMENT_CREATE,
        variables: json!({ "input": input }),
        field: "commentCreate",
    }
}

pub(crate) const USER: &str = "query User($id: String!) {
  user(id: $id) {
    id
    name
    displayName
    email
    avatarUrl
    url
    app
  }
}";

pub(crate) const COMMENT_THREAD: &str =
    "query CommentThread($id: String!, $first: Int, $after: String) {
  comment(id: $id) {
    id
    body
    createdAt
    user {
      id
      displayName
      app
      isMe
    }
    botActor {
      id
      name
    }
    children(first: $first, after: $after, orderBy: createdAt) {
      nodes {
        id
        body
        createdAt
        user {
          id
          displayName
          app
          isMe
        }
        botActor {
          id
          name
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
}";

pub(crate) const SESSION_ACTIVITIES: &str =
    "query SessionActivities($id: String!, $first: Int, $after: String) {
  agentSession(id: $id) {
    activities(first: $first, after: $after, orderBy: createdAt) {
      nodes {
        id
        createdAt
        user {
          id
          displayName
          app
          isMe
        }
        content {
          ... on AgentActivityPromptContent {
            body
          }
          ... on AgentActivityThoughtContent {
            body
          }
          ... on AgentActivityResponseContent {
            body
          }
          ... on AgentActivityErrorContent {
            body
          }
          ... on AgentActivityElicitationContent {
            body
          }
          ... on AgentActivityActionContent {
            action
            parameter
          }
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
}";

/// The `user` with `id`.
pub(crate) fn user(id: &str) -> Operation {
    Operation {
        name: "User",
        document: USER,
        variables: json!({ "id": id }),
        field: "user",
    }
}

/// A page of the replies of root comment `id` (with the root itself).
pub(crate) fn comment_thread(id: &str, first: usize, after: Option<&str>) -> Operation {
    Operation {
        name: "CommentThread",
        document: COMMENT_THREAD,
        variables: json!({ "id": id, "first": first, "after": after }),
        field: "comment",
    }
}

/// A page of the activities of session `id`.
pub(crate) fn session_activities(id: &str, first: usize, after: Option<&str>) -> Operation {
    Operation {
        name: "SessionActivities",
        document: SESSION_ACTIVITIES,
        variables: json!({ "id": id, "first": first, "after": after }),
        field: "agentSession",
    }
}

/// The `agentActivity` with `id`, to learn whether it exists.
pub(crate) fn agent_activity(id: &str) -> Operation {
    Operation {
        name: "AgentActivity",
        document: AGENT_ACTIVITY,
        variables: json!({ "id": id }),
        field: "agentActivity",
    }
}

/// The `comment` with `id`, to learn whether it exists.
pub(crate) fn comment(id: &str) -> Operation {
    Operation {
        name: "Comment",
        document: COMMENT,
        variables: json!({ "id": id }),
        field: "comment",
    }
}

/// `commentUpdate` of `comment_id` with a new body.
pub(crate) fn comment_update(comment_id: &str, body: &str) -> Operation {
    Operation {
        name: "CommentUpdate",
        document: COMMENT_UPDATE,
        variables: json!({ "id": comment_id, "input": { "body": body } }),
        field: "commentUpdate",
    }
}

/// `commentDelete` of `comment_id`.
pub(crate) fn comment_delete(comment_id: &str) -> Operation {
    Operation {
        name: "CommentDelete",
        document: COMMENT_DELETE,
        variables: json!({ "id": comment_id }),
        field: "commentDelete",
    }
}

/// `reactionCreate` on a comment.
pub(crate) fn reaction_create(comment_id: &str, emoji: &str) -> Operation {
    Operation {
        name: "ReactionCreate",
        document: REACTION_CREATE,
        variables: json!({ "input": { "commentId": comment_id, "emoji": emoji } }),
        field: "reactionCreate",
    }
}

/// `reactionDelete` of reaction `id`.
pub(crate) fn reaction_delete(id: &str) -> Operation {
    Operation {
        name: "ReactionDelete",
        document: REACTION_DELETE,
        variables: json!({ "id": id }),
        field: "reactionDelete",
    }
}

/// The reactions on comment `id`, with who made each.
pub(crate) fn comment_reactions(id: &str) -> Operation {
    Operation {
        name: "CommentReactions",
        document: COMMENT_REACTIONS,
        variables: json!({ "id": id }),
        field: "comment",
    }
}

/// The `viewer` query: the authenticated (app) user's id.
pub(crate) fn viewer() -> Operation {
    Operation {
        name: "Viewer",
        document: VIEWER,
        variables: json!({}),
        field: "viewer",
    }
}

/// The `viewer` query with its organization: after an install, the app user
/// and the organization the new token is for.
pub(crate) fn viewer_organization() -> Operation {
    Operation {
        name: "ViewerOrganization",
        document: VIEWER_ORGANIZATION,
        variables: json!({}),
        field: "viewer",
    }
}
