"""`IntegerLookup`: integer tokens to contiguous vocabulary indices, or back (Keras 3's
`integer_lookup.py` over `index_lookup.py`).

The index space is Keras's: in "int" mode the mask token (if any) is index 0, then
`num_oov_indices` out-of-vocabulary indices, then the vocabulary in order; in the other modes
the mask token has no index (masked inputs encode as zeros). An OOV token goes to the one OOV
index, or with several to `token % num_oov_indices` ("floormod"). The lookup is graph code:
each input is compared with the vocabulary (memory grows with inputs x vocabulary size, fine
for the vocabularies of tabular features). The vocabulary is Python state: it is saved in the
layer's config (with `vocabulary_size`), and the TF-IDF weights likewise.
"""

from __future__ import annotations

import collections
import os
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras import config as keras_config
from sluice._keras.layers.base import Layer
from sluice._keras.layers.preprocessing import adapt_data, encoding
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.control import assert_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops

_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")


@export("layers.IntegerLookup")
class IntegerLookup(Layer):
    """Maps integer tokens to indices of a vocabulary given (`vocabulary`: a list, an array or
    a text file of one token per line) or learned by `adapt` (tokens by decreasing frequency,
    ties by decreasing token, at most `max_tokens` indices in all), and encodes them by
    `output_mode` (see the module docstring for the index layout).

    Args:
      max_tokens: the largest vocabulary, special indices included (adapt, pad_to_max_tokens).
      num_oov_indices: out-of-vocabulary indices (0: an OOV input is an error).
      mask_token: the token that means "masked" (None: none).
      oov_token: what `invert=True` returns for an index without a token (default -1).
      vocabulary: the vocabulary; then `adapt` is refused.
      vocabulary_dtype: "int64" (the only one, as Keras).
      idf_weights: the TF-IDF weights of the vocabulary ("tf_idf" only).
      invert: map indices back to tokens ("int" mode only).
      output_mode: "int" (int64 indices), "one_hot", "multi_hot", "count" or "tf_idf"
        (floatx() vectors).
      pad_to_max_tokens: encode to `max_tokens` entries whatever the vocabulary size.
      sparse: must be False.
      oov_method: "floormod" ("farmhash" is not supported: it hashes with TF's FarmHash64).

    >>> layer = sl.layers.IntegerLookup(vocabulary=[12, 36, 1138, 42])
    >>> np.asarray(layer(np.array([[12, 1138, 42], [42, 1000, 36]]))).tolist()
    [[1, 3, 4], [4, 0, 2]]
    """

    def __init__(
        self,
        max_tokens: int | None = None,
        num_oov_indices: int = 1,
        mask_token: int | None = None,
        oov_token: int = -1,
        vocabulary: Any = None,
        vocabulary_dtype: str = "int64",
        idf_weights: Any = None,
        invert: bool = False,
        output_mode: str = "int",
        sparse: bool = False,
        pad_to_max_tokens: bool = False,
        oov_method: str = "floormod",
        salt: Any = None,
        name: str | None = None,
        **kwargs: Any,
    ):
        vocabulary_size = kwargs.pop("vocabulary_size", None)
        kwargs.pop("has_input_vocabulary", None)
        super().__init__(name=name, **kwargs)
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError(
                "If `max_tokens` is set for `IntegerLookup`, it must be greater than 1. "
                f"Received: max_tokens={max_tokens}"
            )
        if num_oov_indices < 0:
            raise ValueError(
                "The value of `num_oov_indices` argument for `IntegerLookup` must >= 0. "
                f"Received: num_oov_indices={num_oov_indices}"
            )
        if vocabulary_dtype != "int64":
            raise ValueError(
                "Only `vocabulary_dtype='int64'` is supported at this time. Received: "
                f"vocabulary_dtype={vocabulary_dtype}"
            )
        encoding.check_output_mode("IntegerLookup", output_mode, _MODES)
        if sparse:
            raise ValueError("IntegerLookup: `sparse=True` is not supported (no sparse tensors).")
        if invert and output_mode != "int":
            raise ValueError(
                "`output_mode` must be `'int'` when `invert` is true. Received: "
                f"output_mode={output_mode}"
            )
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError(
                "If pad_to_max_tokens is True, must set `max_tokens`. Received: "
                f"max_tokens={max_tokens}"
            )
        if idf_weights is not None and output_mode != "tf_idf":
            raise ValueError(
                "`idf_weights` should only be set if `output_mode` is `'tf_idf'`. Received: "
                f"idf_weights={idf_weights} and output_mode={output_mode}"
            )
        if oov_method != "floormod":
            raise NotImplementedError(
                "IntegerLookup: only oov_method='floormod' is supported (Keras's 'farmhash' "
                "hashes with TensorFlow's FarmHash64)."
            )
        self.max_tokens = max_tokens
        self.num_oov_indices = int(num_oov_indices)
        self.mask_token = mask_token
        self.oov_token = oov_token
        self.vocabulary_dtype = vocabulary_dtype
        self.invert = bool(invert)
        self.output_mode = output_mode
        self.sparse = False
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self.oov_method = oov_method
        self.salt = salt
        self.input_vocabulary = None if isinstance(vocabulary, str) else vocabulary
        self.input_idf_weights = idf_weights
        self._has_input_vocabulary = vocabulary is not None
        self._tokens: np.ndarray | None = None
        self.idf_weights: np.ndarray | None = None
        self._frozen_vocab_size = vocabulary_size
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # -- the index space --------------------------------------------------------------------
    def _oov_start_index(self) -> int:
        return 1 if self.mask_token is not None and self.output_mode == "int" else 0

    def _token_start_index(self) -> int:
        return self._oov_start_index() + self.num_oov_indices

    def vocabulary_size(self) -> int:
        """The size of the vocabulary, mask and OOV indices included."""
        tokens = 0 if self._tokens is None else len(self._tokens)
        return tokens + self._token_start_index()

    def get_vocabulary(self, include_special_tokens: bool = True) -> list:
        """The vocabulary by index (with the mask and OOV tokens first, unless
        `include_special_tokens=False`)."""
        tokens = [] if self._tokens is None else self._tokens.tolist()
        if not include_special_tokens:
            return tokens
        special = [self.mask_token] * self._oov_start_index()
        return special + [self.oov_token] * self.num_oov_indices + tokens

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        """Sets the vocabulary (a list, an array or a text file of one token per line), with
        the mask and OOV tokens at its start or not at all, and the TF-IDF weights."""
        if self.output_mode == "tf_idf" and idf_weights is None:
            raise ValueError("`idf_weights` must be set if output_mode is 'tf_idf'.")
        if self.output_mode != "tf_idf" and idf_weights is not None:
            raise ValueError(
                "`idf_weights` should only be set if output_mode is `'tf_idf'`. Received: "
                f"output_mode={self.output_mode} and idf_weights={idf_weights}"
            )
        if isinstance(vocabulary, str):
            if not os.path.exists(vocabulary):
                raise ValueError(f"Vocabulary file {vocabulary} does not exist.")
            if self.output_mode == "tf_idf":
                raise ValueError(
                    "output_mode `'tf_idf'` does not support loading a vocabulary from file."
                )
            with open(vocabulary) as f:
                vocabulary = [int(line) for line in f.read().splitlines() if line.strip()]
        vocabulary = np.asarray(vocabulary, dtype=np.int64).reshape(-1)
        if vocabulary.size == 0:
            raise ValueError(f"Cannot set an empty vocabulary. Received: vocabulary={vocabulary}")
        token_start = self._token_start_index()
        special = self.get_vocabulary()[:token_start]
        found_special = vocabulary[:token_start].tolist() == special
        tokens = vocabulary[token_start:] if found_special else vocabulary
        repeated = [t for t, n in collections.Counter(tokens.tolist()).items() if n > 1]
        if repeated:
            raise ValueError(
                "The passed vocabulary has at least one repeated term. Please uniquify your "
                f"dataset. The repeated terms are: {repeated}"
            )
        if self.mask_token is not None and self.mask_token in tokens:
            raise ValueError(
                "Found reserved mask token at unexpected location in `vocabulary`. Note that "
                "passed `vocabulary` does not need to include the OOV and mask tokens. Either "
                "remove all mask and OOV tokens, or include them only at the start of the "
                f"vocabulary in precisely this order: {special}. Received: "
                f"mask_token={self.mask_token}"
            )
        if self.invert and self.oov_token is not None and self.oov_token in tokens:
            raise ValueError(
                "Found reserved OOV token at unexpected location in `vocabulary`. Either "
                "remove all mask and OOV tokens, or include them only at the start of the "
                f"vocabulary in precisely this order: {special}. Received: "
                f"oov_token={self.oov_token}"
            )
        if self.max_tokens is not None and token_start + len(tokens) > self.max_tokens:
            raise ValueError(
                "Attempted to set a vocabulary larger than the maximum vocab size. Received "
                f"vocabulary size is {token_start + len(tokens)}; `max_tokens` is "
                f"{self.max_tokens}."
            )
        self._tokens = np.asarray(tokens, np.int64)
        if self.output_mode == "tf_idf":
            weights = np.asarray(idf_weights, np.float64).reshape(-1)
            if len(weights) != len(vocabulary):
                raise ValueError(
                    "`idf_weights` must be the same length as vocabulary. len(idf_weights) is "
                    f"{len(weights)}; len(vocabulary) is {len(vocabulary)}"
                )
            front = 0 if found_special else token_start
            self.idf_weights = self._padded_idf(weights, front, float(np.average(weights)))
        self._record_vocabulary_size()

    def _padded_idf(self, weights: np.ndarray, front: int, front_value: float) -> np.ndarray:
        back = 0
        if self.pad_to_max_tokens and self.max_tokens is not None:
            back = self.max_tokens - front - len(weights)
        padded = np.pad(weights, (front, back), constant_values=(front_value, 0.0))
        return padded.astype(keras_config.floatx())

    def _record_vocabulary_size(self) -> None:
        size = self.vocabulary_size()
        if (
            self.output_mode != "int"
            and not self.pad_to_max_tokens
            and self.built
            and self._frozen_vocab_size not in (None, size)
        ):
            raise RuntimeError(
                f"When using `output_mode={self.output_mode}` and `pad_to_max_tokens=False`, "
                "the vocabulary size cannot be changed after the layer is called. Old vocab "
                f"size is {self._frozen_vocab_size}, new vocab size is {size}"
            )
        self._frozen_vocab_size = size

    # -- adapt ------------------------------------------------------------------------------
    def adapt(self, data: Any, steps: int | None = None) -> None:
        """Learns the vocabulary from the tokens of `data` (an array: one batch whose rows are
        documents; a `sl.data` dataset, a `PyDataset` or an iterable of batches)."""
        if self._has_input_vocabulary:
            raise ValueError(
                f"Cannot adapt layer '{self.name}' after setting a static vocabulary via "
                "`vocabulary` argument or `set_vocabulary()` method."
            )
        counts: collections.Counter = collections.Counter()
        document_counts: collections.Counter = collections.Counter()
        documents = 0
        for batch in adapt_data.batches(data, steps, f"{self.name}.adapt"):
            batch = np.asarray(batch, np.int64)
            if batch.ndim == 0:
                batch = batch[None]
            if batch.ndim == 1:
                batch = batch[None] if not adapt_data.is_single_array(data) else batch[:, None]
            counts.update(batch.reshape(-1).tolist())
            if self.output_mode == "tf_idf":
                for document in batch.reshape(batch.shape[0], -1):
                    document_counts.update(set(document.tolist()))
                documents += batch.shape[0]
        for special in (self.mask_token, self.oov_token):
            counts.pop(special, None)
        tokens = np.array(list(counts), np.int64)
        frequencies = np.array([counts[t] for t in tokens.tolist()], np.int64)
        order = np.lexsort((tokens, frequencies))[::-1]  # by count, ties by token, decreasing
        if self.max_tokens:
            order = order[: self.max_tokens - self._token_start_index()]
        self._tokens = tokens[order]
        if self.output_mode == "tf_idf":
            in_docs = np.array([document_counts[t] for t in self._tokens.tolist()], np.float64)
            idf = np.log(1 + documents / (1 + in_docs))
            self.idf_weights = self._padded_idf(idf, self._token_start_index(), float(idf.mean()))
        self._record_vocabulary_size()

    # -- the call ---------------------------------------------------------------------------
    def _depth(self) -> int:
        if self.pad_to_max_tokens:
            return int(self.max_tokens)
        if self._frozen_vocab_size is None:
            raise RuntimeError(
                f"When using `output_mode={self.output_mode}` and `pad_to_max_tokens=False`, "
                "you must set the layer's vocabulary before calling it. Either pass a "
                "`vocabulary` argument to the layer, or call `adapt` with some sample data."
            )
        return int(self._frozen_vocab_size)

    def call(self, inputs: Any) -> Any:
        x = core_ops.convert_to_tensor(inputs)
        if not dtypes.is_integer(x.dtype):
            raise TypeError(
                f"IntegerLookup {self.name!r}: inputs must be integers, got {x.dtype.name}."
            )
        x = fill_ops.cast(x, dtypes.int64)
        if self.invert:
            return self._tokens_of(x)
        indices = self._indices_of(x)
        if self.output_mode == "int":
            return indices
        depth = self._depth()
        mode = "count" if self.output_mode == "tf_idf" else self.output_mode
        out = encoding.encode_categorical_inputs(indices, mode, depth, keras_config.floatx())
        if self.output_mode == "tf_idf":
            out = out * core_ops.constant(self.idf_weights)
        return out

    def _vocabulary_tensor(self) -> Any:
        if self._tokens is None:
            raise RuntimeError(
                f"IntegerLookup {self.name!r} has no vocabulary: pass `vocabulary` or call "
                "`adapt` first."
            )
        return core_ops.constant(self._tokens)

    def _indices_of(self, x: Any) -> Any:
        """int64 indices of int64 tokens (the module docstring's layout)."""
        tokens = self._vocabulary_tensor()
        matches = math_ops.equal(array_ops.expand_dims(x, -1), tokens)
        found = reduction_ops.reduce_any(matches, -1)
        position = reduction_ops.argmax(
            fill_ops.cast(matches, dtypes.int32), -1, output_type=dtypes.int64
        )
        start = self._token_start_index()
        indices = position + core_ops.constant(start, dtypes.int64)
        if self.num_oov_indices == 1:
            oov = fill_ops.fill(fill_ops.shape(x), core_ops.constant(start - 1, dtypes.int64))
        elif self.num_oov_indices > 1:
            oov = math_ops.floormod(x, core_ops.constant(self.num_oov_indices, dtypes.int64))
            oov = oov + core_ops.constant(self._oov_start_index(), dtypes.int64)
        else:
            check = assert_ops.Assert(
                reduction_ops.reduce_all(found),
                ["When `num_oov_indices=0` all inputs should be in vocabulary, found OOV "
                 "values", x],
            )  # fmt: skip
            with x.graph.control_dependencies([check]):
                oov = fill_ops.fill(fill_ops.shape(x), core_ops.constant(-1, dtypes.int64))
        indices = gather_ops.where_v2(found, indices, oov)
        if self.mask_token is not None:
            mask_value = 0 if self.output_mode == "int" else np.iinfo(np.int64).max
            is_mask = math_ops.equal(x, core_ops.constant(self.mask_token, dtypes.int64))
            indices = gather_ops.where_v2(
                is_mask, fill_ops.fill(fill_ops.shape(x), np.int64(mask_value)), indices
            )
        return indices

    def _tokens_of(self, indices: Any) -> Any:
        """Tokens of int64 indices: the vocabulary by index, `oov_token` for the OOV indices and
        any index outside it, `mask_token` for index 0 when there is one."""
        self._vocabulary_tensor()
        table = np.asarray(
            [self.oov_token if t is None else t for t in self.get_vocabulary()], np.int64
        )
        inside = math_ops.logical_and(
            math_ops.greater_equal(indices, np.int64(0)),
            math_ops.less(indices, np.int64(len(table))),
        )
        safe = gather_ops.where_v2(inside, indices, fill_ops.zeros_like(indices))
        looked_up = gather_ops.gather(core_ops.constant(table), safe)
        oov = fill_ops.fill(fill_ops.shape(indices), np.int64(self.oov_token))
        return gather_ops.where_v2(inside, looked_up, oov)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        if self.output_mode == "int":
            return tuple(input_shape)
        return encoding.encoded_shape(
            input_shape,
            "count" if self.output_mode == "tf_idf" else self.output_mode,
            self._depth(),
        )

    def get_config(self) -> dict:
        def plain(value: Any) -> Any:
            return None if value is None else np.asarray(value).tolist()

        vocabulary = self.input_vocabulary
        if vocabulary is None and self._tokens is not None:
            vocabulary = self.get_vocabulary()  # learned by adapt: kept in the config
        idf = self.input_idf_weights
        if idf is None and self.output_mode == "tf_idf" and self.idf_weights is not None:
            idf = self.idf_weights
        return {
            **super().get_config(),
            "invert": self.invert,
            "max_tokens": self.max_tokens,
            "num_oov_indices": self.num_oov_indices,
            "oov_token": self.oov_token,
            "mask_token": self.mask_token,
            "output_mode": self.output_mode,
            "sparse": self.sparse,
            "pad_to_max_tokens": self.pad_to_max_tokens,
            "vocabulary_dtype": self.vocabulary_dtype,
            "idf_weights": plain(idf),
            "vocabulary": plain(vocabulary),
            "vocabulary_size": self._frozen_vocab_size,
            "oov_method": self.oov_method,
            "salt": self.salt,
        }
