-- The coordination protocol: leases, waiting entries, in-flight batches,
-- slots, dedupe marks and subscriptions, each call of the contract one
-- function run in one transaction. Every function that touches a scope
-- first takes the transaction-scoped advisory lock of its tag (platform,
-- tenant, channel), then reads the clock once: under READ COMMITTED every
-- later statement sees what the previous holder of the lock committed. A
-- row whose expiry has passed is absent to every statement.
--
-- A scope is the JSON of its ScopeKey (`scope`), with its tag's columns.
-- Entries and reports live in `items`, in the list that holds them (`run`:
-- the batch in flight; `queue`, `pending`, `burst`: waiting; `outbox`:
-- reports for the next batch), ordered by `pos`.

CREATE TABLE {schema}.scopes (
    ns text NOT NULL,
    scope text NOT NULL,
    platform text NOT NULL,
    tenant text NOT NULL,
    channel text NOT NULL,
    lease_token text,
    lease_fence bigint,
    lease_seq bigint,
    lease_cancels integer,
    lease_expires_ms bigint,
    run_owner text,
    run_seq bigint,
    run_attempt integer,
    run_lapses integer,
    run_handed_back boolean,
    run_handed_ms bigint,
    pending_ready_ms bigint,
    PRIMARY KEY (ns, scope)
);
CREATE INDEX scopes_tag ON {schema}.scopes (ns, platform, tenant, channel);

CREATE SEQUENCE {schema}.item_pos;

CREATE TABLE {schema}.items (
    ns text NOT NULL,
    scope text NOT NULL,
    list text NOT NULL CHECK (list IN ('run', 'queue', 'pending', 'burst', 'outbox')),
    pos bigint NOT NULL DEFAULT nextval('{schema}.item_pos'),
    kind "char" NOT NULL CHECK (kind IN ('E', 'R')),
    fate "char",
    win bigint,
    event_id text NOT NULL,
    thread text NOT NULL,
    admitted_ms bigint,
    expires_ms bigint,
    body text,
    PRIMARY KEY (ns, scope, list, pos)
);

CREATE TABLE {schema}.burst_windows (
    ns text NOT NULL,
    scope text NOT NULL,
    n bigint NOT NULL,
    seals_ms bigint NOT NULL,
    is_full boolean NOT NULL,
    size integer NOT NULL,
    PRIMARY KEY (ns, scope, n)
);

CREATE TABLE {schema}.waiting_threads (
    ns text NOT NULL,
    scope text NOT NULL,
    thread text NOT NULL,
    PRIMARY KEY (ns, scope, thread)
);

CREATE TABLE {schema}.acks (
    ns text NOT NULL,
    scope text NOT NULL,
    token text NOT NULL,
    seq bigint NOT NULL,
    expires_ms bigint NOT NULL,
    PRIMARY KEY (ns, scope, token, seq)
);
CREATE INDEX acks_expiry ON {schema}.acks (ns, expires_ms);

CREATE TABLE {schema}.slots (
    ns text NOT NULL,
    scope text NOT NULL,
    token text NOT NULL,
    expires_ms bigint NOT NULL,
    cancels integer NOT NULL DEFAULT 0,
    PRIMARY KEY (ns, scope, token)
);

CREATE TABLE {schema}.slot_waiters (
    ns text NOT NULL,
    scope text NOT NULL,
    token text NOT NULL,
    expires_ms bigint NOT NULL,
    PRIMARY KEY (ns, scope, token)
);

CREATE TABLE {schema}.slot_runs (
    ns text NOT NULL,
    scope text NOT NULL,
    token text NOT NULL,
    attempt integer NOT NULL,
    lapses integer NOT NULL,
    handed_back boolean NOT NULL,
    fence bigint NOT NULL DEFAULT 0,
    max_slots bigint NOT NULL,
    event_id text NOT NULL,
    thread text NOT NULL,
    admitted_ms bigint NOT NULL,
    body text NOT NULL,
    PRIMARY KEY (ns, scope, token)
);

CREATE TABLE {schema}.marks (
    ns text NOT NULL,
    mark bytea NOT NULL,
    request_id text NOT NULL,
    recorded text NOT NULL,
    expires_ms bigint NOT NULL,
    PRIMARY KEY (ns, mark)
);
CREATE INDEX marks_expiry ON {schema}.marks (ns, expires_ms);

CREATE TABLE {schema}.subscriptions (
    ns text NOT NULL,
    platform text NOT NULL,
    tenant text NOT NULL,
    channel text NOT NULL,
    thread text NOT NULL,
    expires_ms bigint NOT NULL,
    PRIMARY KEY (ns, platform, tenant, channel, thread)
);
CREATE INDEX subscriptions_expiry ON {schema}.subscriptions (ns, expires_ms);

-- Fencing numbers: per bucket of tags, `max(last + 1, now in µs)`, so every
-- grant on a scope gets a number greater than every earlier one, even after
-- the scope's rows were deleted.
CREATE TABLE {schema}.fences (
    ns text NOT NULL,
    bucket integer NOT NULL,
    last bigint NOT NULL,
    PRIMARY KEY (ns, bucket)
);

------------------------------------------------------------------ helpers

CREATE FUNCTION {schema}._lock(p_ns text, p_platform text, p_tenant text, p_channel text)
RETURNS void LANGUAGE sql VOLATILE AS $$
    SELECT pg_advisory_xact_lock(hashtextextended(
        p_ns || chr(31) || p_platform || chr(31) || p_tenant || chr(31) || p_channel, 0))
$$;

CREATE FUNCTION {schema}._now_us() RETURNS bigint LANGUAGE sql VOLATILE AS $$
    SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint
$$;

CREATE FUNCTION {schema}._fence(p_ns text, p_platform text, p_tenant text, p_channel text, p_us bigint)
RETURNS bigint LANGUAGE sql VOLATILE AS $$
    INSERT INTO {schema}.fences AS f (ns, bucket, last)
    VALUES (p_ns, hashtext(p_platform || chr(31) || p_tenant || chr(31) || p_channel) & 1023, p_us)
    ON CONFLICT (ns, bucket) DO UPDATE SET last = greatest(f.last + 1, p_us)
    RETURNING last
$$;

CREATE FUNCTION {schema}._has_waiting(p_ns text, p_scope text)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM {schema}.items
                   WHERE ns = p_ns AND scope = p_scope AND list IN ('queue', 'pending', 'burst'))
$$;

CREATE FUNCTION {schema}._has_work(p_ns text, p_scope text)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM {schema}.items
                   WHERE ns = p_ns AND scope = p_scope AND list IN ('queue', 'pending', 'burst', 'outbox'))
        OR EXISTS (SELECT 1 FROM {schema}.scopes
                   WHERE ns = p_ns AND scope = p_scope AND run_owner IS NOT NULL)
$$;

CREATE FUNCTION {schema}._mark(p_ns text, p_mark bytea, p_rid text, p_recorded text, p_expires bigint)
RETURNS void LANGUAGE sql VOLATILE AS $$
    INSERT INTO {schema}.marks (ns, mark, request_id, recorded, expires_ms)
    VALUES (p_ns, p_mark, p_rid, p_recorded, p_expires)
    ON CONFLICT (ns, mark) DO UPDATE
        SET request_id = EXCLUDED.request_id, recorded = EXCLUDED.recorded,
            expires_ms = EXCLUDED.expires_ms
$$;

-- A lease granted to `p_token` (the scope has no live one): its fence.
CREATE FUNCTION {schema}._grant(p_ns text, p_scope text, p_platform text, p_tenant text,
                                p_channel text, p_token text, p_ttl bigint, p_now bigint, p_us bigint)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_fence bigint := {schema}._fence(p_ns, p_platform, p_tenant, p_channel, p_us);
BEGIN
    UPDATE {schema}.scopes
       SET lease_token = p_token, lease_fence = v_fence, lease_seq = 0, lease_cancels = 0,
           lease_expires_ms = p_now + p_ttl
     WHERE ns = p_ns AND scope = p_scope;
    RETURN v_fence;
END
$$;

-- The first batch of a free scope: `p_token` runs the one entry given.
CREATE FUNCTION {schema}._run_first(p_ns text, p_scope text, p_token text, p_now bigint,
                                    p_event_id text, p_thread text, p_expires bigint, p_body text)
RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    UPDATE {schema}.scopes
       SET run_owner = p_token, run_seq = 0, run_attempt = 1, run_lapses = 0,
           run_handed_back = false, run_handed_ms = p_now
     WHERE ns = p_ns AND scope = p_scope;
    INSERT INTO {schema}.items (ns, scope, list, kind, event_id, thread, admitted_ms, expires_ms, body)
    VALUES (p_ns, p_scope, 'run', 'E', p_event_id, p_thread, p_now, p_expires, p_body);
END
$$;

-- The batch in flight, as handed out.
CREATE FUNCTION {schema}._handed(p_ns text, p_scope text)
RETURNS json LANGUAGE sql STABLE AS $$
    SELECT json_build_object(
        'v', 'run', 'seq', s.run_seq, 'attempt', s.run_attempt, 'lapses', s.run_lapses,
        'handed', s.run_handed_ms,
        'items', coalesce((
            SELECT json_agg(json_build_object(
                       'k', i.kind, 'f', i.fate, 'id', i.event_id, 'th', i.thread,
                       'at', i.admitted_ms, 'ex', i.expires_ms, 'b', i.body)
                   ORDER BY (i.kind = 'E'), i.pos)
              FROM {schema}.items i
             WHERE i.ns = p_ns AND i.scope = p_scope AND i.list = 'run'), '[]'::json))
      FROM {schema}.scopes s WHERE s.ns = p_ns AND s.scope = p_scope
$$;

CREATE FUNCTION {schema}._remember_ack(p_ns text, p_scope text, p_token text, p_seq bigint,
                                       p_ttl bigint, p_now bigint)
RETURNS void LANGUAGE sql VOLATILE AS $$
    INSERT INTO {schema}.acks (ns, scope, token, seq, expires_ms)
    VALUES (p_ns, p_scope, p_token, p_seq, p_now + greatest(2 * p_ttl, 60000))
    ON CONFLICT (ns, scope, token, seq) DO UPDATE SET expires_ms = EXCLUDED.expires_ms
$$;

CREATE FUNCTION {schema}._was_acked(p_ns text, p_scope text, p_token text, p_seq bigint, p_now bigint)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM {schema}.acks
                   WHERE ns = p_ns AND scope = p_scope AND token = p_token AND seq = p_seq
                     AND expires_ms > p_now)
$$;

CREATE FUNCTION {schema}._drop_run(p_ns text, p_scope text)
RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    UPDATE {schema}.scopes
       SET run_owner = NULL, run_seq = NULL, run_attempt = NULL, run_lapses = NULL,
           run_handed_back = NULL, run_handed_ms = NULL
     WHERE ns = p_ns AND scope = p_scope;
    DELETE FROM {schema}.items WHERE ns = p_ns AND scope = p_scope AND list = 'run';
END
$$;

CREATE FUNCTION {schema}._drop_lease(p_ns text, p_scope text)
RETURNS void LANGUAGE sql VOLATILE AS $$
    UPDATE {schema}.scopes
       SET lease_token = NULL, lease_fence = NULL, lease_seq = NULL, lease_cancels = NULL,
           lease_expires_ms = NULL
     WHERE ns = p_ns AND scope = p_scope
$$;

-- A report of `fate` for a waiting entry, into the outbox.
CREATE FUNCTION {schema}._report(p_ns text, p_scope text, p_fate "char", p_event_id text, p_thread text)
RETURNS void LANGUAGE sql VOLATILE AS $$
    INSERT INTO {schema}.items (ns, scope, list, kind, fate, event_id, thread)
    VALUES (p_ns, p_scope, 'outbox', 'R', p_fate, p_event_id, p_thread)
$$;

CREATE FUNCTION {schema}._purge_slots(p_ns text, p_scope text, p_now bigint)
RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    DELETE FROM {schema}.slots WHERE ns = p_ns AND scope = p_scope AND expires_ms <= p_now;
    DELETE FROM {schema}.slot_waiters WHERE ns = p_ns AND scope = p_scope AND expires_ms <= p_now;
END
$$;

-- A slot to `p_token` for `p_ttl`: its fence, also kept in its run record.
CREATE FUNCTION {schema}._grant_slot(p_ns text, p_scope text, p_platform text, p_tenant text,
                                     p_channel text, p_token text, p_ttl bigint, p_now bigint, p_us bigint)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_fence bigint := {schema}._fence(p_ns, p_platform, p_tenant, p_channel, p_us);
BEGIN
    INSERT INTO {schema}.slots (ns, scope, token, expires_ms, cancels)
    VALUES (p_ns, p_scope, p_token, p_now + p_ttl, 0)
    ON CONFLICT (ns, scope, token) DO UPDATE SET expires_ms = EXCLUDED.expires_ms;
    UPDATE {schema}.slot_runs SET fence = v_fence
     WHERE ns = p_ns AND scope = p_scope AND token = p_token;
    RETURN v_fence;
END
$$;

------------------------------------------------------------------ admit

-- One admission (see Coordination::admit). `p_strategy`: drop, queue,
-- debounce, burst, concurrent. The answer: {"v", "sub", "fence"?,
-- "depth"?, "replaced"?, "reason"?}.
CREATE FUNCTION {schema}.admit(
    p_ns text, p_scope text, p_platform text, p_tenant text, p_channel text,
    p_mark bytea, p_thread text, p_event_id text, p_body text,
    p_strategy text, p_gate text, p_dedupe_ttl bigint, p_lease_ttl bigint, p_sub_ttl bigint,
    p_rid text,
    p_q_max bigint, p_q_drop_newest boolean, p_entry_ttl bigint,
    p_interval bigint, p_window bigint, p_max_batch bigint, p_max_waiting bigint,
    p_c_max bigint)
RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_us bigint;
    v_now bigint;
    v_sub boolean;
    v_mrid text;
    v_mrec text;
    v_s {schema}.scopes%ROWTYPE;
    v_live boolean;
    v_fence bigint;
    v_depth bigint;
    v_left boolean;
    v_old_id text;
    v_old_thread text;
    v_tail bigint;
    v_win {schema}.burst_windows%ROWTYPE;
    v_sealed boolean;
    v_size integer;
    v_expires bigint;
BEGIN
    PERFORM {schema}._lock(p_ns, p_platform, p_tenant, p_channel);
    v_us := {schema}._now_us();
    v_now := v_us / 1000;
    v_expires := v_now + p_entry_ttl;

    -- The gate: a subscription is renewed by any admission in its thread.
    UPDATE {schema}.subscriptions SET expires_ms = v_now + p_sub_ttl
     WHERE ns = p_ns AND platform = p_platform AND tenant = p_tenant AND channel = p_channel
       AND thread = p_thread AND expires_ms > v_now;
    v_sub := FOUND;

    INSERT INTO {schema}.scopes AS c (ns, scope, platform, tenant, channel)
    VALUES (p_ns, p_scope, p_platform, p_tenant, p_channel)
    ON CONFLICT (ns, scope) DO UPDATE SET platform = c.platform
    RETURNING * INTO v_s;
    v_live := v_s.lease_token IS NOT NULL AND v_s.lease_expires_ms > v_now;

    SELECT request_id, recorded INTO v_mrid, v_mrec FROM {schema}.marks
     WHERE ns = p_ns AND mark = p_mark AND expires_ms > v_now;
    IF FOUND THEN
        IF v_mrid IS DISTINCT FROM p_rid THEN
            RETURN json_build_object('v', 'duplicate', 'sub', v_sub)::text;
        END IF;
        -- The same request again: its recorded decision, changing nothing.
        IF p_strategy = 'concurrent' THEN
            IF v_mrec = 'slot' AND EXISTS (SELECT 1 FROM {schema}.slots WHERE ns = p_ns
                    AND scope = p_scope AND token = p_rid AND expires_ms > v_now) THEN
                UPDATE {schema}.slots SET expires_ms = v_now + p_lease_ttl
                 WHERE ns = p_ns AND scope = p_scope AND token = p_rid;
                RETURN json_build_object('v', 'run', 'sub', v_sub, 'fence',
                    coalesce((SELECT fence FROM {schema}.slot_runs WHERE ns = p_ns
                              AND scope = p_scope AND token = p_rid), 0))::text;
            ELSIF v_mrec = 'wait-slot' AND (
                    EXISTS (SELECT 1 FROM {schema}.slots WHERE ns = p_ns AND scope = p_scope
                            AND token = p_rid AND expires_ms > v_now)
                 OR EXISTS (SELECT 1 FROM {schema}.slot_waiters WHERE ns = p_ns AND scope = p_scope
                            AND token = p_rid AND expires_ms > v_now)) THEN
                RETURN json_build_object('v', 'waiting-for-slot', 'sub', v_sub)::text;
            END IF;
            RETURN json_build_object('v', 'stored', 'sub', v_sub)::text;
        END IF;
        IF v_mrec IN ('run', 'hold') THEN
            IF v_live AND v_s.lease_token = p_rid AND v_s.lease_seq = 0 THEN
                UPDATE {schema}.scopes SET lease_expires_ms = v_now + p_lease_ttl
                 WHERE ns = p_ns AND scope = p_scope;
                RETURN json_build_object('v', v_mrec, 'sub', v_sub, 'fence', v_s.lease_fence)::text;
            END IF;
            RETURN json_build_object('v', 'stored', 'sub', v_sub)::text;
        ELSIF v_mrec = 'queued' THEN
            SELECT count(*) INTO v_depth FROM {schema}.items WHERE ns = p_ns AND scope = p_scope
               AND list = (CASE WHEN p_strategy = 'burst' THEN 'burst' ELSE 'queue' END);
            RETURN json_build_object('v', 'queued', 'sub', v_sub, 'depth', v_depth)::text;
        ELSIF v_mrec = 'pending' THEN
            RETURN json_build_object('v', 'pending', 'sub', v_sub, 'replaced', false)::text;
        ELSIF v_mrec = 'dropped-busy' THEN
            RETURN json_build_object('v', 'dropped', 'sub', v_sub, 'reason', 'busy')::text;
        ELSIF v_mrec = 'dropped-full' THEN
            RETURN json_build_object('v', 'dropped', 'sub', v_sub, 'reason', 'queue-full')::text;
        END IF;
        RETURN json_build_object('v', 'stored', 'sub', v_sub)::text;
    END IF;

    IF p_gate = 'subscribed' AND NOT v_sub AND NOT EXISTS (
            SELECT 1 FROM {schema}.waiting_threads
             WHERE ns = p_ns AND scope = p_scope AND thread = p_thread) THEN
        RETURN json_build_object('v', 'not-subscribed', 'sub', v_sub)::text;
    END IF;

    IF p_strategy = 'queue' THEN
        IF NOT v_live THEN
            v_left := {schema}._has_work(p_ns, p_scope);
            v_fence := {schema}._grant(p_ns, p_scope, p_platform, p_tenant, p_channel, p_rid,
                                       p_lease_ttl, v_now, v_us);
            IF NOT v_left THEN
                PERFORM {schema}._mark(p_ns, p_mark, p_rid, 'run', v_now + p_dedupe_ttl);
                PERFORM {schema}._run_first(p_ns, p_scope, p_rid, v_now, p_event_id, p_thread,
                                            v_expires, p_body);
                RETURN json_build_object('v', 'run', 'sub', v_sub, 'fence', v_fence)::text;
            END IF;
            PERFORM {schema}._mark(p_ns, p_mark, p_rid, 'hold', v_now + p_dedupe_ttl);
            INSERT INTO {schema}.items (ns, scope, list, kind, event_id, thread, admitted_ms, expires_ms, body)
            VALUES (p_ns, p_scope, 'queue', 'E', p_event_id, p_thread, v_now, v_expires, p_body);
            INSERT INTO {schema}.waiting_threads VALUES (p_ns, p_scope, p_thread) ON CONFLICT DO NOTHING;
            RETURN json_build_object('v', 'hold', 'sub', v_sub, 'fence', v_fence)::text;
        END IF;
        SELECT count(*) INTO v_depth FROM {schema}.items
         WHERE ns = p_ns AND scope = p_scope AND list = 'queue';
        IF p_q_drop_newest AND v_depth >= p_q_max THEN
            PERFORM {schema}._mark(p_ns, p_mark, p_rid, 'dropped-full', v_now + p_dedupe_ttl);
            RETURN json_build_object('v', 'dropped', 'sub', v_sub, 'reason', 'queue-full')::text;
        END IF;
        PERFORM {schema}._mark(p_ns, p_mark, p_rid, 'queued', v_now + p_dedupe_ttl);
        INSERT INTO {schema}.items (ns, scope, list, kind, event_id, thread, admitted_ms, expires_ms, body)
        VALUES (p_ns, p_scope, 'queue', 'E', p_event_id, p_thread, v_now, v_expires, p_body);
        INSERT INTO {schema}.waiting_threads VALUES (p_ns, p_scope, p_thread) ON CONFLICT DO NOTHING;
        v_depth := v_depth + 1;
        IF v_depth > p_q_max THEN
            DELETE FROM {schema}.items
             WHERE (ns, scope, list, pos) = (
                 SELECT ns, scope, list, pos FROM {schema}.items
                  WHERE ns = p_ns AND scope = p_scope AND list = 'queue' ORDER BY pos LIMIT 1)
            RETURNING event_id, thread INTO v_old_id, v_old_thread;
            PERFORM {schema}._report(p_ns, p_scope, 'e', v_old_id, v_old_thread);
            v_depth := v_depth - 1;
        END IF;
        RETURN json_build_object('v', 'queued', 'sub', v_sub, 'depth', v_depth)::text;

    ELSIF p_strategy = 'debounce' THEN
        DELETE FROM {schema}.items WHERE ns = p_ns AND scope = p_scope AND list = 'pending'
        RETURNING event_id, thread INTO v_old_id, v_old_thread;
        IF v_old_id IS NOT NULL THEN
            PERFORM {schema}._report(p_ns, p_scope, 's', v_old_id, v_old_thread);
        END IF;
        INSERT INTO {schema}.items (ns, scope, list, kind, event_id, thread, admitted_ms, expires_ms, body)
        VALUES (p_ns, p_scope, 'pending', 'E', p_event_id, p_thread, v_now, v_expires, p_body);
        UPDATE {schema}.scopes SET pending_ready_ms = v_now + p_interval
         WHERE ns = p_ns AND scope = p_scope;
        INSERT INTO {schema}.waiting_threads VALUES (p_ns, p_scope, p_thread) ON CONFLICT DO NOTHING;
        IF NOT v_live THEN
            PERFORM {schema}._mark(p_ns, p_mark, p_rid, 'hold', v_now + p_dedupe_ttl);
            v_fence := {schema}._grant(p_ns, p_scope, p_platform, p_tenant, p_channel, p_rid,
                                       p_lease_ttl, v_now, v_us);
            RETURN json_build_object('v', 'hold', 'sub', v_sub, 'fence', v_fence)::text;
        END IF;
        PERFORM {schema}._mark(p_ns, p_mark, p_rid, 'pending', v_now + p_dedupe_ttl);
        RETURN json_build_object('v', 'pending', 'sub', v_sub,
                                 'replaced', v_old_id IS NOT NULL)::text;

    ELSIF p_strategy = 'burst' THEN
        SELECT count(*) INTO v_depth FROM {schema}.items
         WHERE ns = p_ns AND scope = p_scope AND list = 'burst';
        IF v_depth >= p_max_waiting THEN
            RETURN json_build_object('v', 'full', 'sub', v_sub)::text;
        END IF;
        IF v_depth = 0 THEN
            DELETE FROM {schema}.burst_windows WHERE ns = p_ns AND scope = p_scope;
            v_tail := 0;
        ELSE
            SELECT coalesce(max(n), 0) INTO v_tail FROM {schema}.burst_windows
             WHERE ns = p_ns AND scope = p_scope;
        END IF;
        SELECT * INTO v_win FROM {schema}.burst_windows
         WHERE ns = p_ns AND scope = p_scope AND n = v_tail;
        v_sealed := v_tail = 0 OR NOT FOUND OR v_win.is_full OR v_win.seals_ms <= v_now;
        IF v_sealed THEN
            v_tail := v_tail + 1;
            INSERT INTO {schema}.burst_windows (ns, scope, n, seals_ms, is_full, size)
            VALUES (p_ns, p_scope, v_tail, v_now + p_window, false, 0);
        END IF;
        UPDATE {schema}.burst_windows SET size = size + 1
         WHERE ns = p_ns AND scope = p_scope AND n = v_tail
        RETURNING size INTO v_size;
        IF p_max_batch > 0 AND v_size >= p_max_batch THEN
            UPDATE {schema}.burst_windows SET is_full = true
             WHERE ns = p_ns AND scope = p_scope AND n = v_tail;
        END IF;
        INSERT INTO {schema}.items (ns, scope, list, kind, win, event_id, thread, admitted_ms, expires_ms, body)
        VALUES (p_ns, p_scope, 'burst', 'E', v_tail, p_event_id, p_thread, v_now, v_expires, p_body);
        v_depth := v_depth + 1;
        INSERT INTO {schema}.waiting_threads VALUES (p_ns, p_scope, p_thread) ON CONFLICT DO NOTHING;
        IF NOT v_live THEN
            PERFORM {schema}._mark(p_ns, p_mark, p_rid, 'hold', v_now + p_dedupe_ttl);
            v_fence := {schema}._grant(p_ns, p_scope, p_platform, p_tenant, p_channel, p_rid,
                                       p_lease_ttl, v_now, v_us);
            RETURN json_build_object('v', 'hold', 'sub', v_sub, 'fence', v_fence)::text;
        END IF;
        PERFORM {schema}._mark(p_ns, p_mark, p_rid, 'queued', v_now + p_dedupe_ttl);
        RETURN json_build_object('v', 'queued', 'sub', v_sub, 'depth', v_depth)::text;

    ELSIF p_strategy = 'concurrent' THEN
        PERFORM {schema}._purge_slots(p_ns, p_scope, v_now);
        INSERT INTO {schema}.slot_runs (ns, scope, token, attempt, lapses, handed_back, fence,
                                        max_slots, event_id, thread, admitted_ms, body)
        VALUES (p_ns, p_scope, p_rid, 1, 0, false, 0, p_c_max, p_event_id, p_thread, v_now, p_body)
        ON CONFLICT (ns, scope, token) DO UPDATE
            SET attempt = 1, lapses = 0, handed_back = false, fence = 0,
                max_slots = EXCLUDED.max_slots, event_id = EXCLUDED.event_id,
                thread = EXCLUDED.thread, admitted_ms = EXCLUDED.admitted_ms, body = EXCLUDED.body;
        IF p_c_max = 0 OR (SELECT count(*) FROM {schema}.slots
                            WHERE ns = p_ns AND scope = p_scope AND expires_ms > v_now) < p_c_max THEN
            PERFORM {schema}._mark(p_ns, p_mark, p_rid, 'slot', v_now + p_dedupe_ttl);
            v_fence := {schema}._grant_slot(p_ns, p_scope, p_platform, p_tenant, p_channel, p_rid,
                                            p_lease_ttl, v_now, v_us);
            RETURN json_build_object('v', 'run', 'sub', v_sub, 'fence', v_fence)::text;
        END IF;
        PERFORM {schema}._mark(p_ns, p_mark, p_rid, 'wait-slot', v_now + p_dedupe_ttl);
        INSERT INTO {schema}.slot_waiters (ns, scope, token, expires_ms)
        VALUES (p_ns, p_scope, p_rid, v_now + p_lease_ttl)
        ON CONFLICT (ns, scope, token) DO UPDATE SET expires_ms = EXCLUDED.expires_ms;
        RETURN json_build_object('v', 'waiting-for-slot', 'sub', v_sub)::text;
    END IF;

    -- drop
    IF v_live OR {schema}._has_work(p_ns, p_scope) THEN
        PERFORM {schema}._mark(p_ns, p_mark, p_rid, 'dropped-busy', v_now + p_dedupe_ttl);
        RETURN json_build_object('v', 'dropped', 'sub', v_sub, 'reason', 'busy')::text;
    END IF;
    PERFORM {schema}._mark(p_ns, p_mark, p_rid, 'run', v_now + p_dedupe_ttl);
    v_fence := {schema}._grant(p_ns, p_scope, p_platform, p_tenant, p_channel, p_rid,
                               p_lease_ttl, v_now, v_us);
    PERFORM {schema}._run_first(p_ns, p_scope, p_rid, v_now, p_event_id, p_thread, NULL, p_body);
    RETURN json_build_object('v', 'run', 'sub', v_sub, 'fence', v_fence)::text;
END
$$;

------------------------------------------------------------------ renew

CREATE FUNCTION {schema}.renew(p_ns text, p_scope text, p_platform text, p_tenant text,
                               p_channel text, p_token text, p_slot boolean, p_ttl bigint)
RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_now bigint;
    v_cancels integer;
BEGIN
    PERFORM {schema}._lock(p_ns, p_platform, p_tenant, p_channel);
    v_now := {schema}._now_us() / 1000;
    IF p_slot THEN
        UPDATE {schema}.slots SET expires_ms = v_now + p_ttl
         WHERE ns = p_ns AND scope = p_scope AND token = p_token AND expires_ms > v_now
        RETURNING cancels INTO v_cancels;
    ELSE
        UPDATE {schema}.scopes SET lease_expires_ms = v_now + p_ttl
         WHERE ns = p_ns AND scope = p_scope AND lease_token = p_token AND lease_expires_ms > v_now
        RETURNING lease_cancels INTO v_cancels;
    END IF;
    IF NOT FOUND THEN
        RETURN json_build_object('v', 'lost')::text;
    END IF;
    RETURN json_build_object('v', 'renewed', 'cancels', coalesce(v_cancels, 0))::text;
END
$$;

------------------------------------------------------------------ finish

CREATE FUNCTION {schema}.finish(p_ns text, p_scope text, p_platform text, p_tenant text,
                                p_channel text, p_token text, p_seq bigint, p_ttl bigint)
RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_now bigint;
    v_s {schema}.scopes%ROWTYPE;
    v_own boolean;
    v_holder boolean;
    v_next bigint;
    v_wait bigint;
    v_ready text;
    v_head bigint;
    v_win {schema}.burst_windows%ROWTYPE;
BEGIN
    PERFORM {schema}._lock(p_ns, p_platform, p_tenant, p_channel);
    v_now := {schema}._now_us() / 1000;
    SELECT * INTO v_s FROM {schema}.scopes WHERE ns = p_ns AND scope = p_scope;
    IF NOT FOUND THEN
        IF {schema}._was_acked(p_ns, p_scope, p_token, p_seq, v_now) THEN
            RETURN json_build_object('v', 'released')::text;
        END IF;
        RETURN json_build_object('v', 'lost')::text;
    END IF;
    v_own := coalesce(v_s.run_owner = p_token AND v_s.run_seq = p_seq, false);
    v_holder := coalesce(v_s.lease_token = p_token AND v_s.lease_expires_ms > v_now, false);

    IF NOT v_holder THEN
        IF v_own THEN
            -- A lapsed holder acknowledges its own batch, if nobody adopted it.
            PERFORM {schema}._drop_run(p_ns, p_scope);
            PERFORM {schema}._remember_ack(p_ns, p_scope, p_token, p_seq, p_ttl, v_now);
            RETURN json_build_object('v', 'released')::text;
        ELSIF {schema}._was_acked(p_ns, p_scope, p_token, p_seq, v_now) THEN
            RETURN json_build_object('v', 'released')::text;
        END IF;
        RETURN json_build_object('v', 'lost')::text;
    END IF;

    IF v_s.lease_seq = p_seq + 1 THEN
        -- A repeat: the batch this call handed out before, again.
        IF v_s.run_owner = p_token AND v_s.run_seq = p_seq + 1 THEN
            UPDATE {schema}.scopes SET lease_expires_ms = v_now + p_ttl
             WHERE ns = p_ns AND scope = p_scope;
            RETURN {schema}._handed(p_ns, p_scope)::text;
        END IF;
        RETURN json_build_object('v', 'lost')::text;
    END IF;
    IF v_s.lease_seq IS DISTINCT FROM p_seq THEN
        RETURN json_build_object('v', 'lost')::text;
    END IF;

    IF v_own THEN
        PERFORM {schema}._drop_run(p_ns, p_scope);
    END IF;
    PERFORM {schema}._remember_ack(p_ns, p_scope, p_token, p_seq, p_ttl, v_now);
    v_next := p_seq + 1;

    IF (v_own OR v_s.run_owner IS NULL) AND NOT EXISTS (
            SELECT 1 FROM {schema}.items WHERE ns = p_ns AND scope = p_scope
               AND list IN ('queue', 'pending', 'burst', 'outbox')) THEN
        PERFORM {schema}._drop_lease(p_ns, p_scope);
        DELETE FROM {schema}.waiting_threads WHERE ns = p_ns AND scope = p_scope;
        DELETE FROM {schema}.burst_windows WHERE ns = p_ns AND scope = p_scope;
        RETURN json_build_object('v', 'released')::text;
    END IF;

    UPDATE {schema}.scopes SET lease_expires_ms = v_now + p_ttl WHERE ns = p_ns AND scope = p_scope;

    IF NOT v_own AND v_s.run_owner IS NOT NULL THEN
        -- A batch left in flight by a holder that is gone: adopted as a
        -- further attempt, read as first handed out.
        UPDATE {schema}.scopes
           SET run_lapses = run_lapses + (CASE WHEN run_handed_back THEN 0 ELSE 1 END),
               run_attempt = run_attempt + 1, run_owner = p_token, run_seq = v_next,
               run_handed_back = false, lease_seq = v_next, lease_cancels = 0
         WHERE ns = p_ns AND scope = p_scope;
        RETURN {schema}._handed(p_ns, p_scope)::text;
    END IF;

    -- What is ready: the whole queue; else a pending event past its quiet
    -- interval; else the head burst window once sealed.
    IF EXISTS (SELECT 1 FROM {schema}.items WHERE ns = p_ns AND scope = p_scope AND list = 'queue') THEN
        v_ready := 'queue';
    ELSIF EXISTS (SELECT 1 FROM {schema}.items WHERE ns = p_ns AND scope = p_scope AND list = 'pending') THEN
        IF v_s.pending_ready_ms > v_now THEN
            v_wait := v_s.pending_ready_ms - v_now;
        ELSE
            v_ready := 'pending';
        END IF;
    ELSIF EXISTS (SELECT 1 FROM {schema}.items WHERE ns = p_ns AND scope = p_scope AND list = 'burst') THEN
        SELECT min(win) INTO v_head FROM {schema}.items
         WHERE ns = p_ns AND scope = p_scope AND list = 'burst';
        SELECT * INTO v_win FROM {schema}.burst_windows
         WHERE ns = p_ns AND scope = p_scope AND n = v_head;
        IF FOUND AND NOT v_win.is_full AND v_win.seals_ms > v_now THEN
            v_wait := v_win.seals_ms - v_now;
        ELSE
            v_ready := 'burst';
        END IF;
    ELSE
        DELETE FROM {schema}.burst_windows WHERE ns = p_ns AND scope = p_scope;
    END IF;

    IF v_wait IS NOT NULL THEN
        RETURN json_build_object('v', 'wait', 'ms', v_wait)::text;
    END IF;
    IF v_ready IS NULL AND NOT EXISTS (
            SELECT 1 FROM {schema}.items WHERE ns = p_ns AND scope = p_scope AND list = 'outbox') THEN
        PERFORM {schema}._drop_lease(p_ns, p_scope);
        DELETE FROM {schema}.waiting_threads WHERE ns = p_ns AND scope = p_scope;
        RETURN json_build_object('v', 'released')::text;
    END IF;

    -- A new batch: the reports, then what is ready.
    PERFORM {schema}._drop_run(p_ns, p_scope);
    UPDATE {schema}.items SET list = 'run' WHERE ns = p_ns AND scope = p_scope AND list = 'outbox';
    IF v_ready = 'queue' THEN
        UPDATE {schema}.items SET list = 'run' WHERE ns = p_ns AND scope = p_scope AND list = 'queue';
    ELSIF v_ready = 'pending' THEN
        UPDATE {schema}.items SET list = 'run' WHERE ns = p_ns AND scope = p_scope AND list = 'pending';
        UPDATE {schema}.scopes SET pending_ready_ms = NULL WHERE ns = p_ns AND scope = p_scope;
    ELSIF v_ready = 'burst' THEN
        UPDATE {schema}.items SET list = 'run', win = NULL
         WHERE ns = p_ns AND scope = p_scope AND list = 'burst' AND win = v_head;
        DELETE FROM {schema}.burst_windows WHERE ns = p_ns AND scope = p_scope AND n = v_head;
    END IF;
    IF NOT {schema}._has_waiting(p_ns, p_scope) THEN
        DELETE FROM {schema}.waiting_threads WHERE ns = p_ns AND scope = p_scope;
        DELETE FROM {schema}.burst_windows WHERE ns = p_ns AND scope = p_scope;
    END IF;
    UPDATE {schema}.scopes
       SET run_owner = p_token, run_seq = v_next, run_attempt = 1, run_lapses = 0,
           run_handed_back = false, run_handed_ms = v_now, lease_seq = v_next, lease_cancels = 0
     WHERE ns = p_ns AND scope = p_scope;
    RETURN {schema}._handed(p_ns, p_scope)::text;
END
$$;

------------------------------------------------------------------ release

CREATE FUNCTION {schema}.release(p_ns text, p_scope text, p_platform text, p_tenant text,
                                 p_channel text, p_token text, p_seq bigint, p_hand_back boolean,
                                 p_ttl bigint)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_now bigint;
    v_s {schema}.scopes%ROWTYPE;
    v_own boolean;
    v_held boolean;
    v_answer boolean;
BEGIN
    PERFORM {schema}._lock(p_ns, p_platform, p_tenant, p_channel);
    v_now := {schema}._now_us() / 1000;
    SELECT * INTO v_s FROM {schema}.scopes WHERE ns = p_ns AND scope = p_scope;
    v_own := coalesce(v_s.run_owner = p_token AND v_s.run_seq = p_seq, false);
    v_held := coalesce(v_s.lease_token = p_token AND v_s.lease_expires_ms > v_now, false);
    v_answer := v_own;
    IF NOT p_hand_back THEN
        IF v_own THEN
            PERFORM {schema}._drop_run(p_ns, p_scope);
        ELSIF {schema}._was_acked(p_ns, p_scope, p_token, p_seq, v_now) THEN
            v_answer := true;
        END IF;
        IF v_own OR v_held THEN
            PERFORM {schema}._remember_ack(p_ns, p_scope, p_token, p_seq, p_ttl, v_now);
        END IF;
    ELSIF v_own THEN
        UPDATE {schema}.scopes SET run_handed_back = true WHERE ns = p_ns AND scope = p_scope;
    END IF;
    IF v_held THEN
        PERFORM {schema}._drop_lease(p_ns, p_scope);
        v_answer := true;
    END IF;
    RETURN v_answer;
END
$$;

-- A slot given up (`finish` of a slot lease: not handed back).
CREATE FUNCTION {schema}.release_slot(p_ns text, p_scope text, p_platform text, p_tenant text,
                                      p_channel text, p_token text, p_hand_back boolean, p_ttl bigint)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_now bigint;
    v_answer boolean;
BEGIN
    PERFORM {schema}._lock(p_ns, p_platform, p_tenant, p_channel);
    v_now := {schema}._now_us() / 1000;
    DELETE FROM {schema}.slots WHERE ns = p_ns AND scope = p_scope AND token = p_token
    RETURNING expires_ms > v_now INTO v_answer;
    v_answer := coalesce(v_answer, false);
    DELETE FROM {schema}.slot_waiters WHERE ns = p_ns AND scope = p_scope AND token = p_token;
    IF NOT p_hand_back THEN
        DELETE FROM {schema}.slot_runs WHERE ns = p_ns AND scope = p_scope AND token = p_token;
        IF FOUND THEN
            PERFORM {schema}._remember_ack(p_ns, p_scope, p_token, 0, p_ttl, v_now);
            v_answer := true;
        ELSIF {schema}._was_acked(p_ns, p_scope, p_token, 0, v_now) THEN
            v_answer := true;
        END IF;
    ELSE
        UPDATE {schema}.slot_runs SET handed_back = true
         WHERE ns = p_ns AND scope = p_scope AND token = p_token;
        IF FOUND THEN
            v_answer := true;
        END IF;
    END IF;
    RETURN v_answer;
END
$$;

------------------------------------------------------------------ slots

CREATE FUNCTION {schema}.acquire_slot(p_ns text, p_scope text, p_platform text, p_tenant text,
                                      p_channel text, p_token text, p_max bigint, p_ttl bigint)
RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_us bigint;
    v_now bigint;
    v_fence bigint;
BEGIN
    PERFORM {schema}._lock(p_ns, p_platform, p_tenant, p_channel);
    v_us := {schema}._now_us();
    v_now := v_us / 1000;
    PERFORM {schema}._purge_slots(p_ns, p_scope, v_now);
    UPDATE {schema}.slots SET expires_ms = v_now + p_ttl
     WHERE ns = p_ns AND scope = p_scope AND token = p_token;
    IF FOUND THEN
        RETURN json_build_object('v', 'granted', 'fence',
            coalesce((SELECT fence FROM {schema}.slot_runs WHERE ns = p_ns AND scope = p_scope
                      AND token = p_token), 0))::text;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM {schema}.slot_waiters WHERE ns = p_ns AND scope = p_scope AND token = p_token)
       OR NOT EXISTS (SELECT 1 FROM {schema}.slot_runs WHERE ns = p_ns AND scope = p_scope AND token = p_token) THEN
        RETURN json_build_object('v', 'gone')::text;
    END IF;
    IF p_max > 0 AND (SELECT count(*) FROM {schema}.slots WHERE ns = p_ns AND scope = p_scope) >= p_max THEN
        UPDATE {schema}.slot_waiters SET expires_ms = v_now + p_ttl
         WHERE ns = p_ns AND scope = p_scope AND token = p_token;
        RETURN json_build_object('v', 'full')::text;
    END IF;
    DELETE FROM {schema}.slot_waiters WHERE ns = p_ns AND scope = p_scope AND token = p_token;
    v_fence := {schema}._grant_slot(p_ns, p_scope, p_platform, p_tenant, p_channel, p_token,
                                    p_ttl, v_now, v_us);
    RETURN json_build_object('v', 'granted', 'fence', v_fence)::text;
END
$$;

------------------------------------------------------------------ marks

CREATE FUNCTION {schema}.unmark(p_ns text, p_platform text, p_tenant text, p_channel text, p_mark bytea)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_live boolean;
BEGIN
    PERFORM {schema}._lock(p_ns, p_platform, p_tenant, p_channel);
    DELETE FROM {schema}.marks WHERE ns = p_ns AND mark = p_mark
    RETURNING expires_ms > {schema}.now_ms() INTO v_live;
    RETURN coalesce(v_live, false);
END
$$;

------------------------------------------------------------------ stop requests

CREATE FUNCTION {schema}.request_cancel(p_ns text, p_scope text, p_platform text, p_tenant text,
                                        p_channel text, p_mark bytea, p_rid text, p_dedupe_ttl bigint)
RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_now bigint;
    v_mrid text;
    v_mrec text;
    v_count integer;
BEGIN
    PERFORM {schema}._lock(p_ns, p_platform, p_tenant, p_channel);
    v_now := {schema}._now_us() / 1000;
    SELECT request_id, recorded INTO v_mrid, v_mrec FROM {schema}.marks
     WHERE ns = p_ns AND mark = p_mark AND expires_ms > v_now;
    IF FOUND THEN
        IF v_mrid = p_rid AND v_mrec = 'cancel' THEN
            SELECT lease_cancels INTO v_count FROM {schema}.scopes
             WHERE ns = p_ns AND scope = p_scope AND lease_token IS NOT NULL AND lease_expires_ms > v_now;
            IF v_count IS NULL THEN
                SELECT coalesce(max(cancels), 0) INTO v_count FROM {schema}.slots
                 WHERE ns = p_ns AND scope = p_scope AND expires_ms > v_now;
            END IF;
            RETURN json_build_object('v', 'recorded', 'count', v_count)::text;
        END IF;
        RETURN json_build_object('v', 'duplicate')::text;
    END IF;
    PERFORM {schema}._mark(p_ns, p_mark, p_rid, 'cancel', v_now + p_dedupe_ttl);
    UPDATE {schema}.scopes SET lease_cancels = lease_cancels + 1
     WHERE ns = p_ns AND scope = p_scope AND lease_token IS NOT NULL AND lease_expires_ms > v_now
    RETURNING lease_cancels INTO v_count;
    IF FOUND THEN
        RETURN json_build_object('v', 'recorded', 'count', v_count)::text;
    END IF;
    PERFORM {schema}._purge_slots(p_ns, p_scope, v_now);
    UPDATE {schema}.slots SET cancels = cancels + 1 WHERE ns = p_ns AND scope = p_scope;
    IF NOT FOUND THEN
        RETURN json_build_object('v', 'no-holder')::text;
    END IF;
    SELECT max(cancels) INTO v_count FROM {schema}.slots WHERE ns = p_ns AND scope = p_scope;
    RETURN json_build_object('v', 'recorded', 'count', v_count)::text;
END
$$;

------------------------------------------------------------------ recovery

-- The scopes the sweep may claim: work and no live lease, or a slot run
-- whose slot and reservation both lapsed; skipped tenants left out; in a
-- random order, so a limit reached early does not favour the same ones.
CREATE FUNCTION {schema}.sweep_candidates(p_ns text, p_skip text[], p_cap integer)
RETURNS SETOF text LANGUAGE sql VOLATILE AS $$
    WITH t AS (SELECT {schema}.now_ms() AS now)
    SELECT s.scope FROM {schema}.scopes s, t
     WHERE s.ns = p_ns AND NOT (s.tenant = ANY (p_skip))
       AND (((s.lease_token IS NULL OR s.lease_expires_ms <= t.now)
             AND (s.run_owner IS NOT NULL OR EXISTS (
                    SELECT 1 FROM {schema}.items i WHERE i.ns = s.ns AND i.scope = s.scope
                       AND i.list IN ('queue', 'pending', 'burst', 'outbox'))))
         OR EXISTS (SELECT 1 FROM {schema}.slot_runs r WHERE r.ns = s.ns AND r.scope = s.scope
                      AND NOT EXISTS (SELECT 1 FROM {schema}.slots x WHERE x.ns = r.ns AND x.scope = r.scope
                                        AND x.token = r.token AND x.expires_ms > t.now)
                      AND NOT EXISTS (SELECT 1 FROM {schema}.slot_waiters w WHERE w.ns = r.ns
                                        AND w.scope = r.scope AND w.token = r.token
                                        AND w.expires_ms > t.now)))
     ORDER BY random()
     LIMIT p_cap
$$;

-- One claim of the sweep, for `p_token`: the scope's lease, or one
-- orphaned slot run. NULL when there is nothing to claim.
CREATE FUNCTION {schema}.claim(p_ns text, p_scope text, p_platform text, p_tenant text,
                               p_channel text, p_token text, p_ttl bigint)
RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_us bigint;
    v_now bigint;
    v_s {schema}.scopes%ROWTYPE;
    v_live boolean;
    v_fence bigint;
    v_r {schema}.slot_runs%ROWTYPE;
BEGIN
    PERFORM {schema}._lock(p_ns, p_platform, p_tenant, p_channel);
    v_us := {schema}._now_us();
    v_now := v_us / 1000;
    SELECT * INTO v_s FROM {schema}.scopes WHERE ns = p_ns AND scope = p_scope;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    v_live := v_s.lease_token IS NOT NULL AND v_s.lease_expires_ms > v_now;
    IF v_live AND v_s.lease_token = p_token AND v_s.lease_seq = 0 THEN
        UPDATE {schema}.scopes SET lease_expires_ms = v_now + p_ttl WHERE ns = p_ns AND scope = p_scope;
        RETURN json_build_object('v', 'scope', 'fence', v_s.lease_fence)::text;
    END IF;
    SELECT * INTO v_r FROM {schema}.slot_runs WHERE ns = p_ns AND scope = p_scope AND token = p_token;
    IF FOUND AND EXISTS (SELECT 1 FROM {schema}.slot_waiters WHERE ns = p_ns AND scope = p_scope
                         AND token = p_token) THEN
        RETURN json_build_object('v', 'slot', 'attempt', v_r.attempt, 'lapses', v_r.lapses,
            'max', v_r.max_slots, 'id', v_r.event_id, 'th', v_r.thread, 'at', v_r.admitted_ms,
            'b', v_r.body)::text;
    END IF;
    IF NOT v_live AND {schema}._has_work(p_ns, p_scope) THEN
        v_fence := {schema}._grant(p_ns, p_scope, p_platform, p_tenant, p_channel, p_token,
                                   p_ttl, v_now, v_us);
        RETURN json_build_object('v', 'scope', 'fence', v_fence)::text;
    END IF;
    PERFORM {schema}._purge_slots(p_ns, p_scope, v_now);
    SELECT * INTO v_r FROM {schema}.slot_runs r
     WHERE r.ns = p_ns AND r.scope = p_scope
       AND NOT EXISTS (SELECT 1 FROM {schema}.slots x WHERE x.ns = r.ns AND x.scope = r.scope AND x.token = r.token)
       AND NOT EXISTS (SELECT 1 FROM {schema}.slot_waiters w WHERE w.ns = r.ns AND w.scope = r.scope AND w.token = r.token)
     ORDER BY r.admitted_ms
     LIMIT 1;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    DELETE FROM {schema}.slot_runs WHERE ns = p_ns AND scope = p_scope AND token = v_r.token;
    v_r.attempt := v_r.attempt + 1;
    IF NOT v_r.handed_back THEN
        v_r.lapses := v_r.lapses + 1;
    END IF;
    INSERT INTO {schema}.slot_runs (ns, scope, token, attempt, lapses, handed_back, fence,
                                    max_slots, event_id, thread, admitted_ms, body)
    VALUES (p_ns, p_scope, p_token, v_r.attempt, v_r.lapses, false, 0, v_r.max_slots,
            v_r.event_id, v_r.thread, v_r.admitted_ms, v_r.body);
    INSERT INTO {schema}.slot_waiters (ns, scope, token, expires_ms)
    VALUES (p_ns, p_scope, p_token, v_now + p_ttl)
    ON CONFLICT (ns, scope, token) DO UPDATE SET expires_ms = EXCLUDED.expires_ms;
    RETURN json_build_object('v', 'slot', 'attempt', v_r.attempt, 'lapses', v_r.lapses,
        'max', v_r.max_slots, 'id', v_r.event_id, 'th', v_r.thread, 'at', v_r.admitted_ms,
        'b', v_r.body)::text;
END
$$;

------------------------------------------------------------------ inspection

-- One scope in full, read at one instant: {"now", "holder"?, "run",
-- "queue", "pending", "burst", "slots", "slot_runs"}.
CREATE FUNCTION {schema}.inspect(p_ns text, p_scope text)
RETURNS text LANGUAGE sql VOLATILE AS $$
    WITH t AS (SELECT {schema}.now_ms() AS now),
    entries AS (
        SELECT list, json_agg(json_build_object('id', event_id, 'th', thread, 'at', admitted_ms)
                              ORDER BY pos) AS es
          FROM {schema}.items
         WHERE ns = p_ns AND scope = p_scope AND kind = 'E'
         GROUP BY list)
    SELECT json_build_object(
        'now', t.now,
        'holder', (SELECT json_build_object('token', s.lease_token, 'fence', s.lease_fence,
                                            'left', s.lease_expires_ms - t.now)
                     FROM {schema}.scopes s
                    WHERE s.ns = p_ns AND s.scope = p_scope AND s.lease_token IS NOT NULL
                      AND s.lease_expires_ms > t.now),
        'run', (SELECT es FROM entries WHERE list = 'run'),
        'queue', (SELECT es FROM entries WHERE list = 'queue'),
        'pending', (SELECT es FROM entries WHERE list = 'pending'),
        'burst', (SELECT es FROM entries WHERE list = 'burst'),
        'slots', (SELECT json_agg(json_build_object(
                            'token', x.token, 'left', x.expires_ms - t.now,
                            'fence', coalesce((SELECT fence FROM {schema}.slot_runs r
                                                WHERE r.ns = x.ns AND r.scope = x.scope
                                                  AND r.token = x.token), 0))
                          ORDER BY x.expires_ms)
                    FROM {schema}.slots x
                   WHERE x.ns = p_ns AND x.scope = p_scope AND x.expires_ms > t.now),
        'slot_runs', (SELECT json_agg(json_build_object('id', r.event_id, 'th', r.thread,
                                                        'at', r.admitted_ms) ORDER BY r.admitted_ms)
                        FROM {schema}.slot_runs r WHERE r.ns = p_ns AND r.scope = p_scope)
    )::text
    FROM t
$$;

-- The scopes that may be busy (held, or with work in their care), for the
-- inspector: each is then read with inspect().
CREATE FUNCTION {schema}.busy_candidates(p_ns text, p_platform text, p_tenant text, p_channel text)
RETURNS SETOF text LANGUAGE sql VOLATILE AS $$
    WITH t AS (SELECT {schema}.now_ms() AS now)
    SELECT s.scope FROM {schema}.scopes s, t
     WHERE s.ns = p_ns
       AND (p_platform IS NULL OR s.platform = p_platform)
       AND (p_tenant IS NULL OR s.tenant = p_tenant)
       AND (p_channel IS NULL OR s.channel = p_channel)
       AND ((s.lease_token IS NOT NULL AND s.lease_expires_ms > t.now)
            OR s.run_owner IS NOT NULL
            OR EXISTS (SELECT 1 FROM {schema}.items i WHERE i.ns = s.ns AND i.scope = s.scope)
            OR EXISTS (SELECT 1 FROM {schema}.slots x WHERE x.ns = s.ns AND x.scope = s.scope
                         AND x.expires_ms > t.now)
            OR EXISTS (SELECT 1 FROM {schema}.slot_runs r WHERE r.ns = s.ns AND r.scope = s.scope))
     ORDER BY s.scope
$$;

CREATE FUNCTION {schema}.force_release(p_ns text, p_scope text, p_platform text, p_tenant text,
                                       p_channel text, p_fence bigint)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_now bigint;
    v_token text;
BEGIN
    PERFORM {schema}._lock(p_ns, p_platform, p_tenant, p_channel);
    v_now := {schema}._now_us() / 1000;
    UPDATE {schema}.scopes
       SET lease_token = NULL, lease_fence = NULL, lease_seq = NULL, lease_cancels = NULL,
           lease_expires_ms = NULL
     WHERE ns = p_ns AND scope = p_scope AND lease_token IS NOT NULL
       AND lease_expires_ms > v_now AND lease_fence = p_fence;
    IF FOUND THEN
        RETURN true;
    END IF;
    PERFORM {schema}._purge_slots(p_ns, p_scope, v_now);
    SELECT x.token INTO v_token FROM {schema}.slots x
      JOIN {schema}.slot_runs r ON r.ns = x.ns AND r.scope = x.scope AND r.token = x.token
     WHERE x.ns = p_ns AND x.scope = p_scope AND r.fence = p_fence
     LIMIT 1;
    IF v_token IS NULL THEN
        RETURN false;
    END IF;
    DELETE FROM {schema}.slots WHERE ns = p_ns AND scope = p_scope AND token = v_token;
    RETURN true;
END
$$;

------------------------------------------------------------------ housekeeping

-- Deletes what has expired (at most `p_batch` rows of each kind) and the
-- rows of scopes with nothing left; no call's answer depends on it.
CREATE FUNCTION {schema}.purge(p_ns text, p_batch integer)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_now bigint := {schema}.now_ms();
    v_total bigint := 0;
    v_n bigint;
    v_row record;
BEGIN
    DELETE FROM {schema}.marks WHERE (ns, mark) IN (
        SELECT ns, mark FROM {schema}.marks WHERE ns = p_ns AND expires_ms <= v_now LIMIT p_batch);
    GET DIAGNOSTICS v_n = ROW_COUNT; v_total := v_total + v_n;
    DELETE FROM {schema}.acks WHERE (ns, scope, token, seq) IN (
        SELECT ns, scope, token, seq FROM {schema}.acks WHERE ns = p_ns AND expires_ms <= v_now LIMIT p_batch);
    GET DIAGNOSTICS v_n = ROW_COUNT; v_total := v_total + v_n;
    DELETE FROM {schema}.subscriptions WHERE (ns, platform, tenant, channel, thread) IN (
        SELECT ns, platform, tenant, channel, thread FROM {schema}.subscriptions
         WHERE ns = p_ns AND expires_ms <= v_now LIMIT p_batch);
    GET DIAGNOSTICS v_n = ROW_COUNT; v_total := v_total + v_n;
    DELETE FROM {schema}.slots WHERE (ns, scope, token) IN (
        SELECT ns, scope, token FROM {schema}.slots WHERE ns = p_ns AND expires_ms <= v_now LIMIT p_batch);
    GET DIAGNOSTICS v_n = ROW_COUNT; v_total := v_total + v_n;
    DELETE FROM {schema}.slot_waiters WHERE (ns, scope, token) IN (
        SELECT ns, scope, token FROM {schema}.slot_waiters WHERE ns = p_ns AND expires_ms <= v_now LIMIT p_batch);
    GET DIAGNOSTICS v_n = ROW_COUNT; v_total := v_total + v_n;
    DELETE FROM {schema}.kv WHERE (ns, key) IN (
        SELECT ns, key FROM {schema}.kv WHERE ns = p_ns AND expires_ms <= v_now LIMIT p_batch);
    GET DIAGNOSTICS v_n = ROW_COUNT; v_total := v_total + v_n;
    -- A scope row with nothing left carries nothing: deleted under its
    -- tag's lock (tried, never waited for), judged again once held.
    FOR v_row IN
        SELECT c.scope, c.platform, c.tenant, c.channel FROM {schema}.scopes c
         WHERE c.ns = p_ns AND (c.lease_token IS NULL OR c.lease_expires_ms <= v_now)
           AND c.run_owner IS NULL
           AND NOT EXISTS (SELECT 1 FROM {schema}.items i WHERE i.ns = c.ns AND i.scope = c.scope)
           AND NOT EXISTS (SELECT 1 FROM {schema}.slot_runs r WHERE r.ns = c.ns AND r.scope = c.scope)
         LIMIT p_batch
    LOOP
        CONTINUE WHEN NOT pg_try_advisory_xact_lock(hashtextextended(
            p_ns || chr(31) || v_row.platform || chr(31) || v_row.tenant || chr(31) || v_row.channel, 0));
        DELETE FROM {schema}.scopes c
         WHERE c.ns = p_ns AND c.scope = v_row.scope
           AND (c.lease_token IS NULL OR c.lease_expires_ms <= {schema}.now_ms())
           AND c.run_owner IS NULL
           AND NOT EXISTS (SELECT 1 FROM {schema}.items i WHERE i.ns = c.ns AND i.scope = c.scope)
           AND NOT EXISTS (SELECT 1 FROM {schema}.slots x WHERE x.ns = c.ns AND x.scope = c.scope
                             AND x.expires_ms > {schema}.now_ms())
           AND NOT EXISTS (SELECT 1 FROM {schema}.slot_waiters w WHERE w.ns = c.ns AND w.scope = c.scope
                             AND w.expires_ms > {schema}.now_ms())
           AND NOT EXISTS (SELECT 1 FROM {schema}.slot_runs r WHERE r.ns = c.ns AND r.scope = c.scope)
           AND NOT EXISTS (SELECT 1 FROM {schema}.waiting_threads w WHERE w.ns = c.ns AND w.scope = c.scope);
        GET DIAGNOSTICS v_n = ROW_COUNT; v_total := v_total + v_n;
    END LOOP;
    RETURN v_total;
END
$$;
