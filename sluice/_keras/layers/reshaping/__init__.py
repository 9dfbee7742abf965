"""Reshaping layers: Flatten, Reshape, Permute, RepeatVector, UpSampling, ZeroPadding, Cropping."""
