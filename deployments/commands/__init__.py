"""The CLI's commands: a public module each, imported lazily to keep ``archivist --help`` fast."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import click

T = TypeVar("T")

# What --as-of accepts: a day, or a time with or without a UTC offset (without one, the time
# is read in ARCHIVIST_TIMEZONE).
AS_OF_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S%z"]


def revealed(text: str) -> str:
    """A report as the operator sees it: each namespace pseudonym followed by its name,
    where the namespace still exists (reports themselves hold pseudonyms only)."""
    from sqlalchemy.orm import Session

    from deployments.settings_loader import load_settings
    from storage.pseudonyms import reveal
    from storage.server.engine import open_store

    with Session(open_store(load_settings()).engine) as session:
        return reveal(session, text)


class AsOf(click.DateTime):
    """``--as-of``: click's DateTime over ``AS_OF_FORMATS``, refusing with examples to type
    rather than strptime patterns."""

    name = "as_of"

    def __init__(self) -> None:
        super().__init__(AS_OF_FORMATS)

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        return "YYYY-MM-DD[THH:MM:SS[+HH:MM]]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, datetime):
            return value
        for format in AS_OF_FORMATS:
            try:
                return datetime.strptime(value, format)
            except ValueError:
                continue
        self.fail(
            f"{value!r} is not a day or a time: type 2026-11-20, 2026-11-20T23:00:00 "
            "or 2026-11-20T23:00:00+01:00",
            param,
            ctx,
        )


AS_OF = AsOf()


def check_namespace(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--namespace``, checked before anything runs (a flow would refuse it as it starts)."""
    from storage.kernel.records import NAMESPACE

    if value is not None and not NAMESPACE.fullmatch(value):
        raise click.BadParameter(
            f"{value!r}: 1 to 100 lowercase letters, digits, '.', '_' or '-', starting with a "
            "letter or digit"
        )
    return value


def check_budget(_ctx: click.Context, _param: click.Parameter, value: int | None) -> int | None:
    """``--budget-tokens``, checked by the one gate of token budgets (``storage.kernel``)."""
    from storage.kernel.inputs import token_budget

    if value is None:
        return None
    try:
        return token_budget(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def budget_option(text: str) -> Callable[[Callable[..., Any]], Any]:
    """``--budget-tokens N``: tokens of the local model's tokenizer (all-MiniLM-L6-v2)."""
    return click.option(
        "--budget-tokens", type=int, default=None, callback=check_budget, metavar="N", help=text
    )


def gathered(into: type[T], name: str = "options") -> Callable[[Callable[..., Any]], Any]:
    """A command's options that are fields of the dataclass ``into``, handed to it as one
    value (keyword ``name``) instead of one parameter each."""
    names = [field.name for field in dataclasses.fields(into)]  # type: ignore[arg-type]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def given(**params: Any) -> Any:
            value = into(**{key: params.pop(key) for key in names})
            return command(**params, **{name: value})

        return given

    return decorate


@dataclass(frozen=True)
class SearchFlags:
    """``archivist search``'s options, as typed."""

    limit: int = 10
    time_range: str | None = None  # a name of storage.retrieval's TimeRange
    kinds: tuple[str, ...] = ()
    preset: str | None = None
    weights: str | None = None
    as_of: datetime | None = None
    explain: bool = False
    no_record: bool = False
    as_json: bool = False
    full: bool = False  # whole memories rather than their passages
    budget_tokens: int | None = None  # the best passages that fit, from a whole pool
