"""Unit tests of core/cycle: whole cycles through the scheduler (bind backoff, reservations re-checked, properties)."""
