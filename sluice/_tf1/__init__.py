"""TF1's namespaces' implementation: cells, checkpoints, tf.data, queues, summaries,
training loops, contrib, ... The public namespaces (`sluice.nn.rnn_cell`, `sluice.train`,
`sluice.data`, ...) re-export it."""
