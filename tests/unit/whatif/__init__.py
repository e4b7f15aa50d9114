"""Unit tests of gangsched.whatif: the what-if engine, its baselines, inputs, metrics and speed model."""
