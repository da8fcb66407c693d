"""The rollout controller: every cluster-side decision, level-triggered, one leader at a time."""
