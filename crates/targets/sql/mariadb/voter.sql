-- Voter schema and vote routine for MariaDB 10.11 (loadrig).
-- Idempotent: safe to run again. Schema and routines only; contestants and
-- the area codes are loaded by loadrig with INSERTs.
--
-- Loading: there are no client DELIMITER directives. Send the whole file as
-- ONE multi-statement query (CLIENT_MULTI_STATEMENTS, e.g. mysql_async
-- `query_drop(include_str!(..))`); the server splits it itself, routine
-- bodies included. With the command-line client use a delimiter that does
-- not occur in the file so it sends everything at once:
--   mariadb --delimiter='#~#' -h 127.0.0.1 -u bench -pbench bench < voter.sql
-- Routines need CREATE ROUTINE on the database (bench has ALL on bench.*)
-- and, with binary logging on, log_bin_trust_function_creators=1
-- (scripts/services sets it).

CREATE TABLE IF NOT EXISTS contestants (
    contestant_number INTEGER     NOT NULL PRIMARY KEY,
    contestant_name   VARCHAR(50) NOT NULL
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS area_code_state (
    area_code SMALLINT   NOT NULL PRIMARY KEY,
    state     VARCHAR(2) NOT NULL
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS votes (
    phone_number      BIGINT     NOT NULL,
    state             VARCHAR(2) NOT NULL,
    contestant_number INTEGER    NOT NULL
) ENGINE = InnoDB;
CREATE INDEX IF NOT EXISTS votes_contestant_number_state_idx
    ON votes (contestant_number, state);

-- Plays the role of VoltDB's v_votes_by_phone_number view; maintained by
-- voter_vote(). Invariant: SUM(num_votes) = COUNT(*) FROM votes.
CREATE TABLE IF NOT EXISTS votes_by_phone (
    phone_number BIGINT  NOT NULL PRIMARY KEY,
    num_votes    INTEGER NOT NULL
) ENGINE = InnoDB;

CREATE OR REPLACE VIEW v_votes_by_contestant_number_state AS
    SELECT contestant_number, state, COUNT(*) AS num_votes
      FROM votes
     GROUP BY contestant_number, state;

-- CALL voter_vote(phone, contestant, max_votes) returns a one-row, one-column
-- result set `code`: 0 accepted, 1 invalid contestant, 2 over the limit.
-- (Then the usual final OK packet of a CALL; the client needs
-- CLIENT_MULTI_RESULTS, which every current client sets.)
-- One call = one transaction of its own: START TRANSACTION ... COMMIT; an
-- open transaction of the caller's is committed implicitly first. On any
-- error the handler rolls back and re-signals it (e.g. 1213 deadlock, 1205
-- lock wait timeout: the caller may retry).
-- Concurrency (default REPEATABLE READ): step 2 first makes sure the phone's
-- votes_by_phone row exists with INSERT ... ON DUPLICATE KEY UPDATE, which
-- takes an exclusive lock on that row (no gap lock, no shared lock, so no
-- S->X upgrade deadlock), then bumps it with an UPDATE whose WHERE carries
-- the limit. ROW_COUNT() of that UPDATE is 1 iff the vote was counted, with
-- or without CLIENT_FOUND_ROWS. Only one row lock is contended per call.
CREATE OR REPLACE PROCEDURE voter_vote(IN p_phone BIGINT, IN p_contestant INT, IN p_max_votes INT)
    MODIFIES SQL DATA
BEGIN
    DECLARE v_code  INT DEFAULT 0;
    DECLARE v_state VARCHAR(2);
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        ROLLBACK;
        RESIGNAL;
    END;

    START TRANSACTION;
    -- 1. unknown contestant
    IF NOT EXISTS (SELECT 1 FROM contestants WHERE contestant_number = p_contestant) THEN
        SET v_code = 1;
    -- 2. over the limit?
    ELSEIF p_max_votes < 1 THEN
        SET v_code = 2;
    ELSE
        INSERT INTO votes_by_phone (phone_number, num_votes) VALUES (p_phone, 0)
            ON DUPLICATE KEY UPDATE num_votes = num_votes;
        UPDATE votes_by_phone
           SET num_votes = num_votes + 1
         WHERE phone_number = p_phone AND num_votes < p_max_votes;
        IF ROW_COUNT() = 0 THEN
            SET v_code = 2;
        ELSE
            -- 3. state from the area code (phone DIV 10^7), 'XX' when unknown
            SET v_state = COALESCE(
                (SELECT state FROM area_code_state WHERE area_code = p_phone DIV 10000000),
                'XX');
            -- 4. record the vote
            INSERT INTO votes (phone_number, state, contestant_number)
                 VALUES (p_phone, v_state, p_contestant);
        END IF;
    END IF;

    IF v_code = 0 THEN
        COMMIT;
    ELSE
        ROLLBACK;   -- nothing to keep (undoes a fresh 0-vote row, if any)
    END IF;
    SELECT v_code AS code;
END;
