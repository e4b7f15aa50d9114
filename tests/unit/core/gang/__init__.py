"""Unit tests of core/gang: gang rules, groups, incarnations, health, partial gangs, deadlock, starvation."""
