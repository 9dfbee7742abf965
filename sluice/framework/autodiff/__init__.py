"""Reverse-mode autodiff: the gradient walk, control-flow gradient rules, loop state."""
