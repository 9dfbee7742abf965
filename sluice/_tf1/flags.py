"""`sl.flags`: TF1's command-line flags (`tf.flags`, `tf.app.flags`), which are absl's.

A script defines flags at import time and reads them as attributes of `FLAGS`::

    sl.flags.DEFINE_integer("batch_size", 20, "examples per step")
    FLAGS = sl.flags.FLAGS
    ...
    FLAGS.batch_size   # 20, or what --batch_size=64 / --batch_size 64 said

Parsing follows absl: `FLAGS(argv)` parses `argv[1:]` and returns `[argv[0]] + the arguments
that are not flags`; `--name=value` and `--name value`; booleans as `--name`, `--noname` or
`--name=false`; `--` ends the flags; an unknown flag raises `UnrecognizedFlagError` unless
`known_only=True` leaves it in the returned arguments. As TF1's `tf.flags.FLAGS` (and unlike a
plain absl `FlagValues`, which raises `UnparsedFlagAccessError`), the global `FLAGS` parses
`sys.argv` (known flags only) the first time a value is read before any parse.

No dependency on absl: flags are a few hundred lines of plain Python.
"""

from __future__ import annotations

import difflib
import inspect
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sluice._export import export

__all__ = [
    "DEFINE",
    "DEFINE_alias",
    "DEFINE_bool",
    "DEFINE_boolean",
    "DEFINE_enum",
    "DEFINE_float",
    "DEFINE_integer",
    "DEFINE_list",
    "DEFINE_multi_string",
    "DEFINE_string",
    "DuplicateFlagError",
    "Error",
    "FLAGS",
    "Flag",
    "FlagValues",
    "IllegalFlagValueError",
    "UnparsedFlagAccessError",
    "UnrecognizedFlagError",
    "ValidationError",
    "mark_flag_as_required",
    "mark_flags_as_required",
    "register_validator",
]


@export("app.flags.Error")
class Error(Exception):
    """The base of the flag errors (absl's `flags.Error`)."""


@export("app.flags.DuplicateFlagError")
class DuplicateFlagError(Error):
    """A flag name defined twice."""


@export("app.flags.IllegalFlagValueError", "app.flags.ValidationError")
class IllegalFlagValueError(Error):
    """A value the flag's parser refuses, or one a validator rejects."""


@export("app.flags.UnrecognizedFlagError")
class UnrecognizedFlagError(Error):
    """A command-line flag, or an attribute set on FLAGS, that no DEFINE_* declared."""

    def __init__(self, flagname: str, flagvalue: str = "", suggestions: Sequence[str] = ()):
        self.flagname, self.flagvalue = flagname, flagvalue
        hint = f". Did you mean: {', '.join(suggestions)} ?" if suggestions else ""
        super().__init__(f"Unknown command line flag '{flagname}'{hint}")


@export("app.flags.UnparsedFlagAccessError")
class UnparsedFlagAccessError(Error):
    """A flag value read from a FlagValues that has not parsed its command line yet."""


ValidationError = IllegalFlagValueError  # absl raises the latter for failed validators


# -- parsers: text -> value ---------------------------------------------------------------------
_TRUE = ("true", "t", "1", "yes", "y")
_FALSE = ("false", "f", "0", "no", "n")


def _parse_bool(text: Any) -> bool:
    if isinstance(text, bool):
        return text
    if isinstance(text, str) and text.lower() in _TRUE:
        return True
    if isinstance(text, str) and text.lower() in _FALSE:
        return False
    raise ValueError("Non-boolean argument to boolean flag")


def _bounded(convert: Callable[[str], Any], kind: str, lower: Any, upper: Any):
    def parse(text: Any) -> Any:
        value = convert(text)  # absl's errors quote the conversion's own message
        if (lower is not None and value < lower) or (upper is not None and value > upper):
            raise ValueError(f"{value} is not {_bounds_help(kind, lower, upper)}")
        return value

    return parse


def _bounds_help(kind: str, lower: Any, upper: Any) -> str:
    """absl's words for a bounded number ("a non-negative integer"), which its errors quote."""
    noun = kind.split()[-1]
    if lower is not None and upper is not None:
        return f"{kind} in the range [{lower}, {upper}]"
    named = {(0, None): "non-negative", (None, 0): "non-positive"}
    if noun == "integer":  # absl names the +-1 bounds for integers only
        named.update({(1, None): "positive", (None, -1): "negative"})
    named = named.get((lower, upper))
    if named:
        return f"a {named} {noun}"
    return f"{noun} <= {upper}" if upper is not None else f"{noun} >= {lower}"


def _to_int(text: Any) -> int:
    if isinstance(text, str):  # absl reads "0x" as hex and "0o" as octal
        base = {"0x": 16, "0o": 8}.get(text[:2].lower(), 10) if len(text) > 2 else 10
        return int(text, base)
    if isinstance(text, float) and not text.is_integer():
        raise ValueError(f"Expect argument to be a string or int, found {text!r}")
    return int(text)


def _to_list(text: Any) -> list[str]:
    if isinstance(text, str):
        return [s.strip() for s in text.split(",")] if text.strip() else []
    return [str(s) for s in text]


# -- one flag -----------------------------------------------------------------------------------
@export("app.flags.Flag")
class Flag:
    """One flag: its name, parser, default, help and current value (absl's `Flag`).

    `present` counts how often the command line gave it; `using_default_value` is False once
    it has been parsed from the command line or set.
    """

    def __init__(
        self,
        parser: Callable[[Any], Any],
        name: str,
        default: Any,
        help_string: str,
        short_name: str | None = None,
        boolean: bool = False,
        type_name: str = "",
        multi: bool = False,
        module: str = "__main__",
    ):
        self.parser, self.name, self.help = parser, name, help_string or "(no help available)"
        self.short_name, self.boolean, self.type_name = short_name, boolean, type_name
        self.multi, self.module = multi, module
        self.present = 0
        self.using_default_value = True
        self.validators: list[tuple[Callable[[Any], bool], str]] = []
        self.default = None if default is None else self._convert(default)
        self.value = self.default

    def _convert(self, argument: Any) -> Any:
        try:
            if self.multi:
                items = [argument] if isinstance(argument, str) else list(argument)
                return [self.parser(a) for a in items]
            return self.parser(argument)
        except (TypeError, ValueError) as e:
            raise IllegalFlagValueError(f"flag --{self.name}={argument}: {e}") from None

    def parse(self, argument: Any) -> None:
        """Sets the value from command-line text (a multi flag appends)."""
        value = self._convert(argument)
        if self.multi and self.present:
            value = self.value + value
        self.value = value
        self.present += 1
        self.using_default_value = False

    def unparse(self) -> None:
        self.value, self.present, self.using_default_value = self.default, 0, True

    def help_text(self) -> str:
        flag = f"--[no]{self.name}" if self.boolean else f"--{self.name}"
        short = f"-{self.short_name}," if self.short_name else ""
        default = self.default
        if isinstance(default, bool):
            default = str(default).lower()
        elif isinstance(default, list):
            default = ",".join(str(d) for d in default)
        shown = "None" if default is None else repr(str(default))  # absl quotes the text
        lines = [f"  {short}{flag}: {self.help}", f"    (default: {shown})"]
        if self.type_name:
            lines.append(f"    ({self.type_name})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Flag --{self.name}={self.value!r}>"


class _AliasFlag(Flag):
    """`DEFINE_alias`: parses into, reads and writes the original flag."""

    def __init__(self, name: str, original: Flag, module: str):
        # Flag.__init__ would set `value`, which here is the original's
        self.original, self.parser, self.name = original, original.parser, name
        self.help, self.short_name, self.type_name = f"Alias for --{original.name}.", None, ""
        self.boolean, self.multi, self.module = original.boolean, original.multi, module
        self.present, self.using_default_value, self.validators = 0, True, []
        self.default = original.default

    value = property(
        lambda self: self.original.value, lambda self, v: setattr(self.original, "value", v)
    )

    def parse(self, argument: Any) -> None:
        self.original.parse(argument)
        self.present += 1

    def unparse(self) -> None:
        self.present = 0


# -- the registry -------------------------------------------------------------------------------
@export("app.flags.FlagValues")
class FlagValues:
    """The registered flags and their values (absl's `FlagValues`); `FLAGS` is the global one.

    `FLAGS.name` reads a value (UnparsedFlagAccessError before `FLAGS(argv)`, except for the
    global FLAGS, which parses `sys.argv` first as TF1's does), `FLAGS.name = v` sets one,
    `FLAGS["name"]` is the `Flag`, `"name" in FLAGS` asks whether it is defined,
    `del FLAGS.name` removes it.
    """

    def __init__(self, implicit_parse: bool = False):
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_parsed", False)
        object.__setattr__(self, "_implicit_parse", implicit_parse)

    # registry
    def register(self, flag: Flag) -> Flag:
        for key in filter(None, (flag.name, flag.short_name)):
            if key in self._flags:
                raise DuplicateFlagError(
                    f"The flag '{key}' is defined twice. First from {self._flags[key].module}, "
                    f"Second from {flag.module}. Define it once (or delete it first: "
                    f"`del FLAGS.{key}`)."
                )
        self._flags[flag.name] = flag
        if flag.short_name:
            self._flags[flag.short_name] = flag
        return flag

    def __getitem__(self, name: str) -> Flag:
        return self._flags[name]

    def __contains__(self, name: str) -> bool:
        return name in self._flags

    def __iter__(self):
        return iter(list(self._flags))

    def __len__(self) -> int:
        return len(self._flags)

    def __getattr__(self, name: str) -> Any:
        flags = object.__getattribute__(self, "_flags")
        if name not in flags:
            raise AttributeError(name)
        if not self._parsed:
            if not self._implicit_parse:
                raise UnparsedFlagAccessError(
                    f"Trying to access flag --{name} before flags were parsed: call "
                    f"FLAGS(sys.argv) first, or run main through sl.app.run."
                )
            self(sys.argv, known_only=True)
        return flags[name].value

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._flags:
            raise UnrecognizedFlagError(name, str(value))
        flag = self._flags[name]
        flag.value = value
        flag.using_default_value = False
        self._validate(flag)

    def __delattr__(self, name: str) -> None:
        if name not in self._flags:
            raise AttributeError(name)
        flag = self._flags.pop(name)
        for key in (flag.name, flag.short_name):
            if key and self._flags.get(key) is flag:
                del self._flags[key]

    def __dir__(self) -> list[str]:
        return sorted(self._flags)

    def is_parsed(self) -> bool:
        return self._parsed

    def mark_as_parsed(self) -> None:
        object.__setattr__(self, "_parsed", True)

    def unparse_flags(self) -> None:
        """Back to the defaults, unparsed (as before the first `FLAGS(argv)`)."""
        for flag in set(self._flags.values()):
            flag.unparse()
        object.__setattr__(self, "_parsed", False)

    def flag_values_dict(self) -> dict[str, Any]:
        return {name: flag.value for name, flag in self._flags.items() if name == flag.name}

    def get_flag_value(self, name: str, default: Any) -> Any:
        return self._flags[name].value if name in self._flags else default

    # parsing
    def __call__(self, argv: Sequence[str], known_only: bool = False) -> list[str]:
        """Parses `argv[1:]`; returns `[argv[0]]` plus the arguments that are not flags (and,
        with `known_only`, the unknown flags as they were written)."""
        if isinstance(argv, str):
            raise TypeError("argv should be a tuple/list of strings, not bare string")
        if not argv:
            raise ValueError(
                "argv cannot be an empty list: it must contain at least the program name."
            )
        rest: list[str] = []
        args = list(argv[1:])
        while args:
            arg = args.pop(0)
            if arg == "--":
                if known_only:
                    rest.append(arg)
                rest.extend(args)
                break
            if not arg.startswith("-") or arg.strip("-") == "":
                rest.append(arg)  # GNU style: a positional argument, the flags go on
                continue
            body = arg[2:] if arg.startswith("--") else arg[1:]
            name, value = body.split("=", 1) if "=" in body else (body, None)
            flag = self._flags.get(name)
            if flag is not None and not flag.boolean and value is None:
                if not args:
                    raise Error(f"Missing value for flag {arg}")
                value = args.pop(0)
            elif flag is not None and value is None:
                value = "true"
            elif (
                flag is None
                and name.startswith("no")
                and name[2:] in self._flags
                and self._flags[name[2:]].boolean
            ):
                if value is not None:
                    raise IllegalFlagValueError(f"{arg} does not take an argument")
                flag, value = self._flags[name[2:]], "false"
            if flag is None:
                if known_only:
                    rest.append(arg)
                    continue
                raise UnrecognizedFlagError(name, arg, difflib.get_close_matches(name, self))
            flag.parse(value)
        self.mark_as_parsed()
        for flag in set(self._flags.values()):
            self._validate(flag)
        return [argv[0], *rest]

    def _validate(self, flag: Flag) -> None:
        for checker, message in flag.validators:
            if not checker(flag.value):
                raise IllegalFlagValueError(f"flag --{flag.name}={flag.value}: {message}")

    # help
    def get_help(self, modules: Iterable[str] | None = None) -> str:
        """Every flag's help, grouped by the module that defined it (absl's layout)."""
        by_module: dict[str, list[Flag]] = {}
        for name, flag in sorted(self._flags.items()):
            if name == flag.name and (modules is None or flag.module in modules):
                by_module.setdefault(flag.module, []).append(flag)
        return "\n".join(
            f"\n{module}:\n" + "\n".join(f.help_text() for f in flags)
            for module, flags in sorted(by_module.items())
        ).lstrip("\n")

    def main_module_help(self) -> str:
        return self.get_help(modules=[_main_module_name()])

    def __str__(self) -> str:
        return self.get_help()


FLAGS = FlagValues(implicit_parse=True)
export("app.flags.FLAGS")(FLAGS)


def _main_module_name() -> str:
    main = sys.modules.get("__main__")
    name = getattr(main, "__file__", None) or "__main__"
    return name


def _calling_module() -> str:
    """The file of the first caller outside this module (where a DEFINE_* was written)."""
    frame = inspect.currentframe()
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    if frame is None:
        return "__main__"
    if frame.f_globals.get("__name__") == "__main__":
        return _main_module_name()
    return frame.f_globals.get("__name__", "__main__")


# -- DEFINE_* -----------------------------------------------------------------------------------
@export("app.flags.DEFINE")
def DEFINE(
    parser: Callable[[Any], Any],
    name: str,
    default: Any,
    help: str,  # noqa: N802
    flag_values: FlagValues = FLAGS,
    short_name: str | None = None,
    type_name: str = "",
    boolean: bool = False,
    multi: bool = False,
) -> Flag:
    """Registers a flag parsed by `parser(text) -> value` (raising ValueError on bad text)."""
    flag = Flag(
        parser, name, default, help, short_name, boolean, type_name, multi, _calling_module()
    )
    return flag_values.register(flag)


@export("app.flags.DEFINE_string")
def DEFINE_string(
    name: str,
    default: str | None,
    help: str,  # noqa: N802
    flag_values: FlagValues = FLAGS,
    short_name: str | None = None,
) -> Flag:
    """A string flag."""
    return DEFINE(str, name, default, help, flag_values, short_name)


@export("app.flags.DEFINE_bool", "app.flags.DEFINE_boolean")
def DEFINE_boolean(
    name: str,
    default: bool | None,
    help: str,  # noqa: N802
    flag_values: FlagValues = FLAGS,
    short_name: str | None = None,
) -> Flag:
    """A boolean flag: `--name`, `--noname`, `--name=true|false|1|0|t|f`."""
    return DEFINE(_parse_bool, name, default, help, flag_values, short_name, boolean=True)


DEFINE_bool = DEFINE_boolean


@export("app.flags.DEFINE_integer")
def DEFINE_integer(
    name: str,
    default: int | None,
    help: str,  # noqa: N802
    lower_bound: int | None = None,
    upper_bound: int | None = None,
    flag_values: FlagValues = FLAGS,
    short_name: str | None = None,
) -> Flag:
    """An int flag (decimal or 0x hex), optionally bounded (inclusive)."""
    parser = _bounded(_to_int, "an integer", lower_bound, upper_bound)
    return DEFINE(parser, name, default, help, flag_values, short_name, "an integer")


@export("app.flags.DEFINE_float")
def DEFINE_float(
    name: str,
    default: float | None,
    help: str,  # noqa: N802
    lower_bound: float | None = None,
    upper_bound: float | None = None,
    flag_values: FlagValues = FLAGS,
    short_name: str | None = None,
) -> Flag:
    """A float flag, optionally bounded (inclusive)."""
    parser = _bounded(float, "a number", lower_bound, upper_bound)
    return DEFINE(parser, name, default, help, flag_values, short_name, "a number")


@export("app.flags.DEFINE_enum")
def DEFINE_enum(
    name: str,
    default: str | None,
    enum_values: Sequence[str],
    help: str,  # noqa: N802
    flag_values: FlagValues = FLAGS,
    short_name: str | None = None,
    case_sensitive: bool = True,
) -> Flag:
    """A string flag whose value must be one of `enum_values`."""
    if not enum_values:
        raise ValueError(f"DEFINE_enum {name}: enum_values cannot be empty")
    values = list(enum_values)

    def parse(text: Any) -> str:
        for v in values:
            if v == text or (not case_sensitive and v.upper() == str(text).upper()):
                return v
        raise ValueError(f"value should be one of <{'|'.join(values)}>")

    return DEFINE(
        parse, name, default, help, flag_values, short_name, f"one of <{'|'.join(values)}>"
    )


@export("app.flags.DEFINE_list")
def DEFINE_list(
    name: str,
    default: Any,
    help: str,  # noqa: N802
    flag_values: FlagValues = FLAGS,
    short_name: str | None = None,
) -> Flag:
    """A comma-separated list of strings (`--layers=a,b,c` -> ['a', 'b', 'c'])."""
    return DEFINE(_to_list, name, default, help, flag_values, short_name, "a comma separated list")


@export("app.flags.DEFINE_multi_string")
def DEFINE_multi_string(
    name: str,
    default: Any,
    help: str,  # noqa: N802
    flag_values: FlagValues = FLAGS,
    short_name: str | None = None,
) -> Flag:
    """A string flag that may be given several times; its value is the list of them."""
    return DEFINE(
        str,
        name,
        default,
        help,
        flag_values,
        short_name,
        "repeat this option to specify a list of values",
        multi=True,
    )


@export("app.flags.DEFINE_alias")
def DEFINE_alias(
    name: str,
    original_name: str,  # noqa: N802
    flag_values: FlagValues = FLAGS,
) -> Flag:
    """`--name` as another spelling of the existing flag `--original_name`."""
    if original_name not in flag_values:
        raise UnrecognizedFlagError(original_name)
    return flag_values.register(_AliasFlag(name, flag_values[original_name], _calling_module()))


# -- validation ---------------------------------------------------------------------------------
@export("app.flags.register_validator")
def register_validator(
    flag_name: str,
    checker: Callable[[Any], bool],
    message: str = "Flag validation failed",
    flag_values: FlagValues = FLAGS,
) -> None:
    """`checker(value)` must be true after every parse and every assignment."""
    if flag_name not in flag_values:
        raise KeyError(f"Flag --{flag_name} does not exist (register_validator)")
    flag_values[flag_name].validators.append((checker, message))


@export("app.flags.mark_flag_as_required")
def mark_flag_as_required(flag_name: str, flag_values: FlagValues = FLAGS) -> None:
    """Parsing fails unless the flag ends up with a value other than None."""
    register_validator(
        flag_name,
        lambda value: value is not None,
        f"Flag --{flag_name} must have a value other than None.",
        flag_values,
    )


@export("app.flags.mark_flags_as_required")
def mark_flags_as_required(flag_names: Iterable[str], flag_values: FlagValues = FLAGS) -> None:
    for name in flag_names:
        mark_flag_as_required(name, flag_values)
