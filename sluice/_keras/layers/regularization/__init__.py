"""Regularization layers, active only in training: Dropout, SpatialDropout1D/2D, GaussianNoise."""
