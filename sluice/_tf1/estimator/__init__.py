"""TF1's `tf.estimator`: `Estimator` over a model_fn, `EstimatorSpec`, `ModeKeys`, `RunConfig`,
and the input functions of `tf.estimator.inputs`."""
