"""Human preferences from a few human labels and a judge's verdicts on every pair:
PPI++ estimates of win rates and of the Bradley–Terry board, rank sets with joint coverage,
and selective judging with a guaranteed agreement with people (``docs/people.md``)."""
