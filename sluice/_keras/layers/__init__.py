"""The Keras layers behind the public `sluice.layers` (each public name is declared on its
definition with `@export`), by family as Keras 3 lays them out
(keras/src/layers/): `core/`, `convolutional/`, `pooling/`, `rnn/`, `normalization/`,
`merging/`, `attention/`, `reshaping/`, `regularization/`, `activations/`.

Here at the top, the machinery every layer shares: `base` (Layer and its weights), `tracking`
(the functional-API graph of calls), `runtime` (values of weights outside a session),
`value_calls` (layers called on NumPy values), `graph_op_layer` and `keras_operations` (graph
ops and Keras operations replayed as layers) and `arguments` (argument checks).
"""
