"""Recurrent layers: the Keras cells, RNN, SimpleRNN/LSTM/GRU, StackedRNNCells, Bidirectional,
TimeDistributed, and the time loop and states they share."""
