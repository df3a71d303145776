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
- DDL, one module per object family, each holding both halves of its statements (the
  handler ``sequence_<statement>(session, ...)`` and the catalog transaction
  ``<statement>(...)`` it builds for the Coordinator): ``tables``, ``views`` (and
  materialized views), ``indexes``, ``sequences`` (also nextval/setval), ``schemas``,
  ``comments``, ``roles`` (and privileges, owners), ``clusters`` (clusters, replicas,
  ALTER CLUSTER ... SET / RESET and SWAP WITH), ``sources``; ``ddl``: DROP's dispatch
  over the kinds; ``objects``: what they share (lookups, dependents). A new DDL
  statement takes its family's module, its entry in ``sqlfront.session.HANDLERS`` and
  one in ``sqlfront.rbac.STATEMENT_PRIVILEGES`` (a parser rule in ``sqlfront.mzparse``
  if pglast does not know it)
- ``alter``: ALTER TABLE (column changes rewrite a table's rows), renames, CREATE TABLE
  AS, TRUNCATE
- ``prepared``: PREPARE, EXECUTE, DEALLOCATE, DISCARD, pg_prepared_statements
- ``result``: what a statement returns to the wire layer

Every handler has the shape ``handler(session, stmt, sql, params) -> Result`` and is
registered in ``sqlfront.session.HANDLERS``. Session state lives on the Session; the
modules here hold none. They import each other in one direction (no cycle, not even
through an import inside a function: ``tests/test_import_cycles.py``); what two of them
share lives in a lower one (``result``, ``evaluate``, ``read_check``).
"""
