"""GPU observability as code: the dcgm-exporter metrics file, tested alert rules and Grafana dashboards."""
