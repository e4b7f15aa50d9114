"""Unit tests of gangsched.plugin: what `kubectl gang` computes."""
