-- Hello World schema and routines for MariaDB 10.11 (loadrig).
-- Idempotent: safe to run again. No DELIMITER directives: send the whole file
-- as ONE multi-statement query (see voter.sql), or
--   mariadb --delimiter='#~#' -h 127.0.0.1 -u bench -pbench bench < hello.sql

CREATE TABLE IF NOT EXISTS helloworld (
    hello   VARCHAR(15),
    world   VARCHAR(15),
    dialect VARCHAR(15) NOT NULL PRIMARY KEY
) ENGINE = InnoDB;

-- CALL hello_insert(hello, world, dialect): one-row result set `inserted`,
-- 1 or 0 when the dialect exists already (no error, so loading is re-runnable).
CREATE OR REPLACE PROCEDURE hello_insert(IN p_hello VARCHAR(15), IN p_world VARCHAR(15), IN p_dialect VARCHAR(15))
    MODIFIES SQL DATA
BEGIN
    DECLARE v_dup INT DEFAULT 0;
    DECLARE CONTINUE HANDLER FOR 1062 SET v_dup = 1;   -- ER_DUP_ENTRY
    INSERT INTO helloworld (hello, world, dialect) VALUES (p_hello, p_world, p_dialect);
    SELECT IF(v_dup = 1, 0, 1) AS inserted;
END;

-- CALL hello_select(dialect): zero or one row (hello, world).
CREATE OR REPLACE PROCEDURE hello_select(IN p_dialect VARCHAR(15))
    READS SQL DATA
BEGIN
    SELECT hello, world FROM helloworld WHERE dialect = p_dialect;
END;
