"""Spark glue: sources, the sequencer, the stateful operator, sinks, CLI, config."""
