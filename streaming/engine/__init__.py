"""The Spark engine (sources, sequencer, partition query, sinks, session) and the in-process local engine."""
