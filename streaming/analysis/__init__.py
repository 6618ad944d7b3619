"""Reading what a run produced: the incident report, explain, inspect, progress."""
