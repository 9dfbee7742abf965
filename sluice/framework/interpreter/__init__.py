"""The interpreted engine: the whitepaper's tagged-token executor and its plan."""
