"""The platforms a stack's GPU nodes come from, behind one interface (``base.GpuPlatform``), picked by name."""
