"""Tests of the preview's gate wing (`preview/gate/`)."""
