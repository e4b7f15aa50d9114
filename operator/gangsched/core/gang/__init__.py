"""Gang rules: quorum, Strict/NonStrict, gang groups, readiness, partial gangs, deadlocks, starvation, health."""
