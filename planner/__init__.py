"""The SQL planner: name resolution and typing against a catalog snapshot, the typed
logical plan, and PostgreSQL semantics. Pure Python: nothing here knows about Spark.

Flow (as in Materialize's adapter): ``resolve``/``query`` build the logical plan from
pglast's AST, ``consteval`` folds constant expressions, and ``spark_exec.lower`` is the
only consumer that turns a plan into DataFrames.
"""
