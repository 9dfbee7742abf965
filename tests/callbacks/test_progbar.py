"""`Progbar` on a terminal: one line redrawn per step, with elapsed time, ETA and the logs."""

import io

from sluice.callbacks.progbar import Progbar


def test_progress_bar_on_a_terminal_shows_elapsed_eta_and_logs():
    stream = io.StringIO()
    bar = Progbar(4, stream=stream, dynamic=True, interval=0.0)
    for step in range(1, 5):
        bar.update(step, {"loss": 1.0 / step})
    out = stream.getvalue()
    assert out.count("\r") == 4 and out.endswith("\n")
    assert "1/4 ━━━━━" in out and "elapsed, ETA" in out and "loss: 0.5000" in out
    assert "4/4 ━━━━━━━━━━━━━━━━━━━━ " in out
