"""Tests of the preview's render wing (`preview/render/`)."""
