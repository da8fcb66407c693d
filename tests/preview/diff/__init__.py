"""Tests of the preview's diff wing (`preview/diff/`): the review engine, `make diff` end to end, the reports."""
