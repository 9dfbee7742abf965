"""Convolution layers: Conv1D, Conv2D, their transposes, DepthwiseConv2D, SeparableConv2D."""
