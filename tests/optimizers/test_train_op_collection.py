"""`apply_gradients` and `minimize` add their op to GraphKeys.TRAIN_OP, as TF1 (issue 25)."""

import sluice as sl


def test_minimize_and_apply_gradients_fill_the_train_op_collection():
    x = sl.Variable(1.0)
    step = sl.train.get_or_create_global_step()
    first = sl.train.GradientDescentOptimizer(0.1).minimize(x * x, global_step=step)
    opt = sl.train.AdamOptimizer(0.1)
    second = opt.apply_gradients(opt.compute_gradients(x * x))
    assert sl.GraphKeys.TRAIN_OP == "train_op"
    assert sl.get_collection(sl.GraphKeys.TRAIN_OP) == [first, second]
    assert first.name.endswith("increment_global_step")  # the op minimize returned
