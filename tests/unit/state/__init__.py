"""Unit tests of gangsched.state: the cache over the core (sources merged, bad input reported) and PodGroup status."""
