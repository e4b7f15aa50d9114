"""The what-if simulator's inputs: node inventories (`nodes.py`), a synthetic topology for them (`topogen.py`), the
workload trace format (`traces.py`), the synthetic workload model (`synthetic.py`) and `gangsched sim record`
(`record.py`). Every reader is bounded (`files.py`) and raises `InputError` naming the file, line, column, value and
what is allowed. docs/whatif.md documents the formats and the model.
"""
