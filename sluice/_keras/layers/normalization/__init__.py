"""Normalization layers: BatchNormalization, LayerNormalization."""
