"""The Typer application, the options every command shares, and how errors become exit codes.

Exit codes: 0 success, 1 the operation found problems (``verify``) or failed for a reason
that is not the caller's (a concurrent writer, a bug), 2 a usage error or a user mistake (a
missing path, a bad filter, a bad spec, not a namespace). Errors print one line on stderr;
``--debug`` prints the traceback as well.
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, NoReturn, TextIO

import typer

from lance_partitioned import errors
from lance_partitioned.registration import errors_module

if TYPE_CHECKING:
    from lance_namespace import errors as _ln
    from rich.console import Console
else:
    _ln = errors_module()  # not `import lance_namespace`: see lance_partitioned.registration

__all__ = [
    "EXIT_OK",
    "EXIT_PROBLEMS",
    "EXIT_USAGE",
    "DebugOpt",
    "JsonOpt",
    "StorageOpt",
    "UsageError",
    "app",
    "run",
    "stderr",
    "stdout",
    "storage_options",
]

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2
PROG = "lance-partitioned"

app = typer.Typer(
    name=PROG,
    help="Inspect, read, write and check Lance partitioned namespaces (spec 000).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from lance_partitioned import __version__

        print(f"{PROG} {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version of lance-partitioned and exit.",
        ),
    ] = False,
) -> None:
    """Inspect, read, write and check Lance partitioned namespaces (spec 000)."""


JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print machine-readable JSON with stable keys on stdout.")
]
StorageOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--storage-option",
        metavar="KEY=VALUE",
        help="A Lance storage option (repeatable), e.g. aws_region=us-east-1.",
    ),
]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show the traceback of an error.")]


class UsageError(errors.InvalidInputError):
    """A mistake on the command line that the parser cannot see (a file that does not exist,
    a malformed ``KEY=VALUE``)."""


#: The width of the results written to a pipe or a file (without ``COLUMNS``): wide enough
#: that no table or line is folded.
UNWRAPPED = 100_000


def stdout() -> Console:
    """The console for results: colour only on a terminal; the terminal's width, or
    ``COLUMNS``; written to a pipe or a file, lines are not folded."""
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal and not os.environ.get("COLUMNS", "").strip().isdigit():
        console.width = UNWRAPPED
    return console


def stderr() -> Console:
    """The console for progress and messages."""
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def storage_options(pairs: Sequence[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict.

    >>> storage_options(["aws_region=us-east-1", "allow_http=true"])
    {'aws_region': 'us-east-1', 'allow_http': 'true'}
    """
    out: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--storage-option {pair!r} is not KEY=VALUE")
        out[key.strip()] = value
    return out


# The errors that mean the caller asked for something wrong: exit 2.
_USER_ERRORS: tuple[type[BaseException], ...] = (
    _ln.InvalidInputError,
    _ln.NamespaceNotFoundError,
    _ln.NamespaceAlreadyExistsError,
    _ln.TableNotFoundError,
    _ln.TableVersionNotFoundError,
    _ln.TableSchemaValidationError,
    _ln.UnsupportedOperationError,
    FileNotFoundError,
    IsADirectoryError,
    NotADirectoryError,
)


def exit_code(exc: BaseException) -> int:
    """The exit code of an error that reached the command line.

    >>> exit_code(errors.PartitionSpecError("bad")), exit_code(errors.InternalError("bug"))
    (2, 1)
    """
    if isinstance(exc, typer.TyperException):
        return int(exc.exit_code)
    return EXIT_USAGE if isinstance(exc, _USER_ERRORS) else EXIT_PROBLEMS


def message(exc: BaseException) -> str:
    """One line for an error: its message, newlines folded."""
    if isinstance(exc, typer.TyperException):
        text = exc.format_message()
    elif isinstance(exc, (errors.LancePartitionedError, UsageError)):
        text = str(exc)
    elif isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.strerror or exc}: {exc.filename}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    from lance_partitioned.verify import lance_message

    return " ".join(lance_message(Exception(text)).split())


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``); return the exit code.

    >>> run(["--help"]) == 0  # doctest: +ELLIPSIS
    Usage: lance-partitioned ...
    True
    """
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    command = typer.main.get_command(app)
    try:
        with warnings.catch_warnings():  # restores showwarning: run() in-process changes nothing
            warnings.showwarning = _show_warning
            result = command.main(args=args, prog_name=PROG, standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except BrokenPipeError:  # whoever read the output went away (`| head`): not an error
        _silence_stdout()
        return EXIT_OK
    except (typer.Abort, KeyboardInterrupt):
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BaseException as exc:
        if isinstance(exc, SystemExit):
            raise
        if isinstance(exc, typer.TyperException) and type(exc).__name__ == "NoArgsIsHelpError":
            print(exc.format_message(), file=sys.stderr)  # the help of a command given nothing
            return EXIT_USAGE
        code = exit_code(exc)
        if debug:
            traceback.print_exception(exc, file=sys.stderr)
        hint = "" if debug or code == EXIT_USAGE else " (run with --debug for the traceback)"
        if isinstance(exc, typer.TyperException) and code == EXIT_USAGE:
            hint = " (see --help)"
        print(f"{PROG}: error: {message(exc)}{hint}", file=sys.stderr)
        return code
    return result if isinstance(result, int) else EXIT_OK


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A warning as one line on stderr, without a file path: on the command line the code
    that called the library is the CLI's (or typer's), not the user's."""
    print(f"{PROG}: warning: {category.__name__}: {message}", file=file or sys.stderr)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main() -> NoReturn:
    """The console-script entry point."""
    from lance_partitioned.cli import startup

    startup.install()  # keeps pandas out of `import lance`: this process never uses it
    sys.exit(run())
