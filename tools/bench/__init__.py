"""Benchmarks of the PAAC training loop and its parts: frames/s, precision, the TF-Agents
baseline, interleaved runs of two checkouts."""
