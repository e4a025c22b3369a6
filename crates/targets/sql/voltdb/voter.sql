-- The Voter's schema on VoltDB, as VoltDB's example defines it: votes
-- partitioned on phone_number, contestants and area codes replicated, two
-- views, and the procedures (Vote and Initialize are Java classes from
-- crates/targets/java/voter, loaded before this runs).
CREATE TABLE contestants (
    contestant_number INTEGER NOT NULL,
    contestant_name   VARCHAR(50) NOT NULL,
    CONSTRAINT pk_contestants PRIMARY KEY (contestant_number)
);
CREATE TABLE area_code_state (
    area_code SMALLINT NOT NULL,
    state     VARCHAR(2) NOT NULL,
    CONSTRAINT pk_area_code_state PRIMARY KEY (area_code)
);
CREATE TABLE votes (
    phone_number      BIGINT NOT NULL,
    state             VARCHAR(2) NOT NULL,
    contestant_number INTEGER NOT NULL
);
PARTITION TABLE votes ON COLUMN phone_number;
CREATE VIEW v_votes_by_phone_number (phone_number, num_votes)
    AS SELECT phone_number, COUNT(*) FROM votes GROUP BY phone_number;
CREATE VIEW v_votes_by_contestant_number_state (contestant_number, state, num_votes)
    AS SELECT contestant_number, state, COUNT(*) FROM votes GROUP BY contestant_number, state;
CREATE PROCEDURE FROM CLASS voter.Initialize;
CREATE PROCEDURE PARTITION ON TABLE votes COLUMN phone_number PARAMETER 0 FROM CLASS voter.Vote;
CREATE PROCEDURE Results AS
    SELECT c.contestant_name, c.contestant_number, SUM(v.num_votes) AS total_votes
      FROM v_votes_by_contestant_number_state v, contestants c
     WHERE v.contestant_number = c.contestant_number
     GROUP BY c.contestant_name, c.contestant_number
     ORDER BY total_votes DESC, c.contestant_number;
