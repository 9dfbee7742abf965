"""Keras 3's preprocessing layers (keras/src/layers/preprocessing/): `Normalization`,
`Discretization`, `CategoryEncoding`, `IntegerLookup`, `Hashing`, `Resizing`, `CenterCrop`,
and the image augmentation layers (`RandomFlip`, `RandomRotation`, `RandomZoom`,
`RandomTranslation`, `RandomCrop`, `RandomContrast`, `RandomBrightness`), active only in
training and drawing from a `keras.random.SeedGenerator` of their own.

`adapt_data` reads the data `adapt()` takes; `encoding` is Keras's
`encode_categorical_inputs` as graph ops. `Rescaling` lives in `layers/core/`.
"""
