"""An optimizer updating the same variables again in one graph (a training step traced anew,
or TF1's minimize called twice) keeps one state for them, as TF1 keeps one slot per variable."""

import numpy as np

import sluice as sl


def test_a_second_update_of_the_same_variables_shares_their_state():
    with sl.Graph().as_default():
        v = sl.Variable(np.ones(2, np.float32))
        loss = sl.reduce_sum(v * v)
        opt = sl.optimizers.Adam(0.1)
        first, second = opt.minimize(loss, var_list=[v]), opt.minimize(loss, var_list=[v])
        assert len(opt.variables()) == 3  # mu, nu and the step count, once
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            sess.run(first)
            after_one = sess.run(v)
            sess.run(second)  # Adam's second step: it sees the first step's moments
            after_two = sess.run(v)
    reference = sl.optimizers.Adam(0.1)
    with sl.Graph().as_default():
        w = sl.Variable(np.ones(2, np.float32))
        step = reference.minimize(sl.reduce_sum(w * w), var_list=[w])
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            sess.run(step)
            np.testing.assert_allclose(sess.run(w), after_one)
            sess.run(step)
            np.testing.assert_allclose(sess.run(w), after_two)
