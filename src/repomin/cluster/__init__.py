"""Samples on a Dask cluster (``--cluster``): content-addressed tree shipping, a worker-side
blob cache, fault handling and the worker environment check. See ARCHITECTURE.md, "Running
samples on a cluster"."""
