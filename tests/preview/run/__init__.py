"""Tests of the preview's run wing (`preview/run/`)."""
