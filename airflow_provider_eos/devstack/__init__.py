"""The embedded default: a local single-node Kafka (KRaft) and the JVM jars, resolved by Maven."""
