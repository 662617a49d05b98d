"""Leaderboards from judgments: Bradley–Terry/Davidson ratings with cluster-bootstrap
intervals per (benchmark, judge, strategy, order view), rank flips between views, style and
length control, and the gold board from gold labels (``docs/ranking.md``)."""
