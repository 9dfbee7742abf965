"""`sl.app`: TF1's `tf.app` (`run` and `flags`), on `sl.flags`.

`sl.app.run(main)` parses the command line into `sl.flags.FLAGS`, then calls
`sys.exit(main(argv))` with the arguments that are not known flags, as TF1's `tf.app.run` does
(which tolerates unknown flags and hands them to `main`). `--help` / `--helpshort` print the main
module's flags, `--helpfull` every flag; both exit with status 1, as absl does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from sluice._export import export
from sluice._tf1 import flags

__all__ = ["flags", "run", "usage"]


@export("app.usage")
def usage(
    shorthelp: bool = False,
    writeto_stdout: bool = False,
    flag_values: flags.FlagValues = flags.FLAGS,
) -> None:
    """Writes the main module's docstring (or `USAGE: <program> [flags]`) and the flags' help:
    the main module's only when `shorthelp`, else all of them."""
    main = sys.modules.get("__main__")
    program = sys.argv[0] if sys.argv and sys.argv[0] else "program"
    doc = getattr(main, "__doc__", None) or f"\nUSAGE: {program} [flags]\n"
    text = flag_values.main_module_help() if shorthelp else flag_values.get_help()
    out = sys.stdout if writeto_stdout else sys.stderr
    out.write(doc)
    if text:
        out.write("\nflags:\n" + text + "\n")


def _help_parser(shorthelp: bool, flag_values: flags.FlagValues) -> Callable[[Any], bool]:
    def parse(text: Any) -> bool:
        if flags._parse_bool(text):
            usage(shorthelp=shorthelp, writeto_stdout=True, flag_values=flag_values)
            if shorthelp:
                print("\nTry --helpfull to get a list of all flags.")
            sys.exit(1)
        return False

    return parse


def define_help_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """Registers --help (-?), --helpshort and --helpfull, once."""
    for name, short, shorthelp, text in (
        ("help", "?", True, "show this help"),
        ("helpshort", None, True, "show usage only for this module"),
        ("helpfull", None, False, "show full help"),
    ):
        if name not in flag_values:
            flags.DEFINE(
                _help_parser(shorthelp, flag_values),
                name,
                None,
                text,
                flag_values,
                short_name=short,
                boolean=True,
            )


@export("app.run")
def run(
    main: Callable[[list[str]], Any] | None = None,
    argv: Sequence[str] | None = None,
    flag_values: flags.FlagValues = flags.FLAGS,
) -> NoReturn:
    """Parses the flags of `argv` (default `sys.argv`), then `sys.exit(main(rest))`.

    Args:
      main: called with `[argv[0]] + the arguments that are not known flags`; default the
        `main` function of the `__main__` module. Its return value is the exit status.
      argv: the command line, program name first.
      flag_values: the flags to parse into (the global `FLAGS`).

    Raises:
      SystemExit: always: main's result, 1 after a flag error (written to stderr) or a help
        flag.
    """
    main = main or sys.modules["__main__"].main
    define_help_flags(flag_values)
    try:
        args = flag_values(sys.argv if argv is None else list(argv), known_only=True)
    except flags.Error as e:
        sys.stderr.write(f"FATAL Flags parsing error: {e}\n")
        sys.stderr.write("Pass --helpshort or --helpfull to see help on flags.\n")
        sys.exit(1)
    sys.exit(main(args))
