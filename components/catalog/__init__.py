"""Pure facts and pure functions about GPUs, drivers, clouds and charts.

Nothing in this package imports Pulumi: the config model, the components and the CrossGuard
policies all read the same facts from here, so each fact is written once.
"""
