//! The schema: created and migrated by the backend, once, however many
//! replicas start together; refused when newer than the build.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chat_core::StateError;
use chat_state_postgres::{PostgresState, SCHEMA_VERSION};
use tokio_postgres::NoTls;

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_migrate_once() {
    let Some(url) = chat_test_postgres::database_url() else {
        return;
    };
    let schema = chat_test_postgres::unique_schema();
    let starts = (0..6).map(|_| {
        let (url, schema) = (url.clone(), schema.clone());
        tokio::spawn(async move {
            PostgresState::builder()
                .url(url)
                .schema(schema)
                .pool_size(1)
                .build()
                .await
        })
    });
    for start in starts {
        start.await.unwrap().unwrap();
    }
    let client = connect(&url).await;
    let versions: Vec<i32> = client
        .query(
            &format!("SELECT version FROM \"{schema}\".schema_migrations ORDER BY version"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());

    // A schema a newer build migrated is refused, not downgraded.
    client
        .execute(
            &format!(
                "INSERT INTO \"{schema}\".schema_migrations (version, name) VALUES ($1, 'future')"
            ),
            &[&(SCHEMA_VERSION + 1)],
        )
        .await
        .unwrap();
    let refused = PostgresState::builder()
        .url(url.clone())
        .schema(schema.clone())
        .build()
        .await;
    assert!(
        matches!(refused, Err(StateError::InvalidRequest(_))),
        "{refused:?}"
    );
    client
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await
        .unwrap();
}

#[tokio::test]
async fn settings_out_of_range_are_refused_before_connecting() {
    for builder in [
        PostgresState::builder(),
        PostgresState::builder()
            .url("postgres://x@127.0.0.1:1/x")
            .schema("Bad-Name"),
        PostgresState::builder()
            .url("postgres://x@127.0.0.1:1/x")
            .pool_size(0),
        PostgresState::builder()
            .url("postgres://x@127.0.0.1:1/x")
            .namespace(""),
    ] {
        assert!(matches!(
            builder.build().await,
            Err(StateError::InvalidRequest(_))
        ));
    }
}

#[tokio::test]
async fn an_unreachable_database_is_unavailable_or_a_timeout() {
    let result = PostgresState::builder()
        .url("postgres://x@127.0.0.1:1/x")
        .timeout(std::time::Duration::from_millis(500))
        .build()
        .await;
    assert!(
        matches!(
            result,
            Err(StateError::Unavailable(_) | StateError::Timeout(_))
        ),
        "{result:?}"
    );
}
