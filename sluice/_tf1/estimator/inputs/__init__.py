"""TF1's `tf.estimator.inputs`: input functions over in-memory arrays."""
