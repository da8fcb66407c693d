"""gpu-platform components: one ComponentResource per capability, fed by the typed stack config."""
