"""Position bias: pairwise and list-wise metrics (PC, PF, RS, owr), their uncertainty,
the factor regression, agreement between judges, the judge simulator and token lengths.

The first stage of ``voirdire.analysis``: it imports nothing from the other stages.
"""
