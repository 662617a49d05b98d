"""The statistics floor: the cluster bootstrap and its draws, sparse per-cluster sums,
randomisation and permutation tests, and Cohen's and Fleiss' κ. Nothing here knows a
benchmark or a judge."""
