"""Probes: each samples one signal of the target over the window."""
