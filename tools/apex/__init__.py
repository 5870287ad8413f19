"""Ape-X measurements: the actors' and learner's rates, the replay's capacity, scale and faults."""
