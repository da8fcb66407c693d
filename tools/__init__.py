"""Developer tools of the project (run with ``python -m tools.<name>``)."""
