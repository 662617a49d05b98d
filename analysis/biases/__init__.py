"""Biases beyond position (CALM): robustness, consistency and directional effects of the
perturbations, self-enhancement, and the simulated susceptibilities.

Builds on :mod:`voirdire.analysis.position` (judgment pairs, the bootstrap).
"""
