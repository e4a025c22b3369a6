-- Erlvolt's hello world on VoltDB: one table partitioned on its key and
-- two single-statement procedures, each single-partition.
CREATE TABLE helloworld (
    hello   VARCHAR(15),
    world   VARCHAR(15),
    dialect VARCHAR(15) NOT NULL,
    CONSTRAINT pk_helloworld PRIMARY KEY (dialect)
);
PARTITION TABLE helloworld ON COLUMN dialect;
CREATE PROCEDURE Insert PARTITION ON TABLE helloworld COLUMN dialect PARAMETER 2 AS
    INSERT INTO helloworld (hello, world, dialect) VALUES (?, ?, ?);
CREATE PROCEDURE Select PARTITION ON TABLE helloworld COLUMN dialect AS
    SELECT hello, world FROM helloworld WHERE dialect = ?;
