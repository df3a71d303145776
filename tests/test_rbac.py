"""Roles and privileges as Materialize's RBAC, over the wire (issue 16, item 4): a second
login user without grants is refused with 42501 and Materialize's message, gets access
after GRANT and loses it after REVOKE; superusers pass; owners; DROP ROLE while owning
objects; the privilege functions and system tables. Every error leaves the session usable.

Each test makes its own roles and objects (names start with ``rb_``) and drops them, as
the server is shared with the other test modules."""

from __future__ import annotations

import shutil
import subprocess
import uuid

import psycopg
import pytest


def _err(conn, sql, sqlstate, message=None):
    with pytest.raises(psycopg.Error) as e:
        conn.execute(sql)
    assert e.value.sqlstate == sqlstate, (e.value.sqlstate, str(e.value))
    if message is not None:
        assert e.value.diag.message_primary == message
    assert conn.execute("SELECT 1").fetchone() == (1,)  # the session stays usable
    return e.value


def _login(server, user: str) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=server.port, user=user, dbname="materialize", autocommit=True,
                           connect_timeout=10)


@pytest.fixture
def admin(server):
    with server.connect() as c:
        yield c


@pytest.fixture
def names(admin):
    """A fresh suffix; drops what the test made with it (tables first, then roles)."""
    suffix = uuid.uuid4().hex[:6]
    yield suffix
    for t in admin.execute("SELECT name FROM mz_tables WHERE name LIKE %s", (f"rb_%{suffix}",)).fetchall():
        admin.execute(f'DROP TABLE IF EXISTS "{t[0]}" CASCADE')
    for v in admin.execute("SELECT name FROM mz_views WHERE name LIKE %s", (f"rb_%{suffix}",)).fetchall():
        admin.execute(f'DROP VIEW IF EXISTS "{v[0]}"')
    for c in admin.execute("SELECT name FROM mz_clusters WHERE name LIKE %s", (f"rb_%{suffix}",)).fetchall():
        admin.execute(f'DROP CLUSTER IF EXISTS "{c[0]}" CASCADE')
    for r in admin.execute("SELECT name FROM mz_roles WHERE name LIKE %s", (f"rb_%{suffix}",)).fetchall():
        admin.execute(f'DROP ROLE IF EXISTS "{r[0]}"')


def test_login_user_without_grants_is_refused_until_granted(server, admin, names):
    t, joe = f"rb_t_{names}", f"rb_joe_{names}"
    admin.execute(f"CREATE TABLE {t} (a int)")
    admin.execute(f"INSERT INTO {t} VALUES (1)")
    admin.execute(f"CREATE ROLE {joe} LOGIN")  # no role is made at login (no --auto-create-roles)
    with _login(server, joe) as c:
        assert c.execute("SELECT current_user, session_user").fetchone() == (joe, joe)
        assert admin.execute("SELECT rolcanlogin, rolsuper, inherit FROM mz_roles WHERE name = %s",
                             (joe,)).fetchone() == (True, False, True)
        denied = f'permission denied for TABLE "materialize.public.{t}"'
        _err(c, f"SELECT * FROM {t}", "42501", denied)
        _err(c, f"INSERT INTO {t} VALUES (2)", "42501", denied)
        _err(c, f"DELETE FROM {t}", "42501", denied)
        _err(c, f"CREATE TABLE rb_mine_{names} (a int)", "42501", 'permission denied for SCHEMA "materialize.public"')
        _err(c, f"COPY (SELECT * FROM {t}) TO STDOUT", "42501", denied)
        _err(c, f"SUBSCRIBE {t}", "42501", denied)
        _err(c, f"EXPLAIN SELECT * FROM {t}", "42501", denied)
        assert c.execute("SELECT count(*) > 0 FROM mz_tables").fetchone() == (True,)  # system tables: PUBLIC

        admin.execute(f"GRANT SELECT ON TABLE {t} TO {joe}")
        assert c.execute(f"SELECT a FROM {t}").fetchall() == [(1,)]
        _err(c, f"INSERT INTO {t} VALUES (2)", "42501", denied)
        admin.execute(f"GRANT INSERT ON {t} TO {joe}")
        c.execute(f"INSERT INTO {t} VALUES (2)")
        with c.cursor().copy(f"COPY {t} FROM STDIN") as cp:
            cp.write_row((3,))
        assert c.execute(f"SELECT a FROM {t} ORDER BY a").fetchall() == [(1,), (2,), (3,)]
        joe_id = admin.execute("SELECT id FROM mz_roles WHERE name = %s", (joe,)).fetchone()[0]
        assert admin.execute("SELECT privileges FROM mz_tables WHERE name = %s", (t,)).fetchone()[0] == \
            ["u1=arwd/u1", f"{joe_id}=ar/u1"]
        assert c.execute(f"SELECT has_table_privilege('{t}', 'SELECT'), has_table_privilege('{t}', 'UPDATE'), "
                         f"has_table_privilege('{joe}', '{t}', 'INSERT')").fetchone() == (True, False, True)

        admin.execute(f"REVOKE ALL ON {t} FROM {joe}")
        _err(c, f"SELECT * FROM {t}", "42501", denied)
        assert c.execute(f"SELECT has_table_privilege('{t}', 'SELECT')").fetchone() == (False,)


def test_superuser_bypasses_checks_and_set_role_takes_a_role(server, admin, names):
    t, joe = f"rb_t_{names}", f"rb_joe_{names}"
    admin.execute(f"CREATE TABLE {t} (a int)")
    admin.execute(f"CREATE ROLE {joe} LOGIN")
    assert admin.execute("SELECT rolsuper FROM mz_roles WHERE name = current_user").fetchone() == (True,)
    with _login(server, joe) as c:
        _err(c, f"SELECT * FROM {t}", "42501")
        admin.execute(f"ALTER ROLE {joe} SUPERUSER")
        assert c.execute(f"SELECT count(*) FROM {t}").fetchone() == (0,)
        _err(c, f"ALTER ROLE {joe} NOSUPERUSER NOSUPERUSER", "42601")  # conflicting or redundant options
        admin.execute(f"ALTER ROLE {joe} NOSUPERUSER")
        _err(c, f"SELECT * FROM {t}", "42501")
    # SET ROLE: privileges are the role's; session_user stays
    admin.execute(f"SET ROLE {joe}")
    try:
        assert admin.execute("SELECT current_user, session_user").fetchone() == (joe, "materialize")
        _err(admin, f"SELECT * FROM {t}", "42501")
    finally:
        admin.execute("RESET ROLE")
    assert admin.execute("SELECT current_user").fetchone() == ("materialize",)
    with _login(server, joe) as c:
        _err(c, "SET ROLE materialize", "42501", 'permission denied to set role "materialize"')


def test_drop_role_refused_while_it_owns_objects(server, admin, names):
    joe = f"rb_joe_{names}"
    admin.execute(f"CREATE ROLE {joe} LOGIN")
    admin.execute(f"GRANT CREATE ON SCHEMA public TO {joe}")
    with _login(server, joe) as c:
        c.execute(f"CREATE TABLE rb_own_{names} (a int)")
        c.execute(f"INSERT INTO rb_own_{names} VALUES (1)")  # the owner holds every privilege
        assert c.execute(f"SELECT a FROM rb_own_{names}").fetchall() == [(1,)]
        _err(c, f"ALTER TABLE rb_own_{names} OWNER TO materialize", "42501",
             'must be a member of role "materialize"')
    owner = admin.execute("SELECT r.name FROM mz_tables t JOIN mz_roles r ON r.id = t.owner_id "
                          "WHERE t.name = %s", (f"rb_own_{names}",)).fetchone()
    assert owner == (joe,)
    e = _err(admin, f"DROP ROLE {joe}", "2BP01", f'role "{joe}" cannot be dropped because some objects depend on it')
    assert f"owner of table materialize.public.rb_own_{names}" in e.diag.message_detail
    # ALTER ... OWNER TO (or REASSIGN OWNED) hands the table over; then the role can go
    admin.execute(f"ALTER TABLE rb_own_{names} OWNER TO materialize")
    admin.execute(f"ALTER TABLE rb_own_{names} OWNER TO {joe}")
    admin.execute(f"REASSIGN OWNED BY {joe} TO materialize")
    assert admin.execute("SELECT owner_id FROM mz_tables WHERE name = %s", (f"rb_own_{names}",)).fetchone() == ("u1",)
    admin.execute(f"DROP ROLE {joe}")
    admin.execute(f"DROP ROLE IF EXISTS {joe}")
    _err(admin, f"DROP ROLE {joe}", "42704", f"unknown role '{joe}'")
    assert admin.execute("SELECT privileges FROM mz_schemas WHERE name = 'public'").fetchone()[0] == \
        ["u1=UC/u1", "=U/s1"]  # the dropped role's grant went with it


def test_role_membership_passes_privileges(server, admin, names):
    t, joe, readers = f"rb_t_{names}", f"rb_joe_{names}", f"rb_readers_{names}"
    admin.execute(f"CREATE TABLE {t} (a int)")
    admin.execute(f"CREATE ROLE {readers}")
    admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {readers}")
    admin.execute(f"CREATE ROLE {joe} LOGIN")
    with _login(server, joe) as c:
        _err(c, f"SELECT * FROM {t}", "42501")
        admin.execute(f"GRANT {readers} TO {joe}")
        assert c.execute(f"SELECT count(*) FROM {t}").fetchone() == (0,)
        assert c.execute(f"SELECT pg_has_role('{readers}', 'MEMBER'), pg_has_role('materialize', 'MEMBER')"
                         ).fetchone() == (True, False)
        assert admin.execute("SELECT r.name, m.name FROM mz_role_members x JOIN mz_roles r ON r.id = x.role_id "
                             "JOIN mz_roles m ON m.id = x.member WHERE r.name = %s", (readers,)).fetchall() == \
            [(readers, joe)]
        _err(admin, f"GRANT {joe} TO {readers}", "0LP01")  # a cycle
        admin.execute(f"REVOKE {readers} FROM {joe}")
        _err(c, f"SELECT * FROM {t}", "42501")
    _err(admin, f"DROP ROLE {readers}, rb_nobody_{names}", "42704")
    assert admin.execute("SELECT count(*) FROM mz_roles WHERE name = %s", (readers,)).fetchone() == (1,)  # all or none


def test_view_reads_are_checked_against_the_view_owner(server, admin, names):
    t, v, joe = f"rb_t_{names}", f"rb_v_{names}", f"rb_joe_{names}"
    admin.execute(f"CREATE TABLE {t} (a int)")
    admin.execute(f"INSERT INTO {t} VALUES (7)")
    admin.execute(f"CREATE VIEW {v} AS SELECT a FROM {t}")
    admin.execute(f"CREATE ROLE {joe} LOGIN")
    with _login(server, joe) as c:
        _err(c, f"SELECT * FROM {v}", "42501", f'permission denied for VIEW "materialize.public.{v}"')
        admin.execute(f"GRANT SELECT ON {v} TO {joe}")
        assert c.execute(f"SELECT a FROM {v}").fetchall() == [(7,)]  # the owner may read t
        _err(c, f"SELECT * FROM {t}", "42501")
        _err(admin, f"GRANT INSERT ON {v} TO {joe}", "0LP01",
             f'invalid privilege types INSERT for VIEW "materialize.public.{v}"')


def test_role_attributes_and_system_privileges(server, admin, names):
    joe = f"rb_joe_{names}"
    e = _err(admin, f"CREATE ROLE {joe} CREATECLUSTER", "0A000")
    assert e.diag.message_hint == "Use system privileges instead."
    _err(admin, f"CREATE ROLE {joe} NOINHERIT", "0A000", "non inherit roles not yet supported")
    _err(admin, "CREATE ROLE mz_mine", "42939")
    _err(admin, "CREATE ROLE materialize", "42710", "role 'materialize' already exists")
    admin.execute(f"CREATE ROLE {joe} LOGIN")
    with _login(server, joe) as c:
        _err(c, f"CREATE ROLE rb_x_{names}", "42501", "permission denied for SYSTEM")
        _err(c, f"CREATE CLUSTER rb_c_{names} REPLICAS ()", "42501", "permission denied for SYSTEM")
        _err(c, f"GRANT CREATECLUSTER ON SYSTEM TO {joe}", "42501")
        admin.execute(f"GRANT CREATECLUSTER, CREATEROLE ON SYSTEM TO {joe}")
        c.execute(f"CREATE CLUSTER rb_c_{names} REPLICAS ()")
        row = admin.execute("SELECT r.name, c.privileges FROM mz_clusters c JOIN mz_roles r ON r.id = c.owner_id "
                            "WHERE c.name = %s", (f"rb_c_{names}",)).fetchone()
        joe_id = admin.execute("SELECT id FROM mz_roles WHERE name = %s", (joe,)).fetchone()[0]
        assert row == (joe, [f"{joe_id}=UC/{joe_id}"])
        assert c.execute(f"SELECT has_cluster_privilege('rb_c_{names}', 'CREATE'), "
                         "has_cluster_privilege('quickstart', 'USAGE'), has_cluster_privilege('quickstart', 'CREATE'),"
                         " has_schema_privilege('public', 'CREATE'), has_schema_privilege('public', 'USAGE'), "
                         "has_database_privilege('materialize', 'CONNECT'), "
                         "has_database_privilege('materialize', 'CREATE')").fetchone() == \
            (True, True, False, False, True, True, False)
        c.execute(f"CREATE ROLE rb_x_{names}")
        _err(c, f"CREATE ROLE rb_y_{names} SUPERUSER", "42501")
        c.execute(f"DROP CLUSTER rb_c_{names}")
        assert admin.execute("SELECT rolcreaterole FROM pg_roles WHERE rolname = %s", (joe,)).fetchone() == (True,)
        admin.execute(f"REVOKE CREATECLUSTER, CREATEROLE ON SYSTEM FROM {joe}")


def test_nologin_role_cannot_connect(server, admin, names):
    admin.execute(f"CREATE ROLE rb_nl_{names}")
    with pytest.raises(psycopg.OperationalError, match="not permitted to log in"):
        _login(server, f"rb_nl_{names}")
    admin.execute(f"ALTER ROLE rb_nl_{names} LOGIN")
    with _login(server, f"rb_nl_{names}") as c:
        assert c.execute("SELECT current_user").fetchone() == (f"rb_nl_{names}",)


def test_pg_catalog_shows_roles_and_acls(server, admin, names):
    t, joe = f"rb_t_{names}", f"rb_joe_{names}"
    admin.execute(f"CREATE TABLE {t} (a int)")
    admin.execute(f"CREATE ROLE {joe} LOGIN")
    admin.execute(f"GRANT SELECT ON {t} TO {joe}")
    assert admin.execute("SELECT relacl, pg_get_userbyid(relowner) FROM pg_class WHERE relname = %s",
                         (t,)).fetchone() == (["materialize=arwd/materialize", f"{joe}=r/materialize"], "materialize")
    assert admin.execute("SELECT rolsuper, rolcanlogin FROM pg_roles WHERE rolname = %s", (joe,)).fetchone() == \
        (False, True)
    assert admin.execute("SELECT usename FROM pg_user WHERE usename = %s", (joe,)).fetchall() == [(joe,)]
    assert (joe, "") in admin.execute("SHOW ROLES").fetchall()
    if shutil.which("psql") is None:
        return
    cmd = ["psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", str(server.port), "-U", "materialize", "materialize"]
    du = subprocess.run(cmd + ["-c", r"\du"], capture_output=True, text=True, timeout=60)
    assert du.returncode == 0 and joe in du.stdout, du.stderr
    dp = subprocess.run(cmd + ["-c", rf"\dp {t}"], capture_output=True, text=True, timeout=60)
    assert dp.returncode == 0 and f"{joe}=r/materialize" in dp.stdout, dp.stderr


def test_default_privileges_apply_to_new_objects(server, admin, names):
    joe, ann = f"rb_joe_{names}", f"rb_ann_{names}"
    admin.execute(f"CREATE ROLE {joe} LOGIN")
    admin.execute(f"CREATE ROLE {ann} LOGIN")
    admin.execute(f"ALTER DEFAULT PRIVILEGES FOR ROLE materialize IN SCHEMA public GRANT SELECT ON TABLES TO {joe}")
    try:
        admin.execute(f"CREATE TABLE rb_d_{names} (a int)")
        admin.execute(f"CREATE VIEW rb_dv_{names} AS SELECT 1 AS x")
        joe_id = admin.execute("SELECT id FROM mz_roles WHERE name = %s", (joe,)).fetchone()[0]
        assert admin.execute("SELECT role_id, schema_id, object_type, grantee, privileges FROM mz_default_privileges "
                             "WHERE grantee = %s", (joe_id,)).fetchall() == [("u1", "u3", "table", joe_id, "r")]
        with _login(server, joe) as c:
            assert c.execute(f"SELECT count(*) FROM rb_d_{names}").fetchone() == (0,)
            assert c.execute(f"SELECT x FROM rb_dv_{names}").fetchall() == [(1,)]
            _err(c, f"ALTER DEFAULT PRIVILEGES FOR ROLE materialize GRANT SELECT ON TABLES TO {joe}", "42501")
            _err(c, f"ALTER DEFAULT PRIVILEGES FOR ALL ROLES GRANT SELECT ON TABLES TO {joe}", "42501")
        with _login(server, ann) as c:
            _err(c, f"SELECT * FROM rb_d_{names}", "42501")
    finally:
        admin.execute(f"ALTER DEFAULT PRIVILEGES FOR ROLE materialize IN SCHEMA public REVOKE SELECT ON TABLES "
                      f"FROM {joe}")
    admin.execute(f"CREATE TABLE rb_e_{names} (a int)")
    assert admin.execute("SELECT privileges FROM mz_tables WHERE name = %s", (f"rb_e_{names}",)).fetchone() == \
        (["u1=arwd/u1"],)


def test_temporary_tables_need_no_grant(server, admin, names):
    admin.execute(f"CREATE ROLE rb_tmp_{names} LOGIN")
    with _login(server, f"rb_tmp_{names}") as c:
        c.execute("CREATE TEMP TABLE rb_tt (a int)")
        c.execute("INSERT INTO rb_tt VALUES (1)")
        assert c.execute("SELECT a FROM rb_tt").fetchall() == [(1,)]


def test_drop_owned_drops_objects_and_revokes_grants(server, admin, names):
    t, joe = f"rb_t_{names}", f"rb_joe_{names}"
    admin.execute(f"CREATE TABLE {t} (a int)")
    admin.execute(f"CREATE ROLE {joe} LOGIN")
    admin.execute(f"GRANT CREATE ON SCHEMA public TO {joe}")
    admin.execute(f"GRANT SELECT ON {t} TO {joe}")
    with _login(server, joe) as c:
        c.execute(f"CREATE TABLE rb_o_{names} (a int)")
        c.execute(f"CREATE VIEW rb_ov_{names} AS SELECT a FROM rb_o_{names}")
        _err(c, "DROP OWNED BY materialize", "42501")
        c.execute(f"DROP OWNED BY {joe}")
        assert c.execute("SELECT count(*) FROM mz_objects WHERE name LIKE %s", (f"rb_o%{names}",)).fetchone() == (0,)
        _err(c, f"SELECT * FROM {t}", "42501")
        _err(c, f"CREATE TABLE rb_p_{names} (a int)", "42501")
    admin.execute(f"DROP ROLE {joe}")


def test_privilege_functions_over_table_data_answer_as_over_constants(server, admin, names):
    """has_*_privilege and pg_has_role over a table's rows (Spark, from the lookup table
    the planner builds from the catalog) give the same answers as over constants (the
    interpreter) and as PostgreSQL's rules: per row the role, the object (a name or an
    OID) and the privilege list; a name that names nothing is its error, an OID NULL."""
    t, q, joe, readers = f"rb_t_{names}", f"rb_q_{names}", f"rb_joe_{names}", f"rb_readers_{names}"
    admin.execute(f"CREATE TABLE {t} (a int, b text)")
    admin.execute(f"CREATE TABLE {q} (k int, role text, obj text, priv text)")
    admin.execute(f"CREATE ROLE {joe} LOGIN")
    admin.execute(f"CREATE ROLE {readers}")
    admin.execute(f"GRANT {readers} TO {joe}")
    admin.execute(f"GRANT SELECT ON {q} TO {joe}")
    admin.execute(f"GRANT SELECT ON {t} TO {readers}")
    admin.execute(f"GRANT INSERT ON {t} TO {joe}")
    admin.execute(f"INSERT INTO {q} VALUES (1, '{joe}', '{t}', 'SELECT'), (2, '{joe}', 'public.{t}', 'insert'), "
                  f"(3, '{joe}', '\"{t}\"', 'UPDATE, DELETE'), (4, '{readers}', '{t}', 'INSERT'), "
                  f"(5, 'materialize', '{t.upper()}', 'UPDATE'), (6, 'public', 'pg_class', 'SELECT'), "
                  f"(7, '{joe}', '{t}', 'SELECT WITH GRANT OPTION'), (8, NULL, '{t}', 'SELECT')")
    expected = [(1, True), (2, True), (3, False), (4, False), (5, True), (6, True), (7, False), (8, None)]
    spark = f"SELECT k, has_table_privilege(role, obj, priv) FROM {q} ORDER BY k"
    assert admin.execute(spark).fetchall() == expected
    rows = admin.execute(f"SELECT k, role, obj, priv FROM {q} ORDER BY k").fetchall()
    for (k, role, obj, priv), (_, want) in zip(rows, expected):
        assert admin.execute("SELECT has_table_privilege(%s::text, %s::text, %s::text)", (role, obj, priv)
                             ).fetchone() == (want,), k
    with _login(server, joe) as c:
        # the current role's (joe's) privileges, per row; column privileges are the table's
        assert c.execute(f"SELECT k, has_table_privilege(obj, 'SELECT'), has_column_privilege(obj, 'b', 'INSERT'), "
                         f"pg_has_role(coalesce(role, 'materialize'), 'MEMBER') FROM {q} WHERE k < 6 ORDER BY k"
                         ).fetchall() == [(1, True, True, True), (2, True, True, True), (3, True, True, True),
                                          (4, True, True, True), (5, True, True, False)]
        assert c.execute(f"SELECT has_table_privilege('{t}', 'UPDATE'), pg_has_role('{readers}', 'USAGE')"
                         ).fetchone() == (False, True)
        oid = c.execute(f"SELECT oid FROM pg_class WHERE relname = '{t}'").fetchone()[0]
        assert c.execute(f"SELECT k, has_table_privilege(CASE WHEN k = 1 THEN {oid} ELSE 1 END::oid, priv) "
                         f"FROM {q} WHERE k < 3 ORDER BY k").fetchall() == [(1, True), (2, None)]
        _err(c, f"SELECT has_table_privilege(obj || 'x', 'SELECT') FROM {q} WHERE k = 1", "42P01")
        _err(c, f"SELECT has_table_privilege(obj, priv || 'x') FROM {q} WHERE k = 1", "22023")
        _err(c, f"SELECT has_table_privilege(role || 'x', obj, 'SELECT') FROM {q} WHERE k = 1", "42704")
        _err(c, f"SELECT has_column_privilege(obj, 'nope', 'SELECT') FROM {q} WHERE k = 1", "42703")


def test_a_views_reads_are_checked_on_what_its_names_meant_in_its_schema(server, admin, names):
    # s.v reads unqualified x, which is s.x where v was made; the caller's search_path
    # finds public.x instead: the owner's privilege on s.x is what counts
    sch, x, v, owner, joe = f"rb_s_{names}", f"rb_x_{names}", f"rb_v_{names}", f"rb_o_{names}", f"rb_joe_{names}"
    admin.execute(f"CREATE SCHEMA {sch}")
    try:
        admin.execute(f"CREATE TABLE {sch}.{x} (a int)")
        admin.execute(f"CREATE TABLE public.{x} (a int)")
        admin.execute(f"INSERT INTO {sch}.{x} VALUES (10)")
        admin.execute(f"CREATE ROLE {owner}")
        admin.execute(f"CREATE ROLE {joe} LOGIN")
        admin.execute(f"GRANT USAGE, CREATE ON SCHEMA {sch} TO {owner}")
        admin.execute(f"GRANT SELECT ON {sch}.{x} TO {owner}")
        admin.execute(f"GRANT USAGE ON SCHEMA {sch} TO {joe}")
        admin.execute(f"SET search_path = {sch}")
        admin.execute(f"CREATE VIEW {sch}.{v} AS SELECT a FROM {x}")
        admin.execute("SET search_path = public")
        admin.execute(f"ALTER VIEW {sch}.{v} OWNER TO {owner}")
        admin.execute(f"GRANT SELECT ON {sch}.{v} TO {joe}")
        with _login(server, joe) as c:
            assert c.execute(f"SELECT a FROM {sch}.{v}").fetchall() == [(10,)]
            _err(c, f"SELECT * FROM {sch}.{x}", "42501")
        admin.execute(f"REVOKE SELECT ON {sch}.{x} FROM {owner}")  # now the owner may not read it
        with _login(server, joe) as c:
            _err(c, f"SELECT a FROM {sch}.{v}", "42501")
    finally:
        admin.execute(f"DROP SCHEMA {sch} CASCADE")
        admin.execute(f"DROP TABLE IF EXISTS public.{x}")
