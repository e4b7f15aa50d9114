"""The scheduling cycle: `schedule(state, now, config) -> Plan`, its recheck and timers, and a pure driver."""
