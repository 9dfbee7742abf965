"""The Keras API's implementation: layers, models, callbacks, saving, losses, metrics,
optimizers, ... The public namespaces (`sluice.layers`, `sluice.models`, ...) re-export it."""
