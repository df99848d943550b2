"""Runnable RAG apps that use ragtrace as a user would (see docs/quickstart.md).

A regular package on purpose: pysbd, a ragtrace dependency, installs a top-level ``examples`` package
of its own, which would shadow a namespace package of this name.
"""
