"""Statement sequencing, one module per statement family (Materialize's adapter splits
its Coordinator's sequencing the same way):

- ``peek``: SELECT (fast path in Python, else a peek on the cluster)
- ``explain``: EXPLAIN, EXPLAIN ... PLAN FOR, EXPLAIN TIMESTAMP FOR
- ``evaluate``: evaluating a plan in Python under the statement's bounds (the fast path,
  a subscription's filter, an AS OF expression)
- ``writes``: INSERT, UPDATE, DELETE and appending to persist
- ``copy``: COPY TO STDOUT / FROM STDIN / FROM a file
- ``show``: Materialize's SHOW statements over the catalog
- ``txn``: BEGIN, COMMIT, ROLLBACK, SAVEPOINT
- ``vars``: SET, RESET, SHOW of session variables
- ``ddl``: CREATE/DROP/ALTER of clusters, replicas, schemas, tables, views, indexes,
  sequences; COMMENT ON
- ``clusters``: ALTER CLUSTER ... SET / RESET (managed clusters, graceful
  reconfiguration) and SWAP WITH
- ``alter``: ALTER TABLE (column changes rewrite a table's rows), renames, CREATE TABLE
  AS, TRUNCATE
- ``prepared``: PREPARE, EXECUTE, DEALLOCATE, DISCARD, pg_prepared_statements
- ``sequences``: nextval/setval and a session's currval/lastval (SQL sequences)
- ``result``: what a statement returns to the wire layer

Every handler has the shape ``handler(session, stmt, sql, params) -> Result`` and is
registered in ``sqlfront.session.HANDLERS``. Session state lives on the Session; the
modules here hold none. They import each other in one direction (no cycle, not even
through an import inside a function: ``tests/test_import_cycles.py``); what two of them
share lives in a lower one (``result``, ``evaluate``, ``read_check``).
"""
