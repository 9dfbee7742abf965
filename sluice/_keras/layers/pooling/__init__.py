"""Pooling layers: max and average pooling over windows, and global pooling (1-D and 2-D)."""
