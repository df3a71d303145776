"""The durable catalog: clusters, replicas, tables and their ids, kept in sqlite3.

Owns the catalog's storage (``durable``), immutable snapshots handed to sessions
(``snapshot``), the builtin system tables (``builtins``), the replica size map
(``sizes``), SQL types (``types``), SQL errors (``errors``) and the timestamp oracle
(``oracle``). It must not know about Spark, pgwire or SQL parsing.
"""
