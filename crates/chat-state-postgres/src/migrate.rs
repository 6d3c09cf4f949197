//! Versioned migrations, applied when the backend is built: each a SQL file
//! of `migrations/`, its `{schema}` the configured schema. They run in one
//! transaction under a transaction-scoped advisory lock of the schema, so
//! replicas starting together apply each once, and a failed migration
//! leaves nothing behind.

use deadpool_postgres::Object;

use crate::error::from_pg;

/// Every migration, in order: (version, name, SQL).
const MIGRATIONS: &[(i32, &str, &str)] = &[
    (1, "kv", include_str!("../migrations/0001_kv.sql")),
    (
        2,
        "protocol",
        include_str!("../migrations/0002_protocol.sql"),
    ),
];

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: i32 = 2;

/// Brings `schema` up to [`SCHEMA_VERSION`]; returns the versions it
/// applied (none when another replica got there first).
///
/// # Errors
/// The database's refusal; a schema newer than this build knows is
/// [`chat_core::StateError::InvalidRequest`].
pub(crate) async fn migrate(
    client: &mut Object,
    schema: &str,
) -> Result<Vec<i32>, chat_core::StateError> {
    let quoted = quote(schema);
    let tx = client.transaction().await.map_err(from_pg)?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('chat-state-postgres:' || $1, 0))",
        &[&schema],
    )
    .await
    .map_err(from_pg)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {quoted};
         CREATE TABLE IF NOT EXISTS {quoted}.schema_migrations (
             version integer PRIMARY KEY,
             name text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(from_pg)?;
    let applied: Vec<i32> = tx
        .query(
            &format!("SELECT version FROM {quoted}.schema_migrations"),
            &[],
        )
        .await
        .map_err(from_pg)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if applied.iter().any(|v| *v > SCHEMA_VERSION) {
        return Err(chat_core::StateError::InvalidRequest(
            "the schema was migrated by a newer chat-state-postgres than this one",
        ));
    }
    let mut done = Vec::new();
    for (version, name, sql) in MIGRATIONS {
        if applied.contains(version) {
            continue;
        }
        tx.batch_execute(&sql.replace("{schema}", &quoted))
            .await
            .map_err(from_pg)?;
        tx.execute(
            &format!("INSERT INTO {quoted}.schema_migrations (version, name) VALUES ($1, $2)"),
            &[version, name],
        )
        .await
        .map_err(from_pg)?;
        done.push(*version);
    }
    tx.commit().await.map_err(from_pg)?;
    Ok(done)
}

/// `name` as a quoted SQL identifier.
pub(crate) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Whether `name` is a schema name the builder accepts: 1-63 characters of
/// `a-z 0-9 _`, not starting with a digit.
pub(crate) fn valid_schema(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order_up_to_the_version() {
        for (i, (version, _, _)) in MIGRATIONS.iter().enumerate() {
            assert_eq!(*version, i32::try_from(i + 1).unwrap_or_default());
        }
        assert_eq!(MIGRATIONS.last().map(|m| m.0), Some(SCHEMA_VERSION));
    }

    #[test]
    fn schema_names_are_plain_identifiers() {
        assert!(valid_schema("chat"));
        assert!(valid_schema("chat_test_1"));
        assert!(!valid_schema(""));
        assert!(!valid_schema("1chat"));
        assert!(!valid_schema("Chat"));
        assert!(!valid_schema("chat;drop"));
        assert_eq!(quote("chat"), "\"chat\"");
    }
}
