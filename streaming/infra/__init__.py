"""Local infrastructure: the Kafka broker, the Java jars from Maven Central, the scenario builder."""
