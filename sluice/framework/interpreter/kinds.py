"""The executor's dispatch codes: which rule runs a node, and how its input tokens arrive.

kind     NORMAL, SWITCH, MERGE, ENTER, EXIT, NEXT, LOOPCOND: the whitepaper's rule for the op;
         GROUP: a fused group of pure ops; SEND, RECV: a partition's ends of a cut edge
arrival  IMMEDIATE (one input), GATHER (wait for all), LOOP_MERGE (one token per iteration),
         COND_MERGE (the first live input, or all dead), CUT (a Send, a triggered Recv or a
         control loop's NextIteration or Merge: it runs as its one token is delivered, without
         a turn in the ready queue, since all it does is hand a value to the rendezvous, ask it
         for one, or pass the token on to the next iteration or to the iteration's Recvs)
"""

NORMAL, SWITCH, MERGE, ENTER, EXIT, NEXT, LOOPCOND, GROUP, SEND, RECV = range(10)
IMMEDIATE, LOOP_MERGE, COND_MERGE, GATHER, CUT = range(5)
