"""The day-two model: what `pulumi up` does to a deployed stack, step by step, and whether the cloud it leaves holds
(docs/design.md#the-day-two-model). forcing.py reads each cloud's replacement facts, engine.py takes the engine's
steps, cloud.py carries them out and checks the invariants after each."""
