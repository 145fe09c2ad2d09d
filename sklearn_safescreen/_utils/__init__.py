"""Helpers with no knowledge of any problem: fingerprints, memory, warnings."""
