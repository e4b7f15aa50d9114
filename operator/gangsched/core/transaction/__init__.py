"""One cycle's transaction: the session over the scheduler's memory, the Plan it produces, and its messages."""
