"""Queueing hints: whether a backed-off unit could progress now, without attempting it.

`queue_skip` answers from the capacity freed since the gang backed off, what it would fit on empty nodes, and
what it could reach with every lower-priority pod gone (memos kept between cycles in the Plan's bookkeeping).
"""

from gangsched.core.hints.queue_hints import queue_skip
from gangsched.core.hints.reach import reach_fits

__all__ = ["queue_skip", "reach_fits"]
