"""Secrets and connections (Materialize's CREATE SECRET, CREATE CONNECTION ... TO POSTGRES,
VALIDATE CONNECTION), through the wire; a secret's value is found nowhere but in use."""

from __future__ import annotations

import secrets as pysecrets

import psycopg
import pytest
from server import free_port


def test_secret_and_connection_lifecycle(server, conn):
    conn.execute("CREATE SECRET lc_pw AS 'not-a-real-password'")
    conn.execute(f"CREATE CONNECTION lc_pg TO POSTGRES (HOST '127.0.0.1', PORT {server.port}, USER 'materialize',"
                 " PASSWORD SECRET lc_pw, DATABASE 'materialize', SSL MODE 'disable')")
    # the server itself speaks PostgreSQL: validation connects to it
    assert conn.execute("VALIDATE CONNECTION lc_pg").statusmessage == "VALIDATE CONNECTION"
    assert ("lc_pw", "") in conn.execute("SHOW SECRETS").fetchall()
    assert ("lc_pg", "postgres", "") in conn.execute("SHOW CONNECTIONS").fetchall()
    (create,) = conn.execute("SELECT create_sql FROM mz_connections WHERE name = 'lc_pg'").fetchone()
    assert "PASSWORD = SECRET materialize.public.lc_pw" in create
    name, sql = conn.execute("SHOW CREATE CONNECTION lc_pg").fetchone()
    assert name == "materialize.public.lc_pg" and sql == create
    assert conn.execute("SELECT count(*) FROM mz_secrets WHERE name = 'lc_pw'").fetchone() == (1,)

    with pytest.raises(psycopg.errors.DuplicateObject):
        conn.execute("CREATE SECRET lc_pw AS 'x'")
    conn.execute("CREATE SECRET IF NOT EXISTS lc_pw AS 'x'")
    with pytest.raises(psycopg.errors.DependentObjectsStillExist):
        conn.execute("DROP SECRET lc_pw")
    with pytest.raises(psycopg.errors.InvalidParameterValue):  # a password must be a secret
        conn.execute("CREATE CONNECTION lc_bad TO POSTGRES (HOST 'h', USER 'u', PASSWORD 'clear')")
    with pytest.raises(psycopg.errors.FeatureNotSupported):
        conn.execute("CREATE CONNECTION lc_bad TO POSTGRES (HOST 'h', USER 'u', SSH TUNNEL t)")
    with pytest.raises(psycopg.errors.FeatureNotSupported):
        conn.execute("CREATE CONNECTION lc_bad TO KAFKA (BROKER 'b')")
    # a port nothing listens on: the reason comes back, 08001
    with pytest.raises(psycopg.OperationalError) as e:
        conn.execute(f"CREATE CONNECTION lc_bad TO POSTGRES (HOST '127.0.0.1', PORT {free_port()}, USER 'u')")
    assert e.value.sqlstate == "08001"
    conn.execute(f"CREATE CONNECTION lc_late TO POSTGRES (HOST '127.0.0.1', PORT {free_port()}, USER 'u')"
                 " WITH (VALIDATE = false)")
    with pytest.raises(psycopg.OperationalError):
        conn.execute("VALIDATE CONNECTION lc_late")

    conn.execute("ALTER SECRET lc_pw AS 'another'")
    conn.execute("VALIDATE CONNECTION lc_pg")
    conn.execute("DROP SECRET lc_pw CASCADE")
    assert conn.execute("SELECT name FROM mz_connections WHERE name LIKE 'lc_%' ORDER BY 1").fetchall() == \
        [("lc_late",)]
    conn.execute("DROP CONNECTION lc_late")
    conn.execute("DROP CONNECTION IF EXISTS lc_late")
    with pytest.raises(psycopg.errors.UndefinedObject):
        conn.execute("DROP SECRET lc_pw")


def test_a_secret_is_found_nowhere(server, conn):
    """Its value is not in any file of the data directory, the server's log, or any
    system table, after CREATE and ALTER (both values)."""
    first, second = (f"sekrit-{pysecrets.token_hex(12)}" for _ in range(2))
    conn.execute(f"CREATE SECRET nowhere_pw AS '{first}'")
    conn.execute("CREATE CONNECTION nowhere_pg TO POSTGRES (HOST 'example.invalid', USER 'u',"
                 " PASSWORD SECRET nowhere_pw) WITH (VALIDATE = false)")
    conn.execute(f"ALTER SECRET nowhere_pw AS '{second}'")
    conn.execute("SHOW CREATE CONNECTION nowhere_pg").fetchall()

    tables = conn.execute("SELECT table_schema, table_name FROM information_schema.tables"
                          " WHERE table_type = 'SYSTEM TABLE'").fetchall()
    assert len(tables) > 50
    read = 0
    for schema, name in tables:
        try:
            rows = conn.execute(f'SELECT * FROM "{schema}"."{name}"').fetchall()
        except psycopg.Error:  # a system table this session may not read
            continue
        read += 1
        text = repr(rows)
        assert first not in text and second not in text, f"{schema}.{name} shows the secret"
    assert read > 50

    for value in (first.encode(), second.encode()):
        for path in server.data_dir.rglob("*"):
            if path.is_file():
                assert value not in path.read_bytes(), f"{path} holds the secret"
        assert value not in server.log_path.read_bytes()
    key = server.data_dir / "catalog.key"
    assert key.stat().st_mode & 0o777 == 0o600
    conn.execute("DROP SECRET nowhere_pw CASCADE")
