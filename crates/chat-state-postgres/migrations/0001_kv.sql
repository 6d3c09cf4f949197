-- The store's clock, read in one place: every expiry is judged by the
-- database server's time, so replicas with skewed clocks agree.
CREATE FUNCTION {schema}.now_ms() RETURNS bigint
    LANGUAGE sql VOLATILE
    AS $$ SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

-- KvStore: installations, the runtime's shared records. `ns` is the store's
-- namespace (several deployments may share one schema); an entry with an
-- expiry is gone once `expires_ms` has passed on the server's clock.
CREATE TABLE {schema}.kv (
    ns text NOT NULL,
    key text NOT NULL,
    value bytea NOT NULL,
    expires_ms bigint,
    PRIMARY KEY (ns, key)
);
CREATE INDEX kv_expiry ON {schema}.kv (ns, expires_ms) WHERE expires_ms IS NOT NULL;
