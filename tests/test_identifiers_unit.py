"""Identifiers past 63 bytes (PostgreSQL's NAMEDATALEN - 1): cut at a character
boundary, with the scanner's NOTICE 42622, in Materialize's statements too."""

from __future__ import annotations

from sqlfront.auth import check_login_name
from sqlfront.identifiers import truncate_identifier, truncation_notices
from sqlfront.mzparse import parse_mz


def test_truncation_is_at_a_character_boundary():
    assert truncate_identifier("a" * 63) == "a" * 63
    assert truncate_identifier("a" * 64) == "a" * 63
    assert truncate_identifier("é" * 40) == "é" * 31  # 62 bytes: the 32nd would split
    assert truncate_identifier("x" + "😀" * 20) == "x" + "😀" * 15


def test_notices_name_each_long_identifier_as_the_scanner_reads_it():
    sql = f'SELECT "{"Q" * 70}", {"Ab" * 40} FROM t{"x" * 10} WHERE s = \'{"z" * 100}\' -- {"c" * 100}'
    got = [(e.sqlstate, e.severity, e.message) for e in truncation_notices(sql)]
    assert got == [("42622", "NOTICE", f'identifier "{"Q" * 70}" will be truncated to "{"Q" * 63}"'),
                   ("42622", "NOTICE", f'identifier "{"ab" * 40}" will be truncated to "{("ab" * 40)[:63]}"')]
    assert truncation_notices("SELECT 1") == [] and truncation_notices(f"SELECT '{'a' * 100}") == []


def test_materialize_statements_truncate_names_as_pglast_does():
    assert parse_mz("CREATE ROLE " + "R" * 100).name == "r" * 63
    assert parse_mz("ALTER ROLE a RENAME TO " + "b" * 100).rename_to == "b" * 63
    assert parse_mz(f'CREATE CLUSTER "{"é" * 40}" REPLICAS ()').name == "é" * 31


def test_a_long_login_name_is_truncated_and_reserved_names_still_refused():
    assert check_login_name("u" * 9000) == "u" * 63
    for reserved in ("mz_system", "mz_" + "x" * 100):
        try:
            check_login_name(reserved)
        except Exception as e:
            assert e.sqlstate == "28000"
        else:
            raise AssertionError(reserved)
