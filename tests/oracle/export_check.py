"""Reads the collector's exported Parquet files back with two independent readers and prints JSON.

Usage: export_check.py DIR TABLE[,TABLE...]

For each table: the files found (relative to DIR), the Arrow schema pyarrow reads, every row as pyarrow
reads it (times as integer milliseconds), and every row as chdb (ClickHouse in-process) reads it through
`file(..., Parquet)`, plus chdb's drops per node as an example aggregate. The Rust test compares them
with the entries it wrote.
"""

import glob
import json
import os
import sys

import chdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def main():
    root, tables = sys.argv[1], sys.argv[2].split(",")
    out = {"files": {}, "schema": {}, "pyarrow": {}, "chdb": {}}
    for t in tables:
        files = sorted(glob.glob(os.path.join(root, t, "**", "*.parquet"), recursive=True))
        out["files"][t] = [os.path.relpath(f, root) for f in files]
        rows = []
        for f in files:
            tbl = pq.read_table(f)
            out["schema"][t] = [f"{fld.name}:{fld.type}" for fld in tbl.schema]
            time = tbl.schema.names[0]
            tbl = tbl.set_column(0, time, pc.cast(tbl.column(0), pa.int64()))
            rows.extend(tbl.to_pylist())
        out["pyarrow"][t] = rows
        if not files:
            out["chdb"][t] = []
            continue
        # Every file by name, as one union; the partition folders are not read as columns
        # (use_hive_partitioning = 0): the rows carry their list themselves.
        sql = (
            "SELECT * EXCEPT (" + time + ") FROM ("
            + " UNION ALL ".join(f"SELECT * FROM file('{f}', Parquet)" for f in files)
            + ") SETTINGS output_format_json_quote_64bit_integers = 0, use_hive_partitioning = 0"
        )
        text = chdb.query(sql, "JSONEachRow").data()
        out["chdb"][t] = [json.loads(line) for line in text.splitlines() if line.strip()]
    drops = out["files"].get("drop_events", [])
    if drops:
        union = " UNION ALL ".join(
            f"SELECT node FROM file('{os.path.join(root, f)}', Parquet)" for f in drops
        )
        text = chdb.query(
            f"SELECT node, count() AS drops FROM ({union}) GROUP BY node ORDER BY node "
            "SETTINGS output_format_json_quote_64bit_integers = 0",
            "JSONEachRow",
        ).data()
        out["chdb_drops_per_node"] = [json.loads(l) for l in text.splitlines() if l.strip()]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
