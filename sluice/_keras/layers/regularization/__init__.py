"""Regularization layers, active only in training: Dropout, SpatialDropout1D/2D/3D,
GaussianNoise, GaussianDropout, AlphaDropout."""
