"""One turn of the agent: model step → tool calls → model step … → answer (turn.py).

The model stream (model.py, assembly.py: trusted in nothing), the context budget (budget.py)
and compaction (compaction.py), the history entries a turn leaves (history.py), and what a
turn emits as it goes (output.py). Below the run core; knows no client and no wire format.
"""
