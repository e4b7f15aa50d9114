"""Queueing hints: whether a backed-off unit could progress now, without attempting it.

`cannot_progress` answers from the capacity freed since the gang backed off, what it would fit on empty nodes, and
what it could reach with every lower-priority pod gone (memos kept between cycles in the Plan's bookkeeping).
"""

from gangsched.core.hints.queue_hints import cannot_progress
from gangsched.core.hints.reach import reach_fits

__all__ = ["cannot_progress", "reach_fits"]
