"""Internals of the rule-based extractor; the public API is :mod:`hello_memory.language.extraction`."""
