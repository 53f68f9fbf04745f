"""Writes ``benchmarks/RESULTS.md`` from the result files ``benchmarks/results/<name>.json``, one per
preset or benchmark, after checking every file against the schema below.

    python benchmarks/results.py            # rewrite benchmarks/RESULTS.md
    python benchmarks/results.py --check    # exit 1 if RESULTS.md differs from what it would write

A result file (``name`` is the file's stem; ``target`` and ``note`` may be left out; tables oldest
first; a cell is a string or a number)::

    {"name": "cartpole", "title": "<one line>", "target": "<what the result is held against>",
     "tables": [{"date": "YYYY-MM-DD", "machine": "2-core AMD EPYC CPU",
                 "command": "python benchmarks/learning.py --config cartpole --seeds 0 1 2",
                 "columns": ["seed", "first 475 (env steps)"], "rows": [[0, 512]],
                 "note": "<one paragraph>"}]}

RESULTS.md has one section per file, ``## <name>`` (linked as ``RESULTS.md#<name>``): the title,
the target, then each table under ``### <date>, <machine>`` with its command and note. Integers of
10000 and more are written with thousands separators.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
RESULTS_DIR = BENCHMARKS / "results"
RESULTS_MD = BENCHMARKS / "RESULTS.md"
COMMAND = "python benchmarks/results.py"

FILE_FIELDS = {"name": True, "title": True, "target": False, "tables": True}
"""The fields of a result file: whether each is required."""
TABLE_FIELDS = {
    "date": True,
    "machine": True,
    "command": True,
    "columns": True,
    "rows": True,
    "note": False,
}
"""The fields of one of its tables: whether each is required."""


class SchemaError(ValueError):
    """A result file that does not follow the schema; the message names the file and the field."""


def _check_fields(data: object, fields: dict[str, bool], where: str) -> None:
    if not isinstance(data, dict):
        raise SchemaError(f"{where}: expected an object, got {type(data).__name__}")
    for key in data:
        if key not in fields:
            raise SchemaError(f"{where}{key}: unknown field (allowed: {', '.join(fields)})")
    for key, required in fields.items():
        if required and key not in data:
            raise SchemaError(f"{where}{key}: missing")


def _check_line(value: object, where: str) -> None:
    if not isinstance(value, str) or not value.strip() or "\n" in value:
        raise SchemaError(f"{where}: expected one non-empty line of text, got {value!r:.60}")


def _check_rows(columns: object, rows: object, where: str) -> None:
    if not isinstance(columns, list) or not columns:
        raise SchemaError(f"{where}columns: expected a non-empty list of names")
    for i, column in enumerate(columns):
        _check_line(column, f"{where}columns[{i}]")
    if not isinstance(rows, list):
        raise SchemaError(f"{where}rows: expected a list of rows")
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(columns):
            raise SchemaError(f"{where}rows[{i}]: expected a list of {len(columns)} cells")
        for j, cell in enumerate(row):
            if isinstance(cell, bool) or not isinstance(cell, str | int | float):
                raise SchemaError(f"{where}rows[{i}][{j}]: expected a string or a number")


def _check_table(table: object, where: str) -> str:
    """Checks one table (its fields named ``where`` + field); returns its date."""
    _check_fields(table, TABLE_FIELDS, where)
    date = table["date"]
    if not (isinstance(date, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", date)):
        raise SchemaError(f"{where}date: expected YYYY-MM-DD, got {date!r}")
    try:
        datetime.date.fromisoformat(date)
    except ValueError:
        raise SchemaError(f"{where}date: {date} is not a day of the calendar") from None
    for key in ("machine", "command"):
        _check_line(table[key], f"{where}{key}")
    _check_rows(table["columns"], table["rows"], where)
    if "note" in table and not isinstance(table["note"], str):
        raise SchemaError(f"{where}note: expected text")
    return date


def _check_result(data: object, stem: str) -> None:
    _check_fields(data, FILE_FIELDS, "")
    if data["name"] != stem:
        raise SchemaError(f"name: {data['name']!r} is not the file's stem {stem!r}")
    _check_line(data["title"], "title")
    if "target" in data:
        _check_line(data["target"], "target")
    tables = data["tables"]
    if not isinstance(tables, list) or not tables:
        raise SchemaError("tables: expected a non-empty list of tables")
    dates = [_check_table(table, f"tables[{i}].") for i, table in enumerate(tables)]
    for i in range(1, len(dates)):
        if dates[i] < dates[i - 1]:
            raise SchemaError(
                f"tables[{i}].date: {dates[i]} is older than the table before it "
                f"({dates[i - 1]}); tables are oldest first"
            )


def validate(data: object, path: Path) -> dict:
    """Checks a result file's contents against the schema; returns them.

    Raises:
      SchemaError: one line naming ``path`` and the first field that does not follow the schema,
        as ``<path>: tables[1].rows[0]: expected a list of 3 cells``.
    """
    try:
        _check_result(data, path.stem)
    except SchemaError as error:
        raise SchemaError(f"{display(path)}: {error}") from None
    return data


def read_results(directory: Path) -> list[dict]:
    """Every ``<name>.json`` of ``directory``, validated, sorted by name."""
    results = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise SchemaError(f"{display(path)}: not valid JSON: {error}") from None
        results.append(validate(data, path))
    return results


def dumps(result: dict) -> str:
    """A result file's JSON text: two-space indents, the columns and each row on one line."""
    inline = lambda value: json.dumps(value, ensure_ascii=False)
    lines = ["{"]
    for key in ("name", "title", "target"):
        if key in result:
            lines.append(f'  "{key}": {inline(result[key])},')
    lines.append('  "tables": [')
    for i, table in enumerate(result["tables"]):
        fields = [
            f'      "{key}": {inline(table[key])}'
            for key in ("date", "machine", "command", "columns")
        ]
        rows = ",\n".join(f"        {inline(row)}" for row in table["rows"])
        fields.append(f'      "rows": [\n{rows}\n      ]' if rows else '      "rows": []')
        if "note" in table:
            fields.append(f'      "note": {inline(table["note"])}')
        comma = "," if i < len(result["tables"]) - 1 else ""
        lines += ["    {", ",\n".join(fields), "    }" + comma]
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def format_cell(value: str | int | float) -> str:
    """A cell as markdown: integers of 10000 and more with thousands separators, ``|`` escaped."""
    if isinstance(value, int) and value >= 10000:
        return f"{value:,}"
    return str(value).replace("|", "\\|")


def code_span(text: str) -> str:
    """``text`` as one inline code span, fenced by more backticks than any run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_table(columns: list[str], rows: list[list[object]]) -> str:
    lines = [
        "| " + " | ".join(format_cell(c) for c in columns) + " |",
        "|" + "|".join(" --- " for _ in columns) + "|",
    ]
    lines += ["| " + " | ".join(format_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_result(result: dict) -> str:
    """One file's section: ``## <name>``, title, target, then each table with command and note."""
    parts = [f"## {result['name']}", result["title"]]
    if "target" in result:
        parts.append(f"Target: {result['target']}")
    for table in result["tables"]:
        parts += [
            f"### {table['date']}, {table['machine']}",
            code_span(table["command"]),
            markdown_table(table["columns"], table["rows"]),
        ]
        if table.get("note"):
            parts.append(table["note"])
    return "\n\n".join(parts)


def render(results: list[dict]) -> str:
    """The whole of RESULTS.md: a header, the contents, one section per result file."""
    header = [
        "# Benchmark results",
        f"Generated by `{COMMAND}` from the result files in `benchmarks/results/`, one per preset "
        "or benchmark; edit those and run it again, not this file. Each table names the day it was "
        "measured, the machine and the command.",
        "## Contents",
        "\n".join(f"- [{r['name']}](#{r['name']}): {r['title']}" for r in results),
    ]
    return "\n\n".join(header + [render_result(r) for r in results]) + "\n"


def display(path: Path) -> str:
    """``path`` relative to the repository where it lies inside it."""
    try:
        return str(path.resolve().relative_to(BENCHMARKS.parent))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the output differs from what it would write",
    )
    parser.add_argument(
        "--results", type=Path, default=RESULTS_DIR, help="the result files' folder"
    )
    parser.add_argument("--output", type=Path, default=RESULTS_MD, help="the markdown to write")
    args = parser.parse_args(argv)
    try:
        text = render(read_results(args.results))
    except SchemaError as error:
        sys.exit(f"error: {error}")
    if args.check:
        if not args.output.exists() or args.output.read_text() != text:
            sys.exit(
                f"{display(args.output)} is not what {display(args.results)}/*.json give: "
                f"run `{COMMAND}` and commit the result"
            )
        return
    args.output.write_text(text)
    print(f"wrote {display(args.output)} from {len(list(args.results.glob('*.json')))} files")


if __name__ == "__main__":
    main()
