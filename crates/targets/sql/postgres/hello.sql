-- Hello World schema and routines for PostgreSQL (loadrig).
-- Idempotent: safe to run again. Send as one simple query (batch_execute)
-- or with `psql -v ON_ERROR_STOP=1 -f hello.sql`.

CREATE TABLE IF NOT EXISTS helloworld (
    hello   VARCHAR(15),
    world   VARCHAR(15),
    dialect VARCHAR(15) PRIMARY KEY
);

-- Returns the number of rows inserted: 1, or 0 when the dialect exists
-- already (no error, so loading is re-runnable).
CREATE OR REPLACE FUNCTION hello_insert(p_hello VARCHAR, p_world VARCHAR, p_dialect VARCHAR)
RETURNS INTEGER
LANGUAGE plpgsql
AS $$
DECLARE
    v_n INTEGER;
BEGIN
    INSERT INTO helloworld (hello, world, dialect)
         VALUES (p_hello, p_world, p_dialect)
    ON CONFLICT (dialect) DO NOTHING;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END;
$$;

-- Zero or one row: SELECT * FROM hello_select('English');
CREATE OR REPLACE FUNCTION hello_select(p_dialect VARCHAR)
RETURNS TABLE (hello VARCHAR, world VARCHAR)
LANGUAGE sql
STABLE
AS $$
    SELECT h.hello, h.world FROM helloworld h WHERE h.dialect = p_dialect;
$$;
