"""Core layers: Dense, Embedding, Lambda, Masking, InputLayer and Input (Keras 3's
`layers/core`)."""
