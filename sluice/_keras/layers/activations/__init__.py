"""Activation layers: Activation, ReLU, LeakyReLU, PReLU, Softmax (the functions are in
sluice/_keras/activations.py)."""
