"""Removing position bias from finished judgments: verdict tables, the strategies (one per
module, registered by name), the reference and the evaluation table.

Builds on :mod:`voirdire.analysis.position`.
"""
