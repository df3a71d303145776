"""A DataFrame's result read as Arrow over Spark Connect: batch by batch
(``arrow_tables``, what a peek streams) or whole (``to_arrow``), each batch cast to the
schema Spark reports with the result.

Shared by the peeks (``spark_exec.cluster_coordinator``) and the materializations
(``spark_exec.materializations``), below both: it knows DataFrames, not replicas.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.connect.dataframe import DataFrame


def arrow_tables(session, df):
    """``df``'s result as Arrow tables, batch by batch, each cast to the schema Spark
    reports (as ``DataFrame.toArrow`` casts the whole table); empty batches left out.
    pyspark's public ``toLocalIterator`` turns batches into Rows; this uses the same
    client call (``to_table_as_iterator``) and keeps them Arrow."""
    for _, table in _arrow_results(session, df):
        if table is not None and table.num_rows:
            yield table


def _arrow_results(session, df):
    """``(schema, table)`` for each item of ``df``'s result stream: the Arrow schema Spark
    reports, with ``table`` None, when it comes; then each batch, cast to it."""
    from pyspark.sql.types import StructType

    client = session.client
    schema = None
    for item in client.to_table_as_iterator(df._plan.to_proto(client), df._plan.observations):
        if isinstance(item, StructType):
            schema = arrow_schema(item)
            yield schema, None
        else:
            yield schema, item.cast(schema) if schema is not None else item


def to_arrow(df: DataFrame) -> pa.Table:
    """``df``'s result as one Arrow table, cast to the schema Spark reports. pyspark's
    ``DataFrame.toArrow`` asks the server for the schema first (an AnalyzePlan call: the
    whole plan analysed once more, hundreds of ms for a dataflow's plan); the schema
    also comes with the result, so it is taken from there."""
    schema, tables = None, []
    for schema, table in _arrow_results(df.sparkSession, df):
        if table is not None:
            tables.append(table)
    if schema is None:  # (Spark Connect always sends it; a server that did not: ask)
        schema = arrow_schema(df.schema)
        tables = [t.cast(schema) for t in tables]
    return pa.concat_tables(tables) if tables else schema.empty_table()


def arrow_schema(struct) -> pa.Schema:
    """The Arrow schema of a Spark StructType, as Spark Connect's results have it."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(struct, error_on_duplicated_field_names_in_struct=True, timezone="UTC")
