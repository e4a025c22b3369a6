-- Voter schema and vote routine for PostgreSQL (loadrig).
-- Idempotent: safe to run again on an existing database. Schema and routines
-- only; contestants and the area codes are loaded by loadrig with INSERTs.
-- Send the whole file as one simple query (e.g. tokio-postgres batch_execute)
-- or with `psql -v ON_ERROR_STOP=1 -f voter.sql`.

CREATE TABLE IF NOT EXISTS contestants (
    contestant_number INTEGER     PRIMARY KEY,
    contestant_name   VARCHAR(50) NOT NULL
);

CREATE TABLE IF NOT EXISTS area_code_state (
    area_code SMALLINT   PRIMARY KEY,
    state     VARCHAR(2) NOT NULL
);

CREATE TABLE IF NOT EXISTS votes (
    phone_number      BIGINT     NOT NULL,
    state             VARCHAR(2) NOT NULL,
    contestant_number INTEGER    NOT NULL
);
CREATE INDEX IF NOT EXISTS votes_contestant_number_state_idx
    ON votes (contestant_number, state);

-- Plays the role of VoltDB's v_votes_by_phone_number view; maintained by
-- voter_vote(). Invariant: SUM(num_votes) = COUNT(*) FROM votes.
CREATE TABLE IF NOT EXISTS votes_by_phone (
    phone_number BIGINT  PRIMARY KEY,
    num_votes    INTEGER NOT NULL
);

CREATE OR REPLACE VIEW v_votes_by_contestant_number_state AS
    SELECT contestant_number, state, COUNT(*) AS num_votes
      FROM votes
     GROUP BY contestant_number, state;

-- voter_vote: one call = one atomic transaction (the calling statement's).
-- Returns 0 accepted, 1 invalid contestant, 2 phone over its vote limit.
-- Concurrency: the limit is enforced by a conditional upsert on
-- votes_by_phone, which takes the phone's row lock; under READ COMMITTED a
-- concurrent voter for the same phone waits, then re-evaluates the WHERE on
-- the newest row version, so the limit can never be exceeded. Only one row
-- lock is taken per call, so calls cannot deadlock each other.
CREATE OR REPLACE FUNCTION voter_vote(p_phone BIGINT, p_contestant INTEGER, p_max_votes INTEGER)
RETURNS INTEGER
LANGUAGE plpgsql
AS $$
DECLARE
    v_state VARCHAR(2);
BEGIN
    -- 1. unknown contestant
    PERFORM 1 FROM contestants WHERE contestant_number = p_contestant;
    IF NOT FOUND THEN
        RETURN 1;
    END IF;

    -- 2. over the limit? (count and bump atomically, under the row lock)
    IF p_max_votes < 1 THEN
        RETURN 2;
    END IF;
    INSERT INTO votes_by_phone AS b (phone_number, num_votes)
         VALUES (p_phone, 1)
    ON CONFLICT (phone_number) DO UPDATE
           SET num_votes = b.num_votes + 1
         WHERE b.num_votes < p_max_votes;
    IF NOT FOUND THEN   -- row exists and num_votes >= p_max_votes: nothing changed
        RETURN 2;
    END IF;

    -- 3. state from the area code (phone / 10^7), 'XX' when unknown
    SELECT a.state INTO v_state
      FROM area_code_state a
     WHERE a.area_code = p_phone / 10000000;
    IF NOT FOUND THEN
        v_state := 'XX';
    END IF;

    -- 4. record the vote
    INSERT INTO votes (phone_number, state, contestant_number)
         VALUES (p_phone, v_state, p_contestant);
    RETURN 0;
END;
$$;
