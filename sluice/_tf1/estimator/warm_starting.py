"""`WarmStartSettings` (TF1 `tf.estimator.WarmStartSettings`): start some variables of a new
model from another model's checkpoint.

An Estimator warm-starts only when its model_dir has no checkpoint yet (a checkpoint there is
the model's own state and wins). The values are read with the checkpoint reader, which
verifies each dataset's checksum, shape and dtype, and loaded into the variables after the
session initialized them (the scaffold's init_fn).
"""

from __future__ import annotations

import collections
import os
from typing import Any

from sluice._export import export
from sluice._tf1.checkpoints import reader
from sluice._tf1.training.scaffold import Scaffold
from sluice.framework.variables import Variable, global_variables, trainable_variables


@export("estimator.WarmStartSettings")
class WarmStartSettings(
    collections.namedtuple(
        "WarmStartSettings",
        [
            "ckpt_to_initialize_from",
            "vars_to_warm_start",
            "var_name_to_vocab_info",
            "var_name_to_prev_var_name",
        ],
    )
):
    """Which variables start from which checkpoint.

    Args:
      ckpt_to_initialize_from: a checkpoint file, or a directory (its latest checkpoint).
      vars_to_warm_start: a regular expression over the trainable variables' names (default
        '.*': all of them), a list of regular expressions over all global variables, a list
        of Variables, or None (none).
      var_name_to_vocab_info: must be empty (sluice has no vocabulary files).
      var_name_to_prev_var_name: {variable name in this model: its name in the checkpoint}.
    """

    def __new__(
        cls,
        ckpt_to_initialize_from: str,
        vars_to_warm_start: Any = ".*",
        var_name_to_vocab_info: dict | None = None,
        var_name_to_prev_var_name: dict | None = None,
    ) -> "WarmStartSettings":
        if not ckpt_to_initialize_from:
            raise ValueError("`ckpt_to_initialize_from` MUST be set in WarmStartSettings")
        if var_name_to_vocab_info:
            raise ValueError(
                "WarmStartSettings(var_name_to_vocab_info=...): sluice has no vocabulary "
                "files to remap; warm-start those variables by name instead."
            )
        return super().__new__(
            cls,
            os.fspath(ckpt_to_initialize_from),
            vars_to_warm_start,
            dict(var_name_to_vocab_info or {}),
            dict(var_name_to_prev_var_name or {}),
        )

    def chosen_variables(self) -> list[Variable]:
        """The variables of the default graph that vars_to_warm_start names."""
        chosen = self.vars_to_warm_start
        if chosen is None:
            return []
        if isinstance(chosen, str):
            return trainable_variables(scope=chosen)
        if all(isinstance(v, Variable) for v in chosen):
            return list(chosen)
        if all(isinstance(v, str) for v in chosen):
            found: list[Variable] = []
            for pattern in chosen:
                found += [v for v in global_variables(scope=pattern) if v not in found]
            return found
        raise ValueError(
            "vars_to_warm_start must be a regular expression, a list of them, a list of "
            f"Variables or None; got {chosen!r}."
        )

    def scaffold_with_init_fn(self, scaffold: Scaffold) -> Scaffold:
        """`scaffold` whose init_fn also loads the chosen variables from the checkpoint.

        Raises:
          ValueError: a chosen variable is not in the checkpoint, or has another shape there.
        """
        checkpoint = reader.load_checkpoint(self.ckpt_to_initialize_from)
        shapes = checkpoint.get_variable_to_shape_map()
        pairs = []
        for variable in self.chosen_variables():
            name = variable.op.name
            previous = self.var_name_to_prev_var_name.get(name, name)
            if previous not in shapes:
                raise ValueError(
                    f"Warm-starting {name}: {previous!r} is not in checkpoint "
                    f"{checkpoint.path!r}, which holds {sorted(shapes)}."
                )
            if list(variable.shape.as_list()) != shapes[previous]:
                raise ValueError(
                    f"Warm-starting {name}: its shape {variable.shape.as_list()} differs from "
                    f"{previous!r}'s {shapes[previous]} in checkpoint {checkpoint.path!r}."
                )
            pairs.append((variable, previous))
        user_init_fn = scaffold.init_fn

        def init_fn(_: Scaffold, session: Any) -> None:
            if user_init_fn is not None:
                user_init_fn(session)
            for variable, previous in pairs:
                variable.load(checkpoint.get_tensor(previous), session)

        return Scaffold(init_fn=init_fn, copy_from_scaffold=scaffold)


def warm_start_settings(warm_start_from: Any) -> WarmStartSettings | None:
    """An Estimator's warm_start_from as settings: a path means its trainable variables.

    Raises:
      ValueError: anything else than None, a path or a WarmStartSettings.
    """
    if warm_start_from is None:
        return None
    if isinstance(warm_start_from, (str, bytes, os.PathLike)):
        path = os.fsdecode(warm_start_from)
        return WarmStartSettings(ckpt_to_initialize_from=path)
    if isinstance(warm_start_from, WarmStartSettings):
        return warm_start_from
    raise ValueError(
        "warm_start_from must be a string or a WarmStartSettings, instead got "
        f"{type(warm_start_from)}"
    )
