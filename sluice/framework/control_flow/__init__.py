"""Control-flow contexts and the builders that use them: cond and while_loop."""
