"""The columns a transform returns for the Kafka writers: their names and the types every writer takes.

``key`` and ``value`` are string or binary (as Spark's own Kafka writer takes them; a string is
written as its UTF-8 bytes); ``headers``, when present, is Kafka's own
``array<struct<key:string,value:binary>>`` (the Kafka source's column); ``dlq_reason``, when
present and not null, makes the row a dead letter; ``topic``, ``partition`` and ``offset`` are the
source columns a transform may keep (the executor writers check rows against them, and dead
letters carry them as headers). Other columns are not written.

The job checks the transform's columns once, when the query starts (:func:`require_output_columns`),
so a wrong type is refused before any batch, naming the column and the cast that fixes it; the
JVM executor writer, which reads the transform's rows as they are, checks the same types again.
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_provider_eos.core.errors import SinkError, SpecError

__all__ = [
    "DLQ_REASON_COLUMN", "HEADERS_TYPE", "KEY_VALUE_TYPES", "ORIGIN_COLUMNS", "ORIGIN_TYPES", "column_type_error",
    "null_header_error",
    "require_output_columns",
]

DLQ_REASON_COLUMN = "dlq_reason"
#: The source columns a transform may keep: where a dead letter came from, and what the executor writers check.
ORIGIN_COLUMNS = ("topic", "partition", "offset")
KEY_VALUE_TYPES = ("string", "binary")
#: The types of the source columns and of ``dlq_reason`` (``simpleString``), as the Kafka source gives them.
ORIGIN_TYPES = {"topic": "string", "partition": "int", "offset": "bigint", DLQ_REASON_COLUMN: "string"}
#: Spark's ``simpleString`` of the Kafka source's headers column.
HEADERS_TYPE = "array<struct<key:string,value:binary>>"


def require_output_columns(transform: str, types: Mapping[str, str]) -> None:
    """Refuse a transform's output the writers cannot take.

    :param transform: the spec's transform reference, for the message.
    :param types: column name -> Spark's ``simpleString`` of its type, in the transform's order.
    :raises SpecError: naming the missing column, or the column of the wrong type and the fix.
    """
    missing = [name for name in ("key", "value") if name not in types]
    if missing:
        raise SpecError(f"transform {transform!r} returned no {missing} column(s); it has {list(types)}",
                        fix=f"return a DataFrame with key and value (and optional headers, {DLQ_REASON_COLUMN})")
    for name, found in types.items():
        if (error := column_type_error(transform, name, found)) is not None:
            raise error


def column_type_error(transform: str, name: str, found: str) -> SpecError | None:
    """The error for column ``name`` of type ``found`` (``simpleString``); ``None`` when the writers take it."""
    if name in ("key", "value") and found not in KEY_VALUE_TYPES:
        return SpecError(
            f"transform {transform!r} returned column {name!r} of type {found}; the Kafka writers take "
            f"{' or '.join(KEY_VALUE_TYPES)}",
            fix=f"cast it in the transform, e.g. F.col({name!r}).cast('string') or .cast('binary')")
    # A dlq_reason of F.lit(None) (void) is null on every row: no dead letter, nothing to read.
    if name in ORIGIN_TYPES and found != ORIGIN_TYPES[name] and not (name == DLQ_REASON_COLUMN and found == "void"):
        # The writers read these as the Kafka source's own columns: another type read as one is wrong
        # bytes (a string partition read as an int), not a conversion.
        wanted = ORIGIN_TYPES[name]
        return SpecError(
            f"transform {transform!r} returned column {name!r} of type {found}; {name!r} is a Kafka source column "
            f"the writers read as {wanted}",
            fix=f"keep the source's {name!r} as it is, cast it (F.col({name!r}).cast({wanted!r})), or rename the "
            "column: topic, partition and offset are reserved for the source's")
    if name == "headers" and found != HEADERS_TYPE:
        return SpecError(
            f"transform {transform!r} returned column 'headers' of type {found}; the Kafka writers take {HEADERS_TYPE}",
            fix="return the Kafka source's headers column (or one of its type), or drop the column")
    return None


def null_header_error(transform: str, batch_id: int | None, what: str) -> SinkError:
    """The error for a row whose ``headers`` hold a null header or a header with a null key (both writers).

    The headers column's type allows both, Kafka's record headers do not: every header has a key.

    :param batch_id: the batch, when the caller knows it.
    :param what: ``"key"`` (a header whose key is null) or ``"header"`` (a null element of the array).
    """
    found = "a header whose key is null" if what == "key" else "a null header"
    batch = "" if batch_id is None else f"batch {batch_id}: "
    return SinkError(
        f"{batch}transform {transform!r} returned a row whose headers hold {found}; every Kafka "
        "header has a key, so the batch was not written",
        fix="drop or fill such headers in the transform, e.g. F.filter('headers', lambda h: h.isNotNull() & "
        "h['key'].isNotNull()); the batch is replayed when the job runs again",
    )
