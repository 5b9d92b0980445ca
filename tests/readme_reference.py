"""What the README's generated parts say, made from the code (run by cog: ``cog -r README.md``)."""

from __future__ import annotations

import click
from click.testing import CliRunner

from journal_index.cli import cli

WIDTH = 100  # the help is wrapped as on a 100-column terminal, whatever terminal cog runs in


def _help(args: list[str]) -> str:
    result = CliRunner().invoke(cli, [*args, "--help"], terminal_width=WIDTH, prog_name="journal-index")
    assert result.exit_code == 0, result.output
    return result.output.rstrip()


def cli_reference() -> str:
    """``journal-index --help`` and each command's ``--help``, one code block each."""
    parts = [f"```text\n$ journal-index --help\n{_help([])}\n```\n"]
    context = click.Context(cli)
    for name in cli.list_commands(context):
        parts.append(f"### `journal-index {name}`\n\n```text\n{_help([name])}\n```\n")
    return "\n" + "\n".join(parts) + "\n"


def ranking_weights() -> str:
    """The ranking's weights as ``journal_index/query/ranking_weights.py`` holds them: the field table
    per intent, then every feature's weight."""
    from journal_index.query.ranking_weights import FIELD_NAMES, FITTED

    fields: dict[str, dict[str, float]] = FITTED["fields"]  # type: ignore[assignment]
    features: dict[str, float] = FITTED["features"]  # type: ignore[assignment]
    lines = ["", "| intent | " + " | ".join(FIELD_NAMES) + " |", "|---|" + "---:|" * len(FIELD_NAMES)]
    lines += [f"| {intent} | " + " | ".join(f"{row[name]:g}" for name in FIELD_NAMES) + " |"
              for intent, row in fields.items()]
    lines += ["", "| feature | weight |", "|---|---:|"]
    lines += [f"| {name} | {value:g} |" for name, value in features.items()]
    return "\n".join(lines) + "\n\n"
