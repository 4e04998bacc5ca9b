"""Capture records: finding, reading and validating CSV, JSON Lines and Parquet files, and
Chrome-format traces.

A capture file is `*.csv`, `*.jsonl` / `*.ndjson`, `*.parquet` / `*.pq` or a `*.json` trace,
each optionally gzip-compressed (`*.csv.gz`, ...). One job a module, each importing only those
above it:

    files    the files: `find_captures` expands paths, folders and globs into `Capture`s
    tracemap the `[trace]` mapping: which ranges of a trace are steps, features, regions
    trace    a trace's steps as rows, streamed (ijson), ranks matched
    chunks   the rows read: `ColumnSpec` (the columns a fit reads, what each must hold) and
             `Chunk` (consecutive rows of one file as numpy arrays, validated lazily)
    read     the readers: `read_chunks` reads the columns a `ColumnSpec` names as `Chunk`s,
             streamed or whole, and `chunk_from_columns` makes one of rows in memory

May import: `lawkit.config`, `lawkit.errors` and `lawkit.capture` (what the writer refuses,
the reader refuses; its host files are no captures); nothing else of `lawkit`.
"""
