"""PostgreSQL's JDBC driver (what DBeaver and most JVM tools use): connection, metadata
reflection (getTables, getColumns, getImportedKeys, getTypeInfo), queries, prepared
statements. Needs ``javac`` and Debian's libpostgresql-jdbc-java; skipped without them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

JAR = Path("/usr/share/java/postgresql.jar")

PROGRAM = r"""
import java.sql.*;
public class Reflect {
  static void dump(String what, ResultSet rs, String... cols) throws SQLException {
    while (rs.next()) {
      StringBuilder sb = new StringBuilder(what);
      for (String c : cols) sb.append("|").append(rs.getString(c));
      System.out.println(sb);
    }
  }
  public static void main(String[] a) throws Exception {
    Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + a[0] + "/materialize?user=materialize");
    DatabaseMetaData m = c.getMetaData();
    System.out.println("product|" + m.getDatabaseProductName());
    dump("table", m.getTables(null, "public", "jdbc%", new String[]{"TABLE", "VIEW"}), "TABLE_NAME", "TABLE_TYPE");
    dump("column", m.getColumns(null, "public", "jdbc_t", "%"), "COLUMN_NAME", "TYPE_NAME", "COLUMN_SIZE",
         "DECIMAL_DIGITS", "IS_NULLABLE", "ORDINAL_POSITION");
    dump("fk", m.getImportedKeys(null, "public", "jdbc_t"), "FKCOLUMN_NAME");
    ResultSet types = m.getTypeInfo();
    int n = 0;
    while (types.next()) n++;
    System.out.println("types|" + (n > 20));
    dump("row", c.createStatement().executeQuery("SELECT * FROM jdbc_t ORDER BY a"), "a", "b", "c");
    PreparedStatement p = c.prepareStatement("SELECT b FROM jdbc_t WHERE a = ?");
    p.setInt(1, 2);
    dump("prepared", p.executeQuery(), "b");
    c.close();
  }
}
"""


def test_jdbc_metadata_and_queries(server, conn, tmp_path):
    if not JAR.exists() or shutil.which("javac") is None:
        pytest.skip("javac or Debian's libpostgresql-jdbc-java is not installed")
    conn.execute("CREATE TABLE jdbc_t (a int NOT NULL, b varchar(10), c numeric(6,2))")
    conn.execute("INSERT INTO jdbc_t VALUES (1, 'one', 1.5), (2, 'two', NULL)")
    try:
        (tmp_path / "Reflect.java").write_text(PROGRAM)
        subprocess.run(["javac", "-cp", str(JAR), "Reflect.java"], cwd=tmp_path, check=True, timeout=120)
        out = subprocess.run(["java", "-cp", f"{JAR}:.", "Reflect", str(server.port)], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines() == [
            "product|PostgreSQL",
            "table|jdbc_t|TABLE",
            "column|a|int4|10|0|NO|1",
            "column|b|varchar|10|0|YES|2",
            "column|c|numeric|6|2|YES|3",
            "types|true",
            "row|1|one|1.50",
            "row|2|two|null",
            "prepared|two",
        ]
    finally:
        conn.execute("DROP TABLE jdbc_t")
