"""The run core: sessions, runs, each session's queue, cancel and approvals, for every face.

`RunManager` (runs.py) is what a face calls, made of named parts (sessions, scheduling, turn
building, commit, compaction, administration, checkpointing); a face imports only api.py, the
core's facade. The core reaches its client only through a `ClientPort` (port.py) and emits
typed `RunEvent`s (events.py), never wire messages. Faces take requests in the order they
arrived (order.py) and map `errors.py` to their error codes.
"""
