"""Values: records of nodes and pods, resources, gang declarations, configuration, errors, naming, units.

The lowest package of the core: plain data and arithmetic that every other package reads."""
