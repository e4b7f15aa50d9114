"""Unit tests of core/records: node and pod records, scheduling classes, selectors, terms, taints."""
