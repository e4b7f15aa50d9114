"""Unit tests of gangsched.runtime: the operator's activity log, supervisor and bind backoff."""
