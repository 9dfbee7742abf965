"""The executor's dispatch codes: which rule runs a node, and how its input tokens arrive.

kind     NORMAL, SWITCH, MERGE, ENTER, EXIT, NEXT, LOOPCOND: the whitepaper's rule for the op;
         GROUP: a fused group of pure ops; SEND, RECV: a partition's ends of a cut edge;
         CONTROL_LOOP: a partition's control loop (its Merge, Switch and NextIteration as one
         node, see `partition_nodes.ControlLoopNodes`)
arrival  IMMEDIATE (one input), GATHER (wait for all), LOOP_MERGE (one token per iteration),
         COND_MERGE (the first live input, or all dead), CUT (a Send, a triggered Recv or a
         control loop: it runs as each token is delivered, without a turn in the ready queue,
         since all it does is hand a value to the rendezvous, ask it for one, or start an
         iteration's Recvs and signal its body)
"""

NORMAL, SWITCH, MERGE, ENTER, EXIT, NEXT, LOOPCOND, GROUP, SEND, RECV, CONTROL_LOOP = range(11)
IMMEDIATE, LOOP_MERGE, COND_MERGE, GATHER, CUT = range(5)
