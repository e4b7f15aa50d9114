"""Unit tests of core/hints: queueing hints and the memos behind them."""
