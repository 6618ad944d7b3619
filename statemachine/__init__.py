"""isrflow's core: Kafka's controller state machines and elections as plain, deterministic Python.

No Spark here. The local replay engine, the Spark sequencer and the Spark partition operator all run
this same code.
"""
