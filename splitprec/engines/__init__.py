"""Engines: how the public ops run on a kind of array (the numpy model, CUDA, Dask blocks)."""
