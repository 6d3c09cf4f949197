//! A throwaway server starts, answers on its port, stops and starts again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpStream;

use chat_test_postgres::{PostgresServer, tools_installed};

#[test]
fn a_server_starts_answers_and_restarts() {
    if !tools_installed() {
        assert!(
            !chat_test_postgres::is_ci(),
            "initdb and pg_ctl must be installed in CI"
        );
        eprintln!("SKIPPED: initdb/pg_ctl not installed");
        return;
    }
    let server = PostgresServer::start().unwrap();
    assert!(TcpStream::connect(("127.0.0.1", server.port())).is_ok());
    server.stop().unwrap();
    assert!(TcpStream::connect(("127.0.0.1", server.port())).is_err());
    server.restart().unwrap();
    assert!(TcpStream::connect(("127.0.0.1", server.port())).is_ok());
    let dir = server.dir().to_owned();
    drop(server);
    assert!(!dir.exists(), "removed when dropped");
}
