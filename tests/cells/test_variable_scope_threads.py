"""Each thread has its own variable and name scopes, as TF1 (issue 25): a variable another
thread creates is not named after the scopes the main thread is in (names reach checkpoints)."""

import threading

import sluice as sl


def test_a_variable_made_by_another_thread_ignores_the_main_threads_scopes():
    names = {}

    def build():
        names["get_variable"] = sl.get_variable("v", [2]).name
        names["Variable"] = sl.Variable(1.0, name="w").name
        names["const"] = sl.constant(1.0, name="c").op.name
        with sl.variable_scope("worker"):
            names["nested"] = sl.get_variable("u", [1]).name

    graph = sl.get_default_graph()
    with sl.variable_scope("main"), sl.name_scope("ops"):
        thread = threading.Thread(target=_in_graph(graph, build))
        thread.start()
        thread.join()
        mine = sl.get_variable("v", [2]).name
    assert names == {"get_variable": "v:0", "Variable": "w:0", "const": "c", "nested": "worker/u:0"}
    assert mine == "main/v:0"  # the shared store sees both, with no clash


def _in_graph(graph, fn):
    def run():
        with graph.as_default():
            fn()

    return run
