"""Schemas of isrflow's records: events in; commands, state, decisions, audit and quarantine out."""
