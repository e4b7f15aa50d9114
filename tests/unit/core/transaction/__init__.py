"""Unit tests of core/transaction: a cycle's session, plan and undo."""
