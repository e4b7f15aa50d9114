"""Queueing hints: whether a backed-off unit could progress now, without attempting it."""
